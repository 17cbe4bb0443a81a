// Choosing an agent or a scenario among however many are stored: the server finds the names
// holding what is typed (nameContains, codenameContains), a page at a time. `choiceBox` is a
// text box with a list of matches (WAI-ARIA's combobox pattern: arrows move through the
// matches, Enter picks one, Escape puts the current choice back); the start form's lists use
// the finders with checkboxes and radios of their own.

import { h } from "./dom.js";

/** Matches shown at once: more than that, and typing more of the name narrows them. */
export const MATCHES = 50;
/** The longest text the server searches for (nameContains, codenameContains). */
export const LONGEST = 100;
const TYPING_PAUSE_MS = 150;

/** Finds agents by name: {items: [{id, text, agent}], more}, `order` along their ids. */
export function agentFinder(api, order = "DESCENDING", first = MATCHES) {
  return async (text) => {
    const found = (await api.request("AgentSearch", { text: text || null, first, order })).agents;
    return { items: found.nodes.map((a) => ({ id: a.id, text: a.name, agent: a })), more: found.pageInfo.hasNextPage };
  };
}

/** Finds scenarios by codename: {items: [{id, text, scenario}], more}. */
export function scenarioFinder(api, order = "DESCENDING", first = MATCHES) {
  return async (text) => {
    const found = (await api.request("ScenarioSearch", { text: text || null, first, order })).scenarios;
    const items = found.nodes.map((s) => ({ id: s.id, text: s.codename || s.id, scenario: s }));
    return { items, more: found.pageInfo.hasNextPage };
  };
}

/** The agent an address names, as a choice: its name, or its id when it is gone. */
export async function agentChoice(api, id) {
  if (!id) return null;
  const agent = (await api.request("AgentChoice", { id })).agent;
  return { id, text: agent ? agent.name : id };
}

/** The scenario an address names, as a choice: its codename, or its id. */
export async function scenarioChoice(api, id) {
  if (!id) return null;
  const scenario = (await api.request("ScenarioChoice", { id })).scenario;
  return { id, text: (scenario && scenario.codename) || id };
}

/** What a finder's answer says beyond its items, for the status line under a list. */
export function foundWords({ items, more }, noun) {
  if (!items.length) return `No ${noun} matches.`;
  const shown = `${items.length} ${items.length === 1 ? noun : noun + "s"}`;
  return more ? `The first ${shown}: type more of a name to narrow them.` : `${shown} found.`;
}

/** Calls `find` after a pause in typing; only the latest answer reaches `show`. */
export function searcher(find, show, fail) {
  let timer = null;
  let latest = 0;
  return (text, now = false) => {
    clearTimeout(timer);
    const run = async () => {
      const asked = ++latest;
      try {
        const found = await find(text.trim());
        if (asked === latest) show(found);
      } catch (error) {
        if (asked === latest) fail(error);
      }
    };
    timer = setTimeout(run, now ? 0 : TYPING_PAUSE_MS);
  };
}

/**
 * A labelled text box that finds records as their name is typed. The chosen id is the value of
 * a hidden input named `name`, which fires a bubbling "change" when another is picked.
 * `current` ({id, text} or null) stays chosen until another is picked; with `none` (a filter's
 * "any"), that option comes first and clearing the box picks it.
 */
export function choiceBox({ id, name, label, current, find, noun, none = null }) {
  const value = h("input", { type: "hidden", name, value: current ? current.id : "" });
  const listId = `${id}-list`;
  const box = h("input", {
    id,
    type: "text",
    role: "combobox",
    autocomplete: "off",
    spellcheck: "false",
    "aria-autocomplete": "list",
    "aria-expanded": "false",
    "aria-controls": listId,
    "aria-describedby": `${id}-status`,
    maxlength: LONGEST,
    placeholder: none || "Type a name",
    value: current ? current.text : "",
  });
  const list = h("ul", { id: listId, role: "listbox", class: "choice-list", "aria-label": "Matches", hidden: true });
  const status = h("p", { id: `${id}-status`, class: "visually-hidden", role: "status" });
  let chosen = current;
  let options = [];
  let active = -1;
  // Opened on the current choice, the list shows every name: typing narrows it.
  const typed = () => (chosen && box.value === chosen.text ? "" : box.value);

  const setActive = (index) => {
    active = options.length ? (index + options.length) % options.length : -1;
    for (const [i, li] of [...list.children].entries()) li.setAttribute("aria-selected", String(i === active));
    if (active < 0) box.removeAttribute("aria-activedescendant");
    else {
      box.setAttribute("aria-activedescendant", `${id}-option-${active}`);
      list.children[active].scrollIntoView({ block: "nearest" });
    }
  };
  const open = (isOpen) => {
    list.hidden = !isOpen;
    box.setAttribute("aria-expanded", String(isOpen));
    if (!isOpen) setActive(-1);
  };
  const pick = (option) => {
    const changed = (chosen ? chosen.id : "") !== option.id;
    chosen = option.id ? option : null;
    value.value = option.id;
    box.value = option.id ? option.text : "";
    open(false);
    if (changed) value.dispatchEvent(new Event("change", { bubbles: true }));
  };
  const show = (found) => {
    options = [...(none ? [{ id: "", text: none }] : []), ...found.items];
    list.replaceChildren(
      ...options.map((option, i) => {
        const li = h("li", { id: `${id}-option-${i}`, role: "option", "aria-selected": "false", dataset: { id: option.id } }, option.text);
        li.addEventListener("mousedown", (event) => event.preventDefault()); // the box keeps focus
        li.addEventListener("click", () => pick(option));
        return li;
      }),
    );
    status.textContent = foundWords(found, noun);
    if (!found.items.length) list.append(h("li", { class: "choice-empty", role: "presentation" }, status.textContent));
    if (found.more) list.append(h("li", { class: "choice-more", role: "presentation" }, status.textContent));
    if (document.activeElement === box) {
      open(true);
      setActive(typed().trim() && found.items.length ? (none ? 1 : 0) : -1);
    }
  };
  const search = searcher(find, show, (error) => {
    status.textContent = error.message;
    options = [];
    list.replaceChildren(h("li", { class: "choice-empty", role: "presentation" }, error.message));
    open(document.activeElement === box);
  });

  box.addEventListener("focus", () => box.select());
  box.addEventListener("input", () => {
    setActive(-1); // until the answer to what is typed now: Enter picks nothing older
    search(box.value);
  });
  box.addEventListener("click", () => list.hidden && search(typed(), true));
  box.addEventListener("keydown", (event) => {
    const shown = !list.hidden;
    if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      event.preventDefault();
      if (!shown) return search(typed(), true);
      setActive(active + (event.key === "ArrowDown" ? 1 : -1));
    } else if (event.key === "Enter" && shown && active >= 0) {
      event.preventDefault(); // picks; the form is not sent
      pick(options[active]);
    } else if (event.key === "Escape" && shown) {
      event.preventDefault();
      open(false);
      box.value = chosen ? chosen.text : "";
    }
  });
  box.addEventListener("blur", () => {
    open(false);
    if (none && !box.value.trim()) pick({ id: "", text: none });
    else box.value = chosen ? chosen.text : "";
  });
  return h("div", { class: "field choice", dataset: { field: name } }, h("label", { for: id }, label), box, value, list, status);
}
