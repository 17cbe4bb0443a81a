// A rater's page: one episode at a time, blind (the situation, who is who and the whole
// conversation; never the models, the judge's scores or its reasoning), in the rater's own order,
// with the rubric to score each agent on and a box for the reasoning. What is typed is kept as a
// draft (a moment after typing stops) and each rating is saved as the rater goes, so that a
// reload, or the link opened on another device, goes on where the rater stopped. The rater token
// comes in the address once and is then kept for this browser tab; it is sent as the raterToken
// argument and, where the tab has no API token, as the `Rater` credentials that allow only these
// operations.

import { h, routeLink, words } from "../dom.js";
import { goalView } from "../goal.js";
import { environmentItem, turnItem } from "./transcript.js";

export const RATE_ROUTE = /^\/rate\/([^/]+)\/(\d+)$/;
const DRAFT_DELAY_MS = 800;
const REASONING_MAX = 5000; // the server's limit (core/limits.py REASONING_MAX)
const tokenKey = (study, rater) => `parley-rater:${study}:${rater}`;

/** The address of a rater's page; with a token, it hands the token over once. */
export function rateLink(study, rater, token = null, at = null) {
  const params = { token, at: at === null || at === undefined ? null : String(at) };
  return routeLink(`/rate/${encodeURIComponent(study)}/${rater}`, params);
}

/** On a rater's page, its token (taken out of the address); elsewhere null. */
export function raterTokenOf(path, query) {
  const match = RATE_ROUTE.exec(path);
  if (!match) return null;
  const study = decodeURIComponent(match[1]);
  const rater = Number(match[2]);
  const given = query.get("token");
  if (given) {
    sessionStorage.setItem(tokenKey(study, rater), given);
    history.replaceState(null, "", rateLink(study, rater, null, query.get("at"))); // no token left in the address
    return given;
  }
  return sessionStorage.getItem(tokenKey(study, rater));
}

const INVALID =
  "This link does not open a rating: the study may be closed, or the link replaced by a new one, or not the whole one you were given.";

function tokenForm(study, rater, message) {
  const input = h("input", { id: "rater-token", name: "rater-token", type: "password", autocomplete: "off", required: true });
  const form = h(
    "form",
    { class: "token-form rater-token-form", "aria-labelledby": "rater-token-title" },
    h("h2", { id: "rater-token-title" }, "Your rater token"),
    h("p", {}, "The link you were given holds your token. Paste the token here if you have it on its own."),
    message ? h("p", { class: "error rater-refused", role: "alert" }, message) : null,
    h("label", { for: "rater-token" }, "Rater token"),
    input,
    h("button", { type: "submit" }, "Start rating"),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    if (!input.value.trim()) return;
    sessionStorage.setItem(tokenKey(study, rater), input.value.trim());
    location.reload();
  });
  return form;
}

/** Go to an address of the app, drawing the page again when it is the one shown already. */
function go(address) {
  if (location.hash === address) window.dispatchEvent(new HashChangeEvent("hashchange"));
  else location.hash = address;
}

function episodeChooser(view, place, position) {
  const total = view.rated.length;
  const select = h(
    "select",
    { id: "go-to-episode" },
    view.rated.map((done, i) =>
      h("option", { value: String(i), selected: i === position }, `Episode ${i + 1}${done ? " (rated)" : ""}`),
    ),
  );
  select.addEventListener("change", () => go(rateLink(place.study, place.rater, null, select.value)));
  const step = (to, label) =>
    to >= 0 && to < total ? h("a", { class: "button step", href: rateLink(place.study, place.rater, null, to) }, label) : null;
  return h(
    "nav",
    { class: "rate-nav", "aria-label": "Your episodes" },
    step(position - 1, "← Previous"),
    h("span", { class: "field" }, h("label", { for: "go-to-episode" }, "Go to"), select),
    step(position + 1, "Next →"),
  );
}

function header(view, place, position) {
  const rated = view.rated.filter(Boolean).length;
  const total = view.rated.length;
  return [
    h("h1", { dataset: { position: position ?? "done" } }, `Rating: ${view.studyName}`),
    h(
      "p",
      { class: "summary" },
      `You rate as ${view.raterName}. `,
      h("span", { class: "rated-count" }, `${rated} of ${total} rated`),
      ". Keep your link: it brings you back here, on any device.",
    ),
    h("progress", { class: "rate-progress", max: Math.max(1, total), value: rated, "aria-label": `${rated} of ${total} episodes rated` }),
    position === null ? null : episodeChooser(view, place, position),
  ];
}

function agentCard(agent) {
  const facts = [agent.age ? `${agent.age}` : null, agent.occupation, agent.genderPronoun].filter(Boolean).join(", ");
  const entry = (term, detail) => (detail ? [h("dt", {}, term), h("dd", {}, detail)] : null);
  return h(
    "article",
    { class: "rated-agent" },
    h("h3", {}, agent.name),
    facts ? h("p", { class: "hint" }, facts) : null,
    h(
      "dl",
      {},
      entry("Goal", goalView(agent.goal)),
      entry("Public information", agent.publicInfo),
      entry("Personality", agent.personality),
      entry("Secret", agent.secret ? h("span", { class: "secret" }, agent.secret) : null),
    ),
  );
}

function turnOf(turn) {
  if (!turn.actionType) return environmentItem(turn);
  return turnItem({ ...turn, argument: turn.text });
}

function episodeView(task) {
  return [
    h("section", { "aria-labelledby": "situation-title" }, h("h2", { id: "situation-title" }, `Episode ${task.position + 1}: the situation`), h("p", { class: "situation" }, task.scenario)),
    h("section", { class: "who", "aria-labelledby": "who-title" }, h("h2", { id: "who-title" }, "Who is who"), h("div", { class: "rated-agents" }, task.agents.map(agentCard))),
    h(
      "section",
      { "aria-labelledby": "conversation-title" },
      h("h2", { id: "conversation-title" }, "The conversation"),
      h("ol", { class: "transcript" }, task.turns.map(turnOf)),
      task.turns.length ? null : h("p", { class: "hint" }, "Nothing was said."),
    ),
  ];
}

/** The next episode to rate after `position`, going round; null when every one is rated. */
function nextUnrated(rated, position) {
  for (let step = 1; step <= rated.length; step += 1) {
    const i = (position + step) % rated.length;
    if (!rated[i]) return i;
  }
  return null;
}

function allRated(view, place) {
  return h(
    "section",
    { class: "all-rated", "aria-labelledby": "done-title" },
    h("h2", { id: "done-title" }, "Every episode is rated: thank you."),
    h("p", {}, "You can still open any of them to change your rating."),
    h("ol", { class: "rated-list" }, view.rated.map((_, i) => h("li", {}, h("a", { href: rateLink(place.study, place.rater, null, i) }, `Episode ${i + 1}`)))),
  );
}

export async function ratePage({ api, main, query }, study, raterText) {
  const rater = Number.parseInt(raterText, 10);
  const place = { study, rater, token: sessionStorage.getItem(tokenKey(study, rater)) };
  if (!place.token) {
    main.append(h("h1", {}, "Rate episodes"), tokenForm(study, rater, null));
    return null;
  }
  const at = query.get("at");
  const asked = at === null ? null : Number.parseInt(at, 10);
  const variables = { studyId: study, rater, raterToken: place.token, position: Number.isNaN(asked) ? null : asked };
  const data = await api.request("RaterAssignment", variables).catch((error) => {
    // A locked server refuses an unknown rater token (401) and another rater's (FORBIDDEN): to
    // this tab, both are a link that does not open a rating.
    if (error.kind === "rater" || error.code === "FORBIDDEN") return { raterAssignment: null };
    throw error;
  });
  const view = data.raterAssignment;
  if (!view) {
    main.append(h("h1", {}, "Rate episodes"), tokenForm(study, rater, INVALID));
    return null;
  }
  const task = view.current;
  main.append(...header(view, place, task ? task.position : null));
  if (!task) {
    main.append(allRated(view, place));
    return null;
  }
  const form = ratingForm(api, view, place, task);
  main.append(h("div", { class: "columns rate-columns" }, h("div", { class: "column-main" }, episodeView(task)), h("div", { class: "column-side" }, form.node)));
  return form.stop;
}

/** "financial and material benefits" as a label: "Financial and material benefits". */
function sentence(text) {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

function scoreInput(agent, a, dimension, value) {
  const id = `score-${a}-${dimension.name}`;
  const input = h("input", {
    id,
    name: id,
    type: "number",
    inputmode: "numeric",
    min: dimension.rangeLow,
    max: dimension.rangeHigh,
    step: 1,
    value: value === null || value === undefined ? null : String(value),
    "aria-describedby": `${id}-about`,
    dataset: { agent: a, dimension: dimension.name },
  });
  const field = h(
    "div",
    { class: "field score-field" },
    h("label", { for: id }, `${sentence(words(dimension.name))} `, h("span", { class: "range" }, `(${dimension.rangeLow} to ${dimension.rangeHigh})`)),
    input,
    h("p", { class: "hint", id: `${id}-about` }, dimension.description),
  );
  return { input, field };
}

function scoreFields(view, task) {
  const start = task.draft || task.saved; // what was typed and not saved wins over the saved rating
  const given = new Map((start ? start.scores : []).map((s) => [`${s.agent}:${s.dimension}`, s.score]));
  const inputs = [];
  const fieldsets = task.agents.map((agent, a) =>
    h(
      "fieldset",
      { class: "agent-scores" },
      h("legend", {}, agent.name),
      view.rubric.map((dimension) => {
        const made = scoreInput(agent, a, dimension, given.get(`${a}:${dimension.name}`));
        inputs.push(made.input);
        return made.field;
      }),
    ),
  );
  return { inputs, fieldsets, reasoning: start ? start.reasoning : "" };
}

/** The scores as typed: each {agent, dimension, score} with score a whole number or null. */
function typed(inputs) {
  return inputs.map((input) => {
    const text = input.value.trim();
    const score = text === "" ? null : Number(text);
    return { agent: Number(input.dataset.agent), dimension: input.dataset.dimension, score: Number.isInteger(score) ? score : null };
  });
}

/** Mark each score that is missing or off its range; whether all are whole and in range. */
function checkScores(inputs) {
  let first = null;
  for (const input of inputs) {
    input.closest(".field").querySelector(".field-error")?.remove();
    input.removeAttribute("aria-invalid");
    const value = Number(input.value);
    const fine = input.value.trim() !== "" && Number.isInteger(value) && value >= Number(input.min) && value <= Number(input.max);
    if (fine) continue;
    const id = `${input.id}-error`;
    input.setAttribute("aria-invalid", "true");
    input.setAttribute("aria-describedby", `${id} ${input.id}-about`);
    input.closest(".field").append(h("p", { class: "field-error", id, role: "alert" }, `Give a whole number from ${input.min} to ${input.max}.`));
    first = first || input;
  }
  if (first) first.focus();
  return first === null;
}

function showErrors(form, inputs, errors) {
  const general = form.querySelector(".form-errors");
  general.replaceChildren();
  for (const error of errors) {
    const [, name, index] = error.field;
    const input = name === "scores" && index !== undefined ? inputs[Number(index)] : null;
    if (input) {
      input.setAttribute("aria-invalid", "true");
      input.closest(".field").append(h("p", { class: "field-error", role: "alert" }, error.message));
    } else {
      general.append(h("p", { role: "alert" }, error.message));
    }
  }
}

function ratingForm(api, view, place, task) {
  const { inputs, fieldsets, reasoning: reasoningText } = scoreFields(view, task);
  const reasoning = h("textarea", { id: "reasoning", name: "reasoning", rows: "4", maxlength: REASONING_MAX, "aria-describedby": "reasoning-count" });
  reasoning.value = reasoningText;
  const count = h("p", { class: "hint", id: "reasoning-count" });
  const state = h("p", { class: "draft-state", role: "status", "aria-live": "polite" });
  const save = h("button", { type: "submit" }, task.saved ? "Save the change" : "Save and go on");
  const node = h(
    "form",
    { class: "rating-form", novalidate: true, "aria-labelledby": "rating-title" },
    h("h2", { id: "rating-title" }, "Your rating"),
    h("p", { class: "hint" }, task.saved ? "You rated this episode; you may change your rating." : "Score each agent on each dimension, then say why in a few words."),
    h("div", { class: "form-errors", role: "alert" }),
    fieldsets,
    h("div", { class: "field" }, h("label", { for: "reasoning" }, "Your reasoning"), reasoning, count),
    save,
    state,
  );
  const countText = () => {
    count.textContent = `${reasoning.value.length} of ${REASONING_MAX} characters`;
  };
  countText();
  const base = { studyId: place.study, rater: place.rater, raterToken: place.token, position: task.position, revision: task.revision };
  const drafts = draftKeeper(api, base, () => ({ scores: typed(inputs), reasoning: reasoning.value }), state);
  node.addEventListener("input", () => {
    countText();
    drafts.soon();
  });
  node.addEventListener("submit", async (event) => {
    event.preventDefault();
    drafts.cancel();
    if (!checkScores(inputs)) return;
    save.disabled = true;
    state.textContent = "Saving…";
    try {
      const input = { ...base, scores: typed(inputs), reasoning: reasoning.value };
      const result = (await api.request("SaveRating", { input })).saveRating;
      showErrors(node, inputs, result.userErrors);
      if (result.userErrors.length) {
        state.textContent = "Not saved.";
        return;
      }
      state.textContent = "Saved.";
      const rated = view.rated.map((done, i) => done || i === task.position);
      const next = nextUnrated(rated, task.position);
      go(rateLink(place.study, place.rater, null, next));
    } catch (error) {
      showErrors(node, inputs, [{ field: [], message: error.message }]);
      state.textContent = "Not saved.";
    } finally {
      save.disabled = false;
    }
  });
  return { node, stop: () => drafts.flush() };
}

/** Keeps what is typed as a draft a moment after typing stops; `flush` sends a pending one now. */
function draftKeeper(api, base, current, state) {
  let timer = null;
  const send = async () => {
    timer = null;
    try {
      const result = (await api.request("SaveRatingDraft", { input: { ...base, ...current() } })).saveRatingDraft;
      if (result.stored) {
        state.textContent = `Draft kept at ${new Date().toLocaleTimeString()}.`;
      } else if (result.userErrors.some((e) => e.code === "CONFLICT")) {
        state.textContent = "This rating was saved from another tab or device: reload the page to see it.";
      } else {
        state.textContent = "Draft not kept: " + result.userErrors.map((e) => e.message).join("; ");
      }
    } catch (error) {
      state.textContent = `Draft not kept (${error.message}); it is tried again as you type.`;
    }
  };
  return {
    soon: () => {
      clearTimeout(timer);
      timer = setTimeout(send, DRAFT_DELAY_MS);
    },
    cancel: () => {
      clearTimeout(timer);
      timer = null;
    },
    flush: () => {
      if (timer === null) return;
      clearTimeout(timer);
      send();
    },
  };
}
