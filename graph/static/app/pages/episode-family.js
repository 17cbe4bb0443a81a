// An episode's family of forks: the tree from its root (each fork with its turn and its change),
// a form that forks this episode, and the choice of two branches to compare turn by turn.

import { h, routeLink } from "../dom.js";
import { statusBadge, TERMINAL } from "../status.js";
import { showFieldErrors } from "./common.js";

const PROFILE_WORDS = {
  age: "age",
  occupation: "occupation",
  publicInfo: "public information",
  personalityAndValues: "personality",
  decisionMakingStyle: "decision making",
  bigFive: "Big Five",
  mbti: "MBTI",
  secret: "secret",
};

/** The profile fields a fork's edit of one seat sets, in words. */
function profileFields(profile) {
  return Object.entries(PROFILE_WORDS)
    .filter(([name]) => profile[name] !== null && profile[name] !== undefined)
    .map(([, words]) => words);
}

/** What a fork changed, in words: "seat 2 → model x; message “…”; seat 1's goal". */
export function changeWords(change) {
  if (!change) return "";
  const parts = [
    ...change.seatModels.map((s) => `seat ${s.seat + 1} → ${s.model}`),
    ...(change.injectMessage ? [`message “${change.injectMessage.text}”`] : []),
    ...change.goals.map((g) => `seat ${g.seat + 1}'s goal: “${g.goal}”`),
    ...change.profiles.map((p) => `seat ${p.seat + 1}'s ${profileFields(p).join(", ")}`),
  ];
  return parts.length ? parts.join("; ") : "no change";
}

function label(member, root) {
  if (member.id === root.id) return "Root episode";
  return `Fork at turn ${member.forkedAtTurn}`;
}

function memberItem(member, root, current, children) {
  const here = member.id === current;
  const name = label(member, root);
  const link = here
    ? h("strong", { "aria-current": "page" }, name, " (this episode)")
    : h("a", { href: `#/episodes/${encodeURIComponent(member.id)}` }, name);
  const kids = (children.get(member.id) || []).map((child) => memberItem(child, root, current, children));
  return h(
    "li",
    { dataset: { episode: member.id, turn: member.forkedAtTurn } },
    h("div", { class: "family-member" }, link, " ", statusBadge(member.status)),
    member.forkChange ? h("div", { class: "family-change" }, changeWords(member.forkChange)) : null,
    kids.length ? h("ul", {}, kids) : null,
  );
}

/** The family as nested lists: each member under its parent (a missing parent: under the root). */
export function familyTree(family, current) {
  const [root] = family;
  const ids = new Set(family.map((m) => m.id));
  const children = new Map();
  for (const member of family.slice(1)) {
    const parent = ids.has(member.parentId) ? member.parentId : root.id;
    children.set(parent, [...(children.get(parent) || []), member]);
  }
  return h("ul", { class: "family-tree" }, memberItem(root, root, current, children));
}

function branchChoice(id, text, family, chosen) {
  const select = h(
    "select",
    { id, name: id },
    family.map((m, i) =>
      h("option", { value: m.id, selected: m.id === chosen }, `${i === 0 ? "Root" : `Fork at turn ${m.forkedAtTurn}`} · ${m.id.slice(-6)}`),
    ),
  );
  return h("div", { class: "field" }, h("label", { for: id }, text), select);
}

function compareForm(family, current) {
  const here = family.find((m) => m.id === current);
  const other = (here && here.parentId) || (family.find((m) => m.id !== current) || {}).id;
  const a = branchChoice("compare-a", "Branch A", family, other);
  const b = branchChoice("compare-b", "Branch B", family, current);
  const form = h(
    "form",
    { class: "compare-form", "aria-label": "Compare two branches" },
    a,
    b,
    h("button", { type: "submit" }, "Compare turn by turn"),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    location.hash = routeLink("/compare", { a: a.querySelector("select").value, b: b.querySelector("select").value });
  });
  return form;
}

function seatModelFields(episode) {
  return episode.agentIds.map((agentId, i) => {
    const id = `fork-model-${i}`;
    const name = episode.agents[i] ? episode.agents[i].name : agentId;
    const current = episode.agentModels[i] || "";
    return h(
      "div",
      { class: "field" },
      h("label", { for: id }, `Model for ${name} (seat ${i + 1})`),
      h("input", { id, name: id, type: "text", placeholder: current, dataset: { seat: i, current } }),
    );
  });
}

/** A form that forks this (finished) episode at a turn, with other models or a message. */
function forkForm(api, episode) {
  const turns = episode.progress.turn;
  const at = h("input", { id: "fork-at", name: "fork-at", type: "number", min: "0", value: String(turns), required: true });
  const message = h("textarea", { id: "fork-message", name: "fork-message", rows: "2" });
  const models = seatModelFields(episode);
  const note = h("div", { class: "form-errors", role: "alert" });
  const button = h("button", { type: "submit" }, "Fork");
  const form = h(
    "form",
    { class: "fork-form", "aria-labelledby": "fork-title" },
    h("h3", { id: "fork-title" }, "Fork this episode"),
    h("div", { class: "field", dataset: { field: "atTurn" } }, h("label", { for: "fork-at" }, `Keep its first turns (0 to ${turns})`), at),
    h("div", { class: "seat-models", dataset: { field: "seatModels" } }, models),
    h("div", { class: "field", dataset: { field: "injectMessage" } }, h("label", { for: "fork-message" }, "Environment message at that turn (optional)"), message),
    note,
    button,
    h("p", { class: "hint" }, "The fork keeps those turns as they were and plays on with the change; leave a model empty to keep it."),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    note.replaceChildren();
    button.disabled = true;
    const seatModels = models
      .map((field) => field.querySelector("input"))
      .filter((input) => input.value.trim())
      .map((input) => ({ seat: Number(input.dataset.seat), model: input.value.trim() }));
    const input = { episodeId: episode.id, atTurn: Number(at.value), seatModels };
    if (message.value.trim()) input.injectMessage = { text: message.value };
    try {
      const result = (await api.request("ForkEpisode", { input })).forkEpisode;
      if (result.userErrors.length) showFieldErrors(form, result.userErrors);
      else location.hash = `#/episodes/${encodeURIComponent(result.episode.id)}`;
    } catch (error) {
      note.append(h("p", {}, error.message));
    } finally {
      button.disabled = false;
    }
  });
  return form;
}

/** The section: drawn from the episode's family, read again on each draw of a finished episode. */
export function familySection(api, state) {
  const body = h("div", { class: "family-body" });
  const node = h("section", { class: "family", "aria-labelledby": "family-title" }, h("h2", { id: "family-title" }, "Forks"), body);
  let drawn = null;
  async function draw() {
    const episode = state.episode;
    const key = `${episode.id}:${episode.status}`;
    if (drawn === key) return;
    drawn = key;
    const data = await api.request("EpisodeFamily", { id: episode.id });
    const family = data.episode ? data.episode.family : [];
    const parts = [];
    if (family.length > 1) {
      parts.push(familyTree(family, episode.id), compareForm(family, episode.id));
    } else {
      parts.push(h("p", { class: "hint" }, "No forks yet."));
    }
    if (TERMINAL.has(episode.status)) parts.push(forkForm(api, episode));
    body.replaceChildren(...parts);
  }
  return { node, draw };
}
