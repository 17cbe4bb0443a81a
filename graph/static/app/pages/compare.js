// Two branches of an episode's family compared turn by turn: the turns they share first (as
// one transcript), then, from the first turn that differs, each turn of both side by side.

import { h } from "../dom.js";
import { statusBadge } from "../status.js";
import { notFound } from "./common.js";
import { changeWords } from "./episode-family.js";
import { environmentItem, turnItem } from "./transcript.js";

export const COMPARE_ROUTE = /^\/compare$/;

/** A branch's turns and delivered environment messages, by turn number. */
function byTurn(episode) {
  const turns = new Map();
  const add = (turn, item) => turns.set(turn, [...(turns.get(turn) || []), item]);
  for (const message of episode.environmentMessages) {
    if (message.turn !== null && message.turn !== undefined) add(message.turn, { message });
  }
  for (const turn of episode.turns) add(turn.turn, { turn });
  return turns;
}

function same(a = [], b = []) {
  const key = (item) =>
    item.turn ? ["turn", item.turn.agentIndex, item.turn.actionType, item.turn.argument, item.turn.to] : ["env", item.message.text, item.message.to];
  return JSON.stringify(a.map(key)) === JSON.stringify(b.map(key));
}

/** How many turns, from the first, the two branches played alike. */
export function sharedTurns(a, b) {
  let shared = 0;
  while ((a.has(shared) || b.has(shared)) && same(a.get(shared), b.get(shared))) shared += 1;
  return shared;
}

function items(entries = []) {
  return entries.map((entry) => (entry.turn ? turnItem(entry.turn) : environmentItem(entry.message)));
}

function branchCard(name, episode) {
  const fork = episode.parentId
    ? [`fork at turn ${episode.forkedAtTurn}: ${changeWords(episode.forkChange)}`]
    : ["root episode"];
  return h(
    "div",
    { class: "branch-card", dataset: { branch: name.toLowerCase() } },
    h("h2", {}, `Branch ${name} `, statusBadge(episode.status)),
    h("p", {}, h("a", { href: `#/episodes/${encodeURIComponent(episode.id)}` }, episode.id)),
    h("p", { class: "summary" }, fork),
    h("p", { class: "summary" }, "Models: ", episode.agentModels.map((m) => h("code", {}, m)).flatMap((c, i) => (i ? [", ", c] : [c]))),
  );
}

function turnRow(turn, a, b) {
  const alike = same(a.get(turn), b.get(turn));
  return h(
    "div",
    { class: "branch-row", dataset: { turn, alike: alike ? "true" : null } },
    h("div", { class: "branch-turn" }, `Turn #${turn}`, alike ? h("span", { class: "alike" }, " alike") : null),
    h("ol", { class: "transcript branch-cell", dataset: { branch: "a" }, "aria-label": `Branch A, turn ${turn}` }, items(a.get(turn))),
    h("ol", { class: "transcript branch-cell", dataset: { branch: "b" }, "aria-label": `Branch B, turn ${turn}` }, items(b.get(turn))),
  );
}

export async function comparePage({ api, main, query }) {
  const ids = { a: query.get("a") || "", b: query.get("b") || "" };
  const data = ids.a && ids.b ? await api.request("EpisodeCompare", ids) : { a: null, b: null };
  const missing = ["a", "b"].filter((k) => !data[k]).map((k) => ids[k] || `(no ${k})`);
  if (missing.length) {
    const why = ["There is no episode with the id ", h("code", {}, missing.join(", ")), ". Choose two branches from an episode's forks."];
    return notFound(main, "Nothing to compare", why, h("a", { href: "#/" }, "See all episodes"));
  }
  const a = byTurn(data.a);
  const b = byTurn(data.b);
  const shared = sharedTurns(a, b);
  const last = Math.max(-1, ...a.keys(), ...b.keys());
  const apart = [];
  for (let turn = shared; turn <= last; turn += 1) apart.push(turnRow(turn, a, b));
  const scenario = data.a.scenario ? data.a.scenario.codename : "";
  main.append(
    h("h1", {}, "Compare branches"),
    h("p", { class: "summary" }, scenario ? `Scenario ${scenario} · ` : "", `${data.a.agents.map((x) => (x ? x.name : "?")).join(", ")}`),
    h("div", { class: "branch-cards" }, branchCard("A", data.a), branchCard("B", data.b)),
    h(
      "section",
      { class: "shared-turns", "aria-labelledby": "shared-title", dataset: { turns: shared } },
      h("h2", { id: "shared-title" }, shared ? `Shared: turns #0 to #${shared - 1}, the same in both` : "No turn is shared"),
      shared ? h("ol", { class: "transcript shared" }, [...Array(shared).keys()].flatMap((t) => items(a.get(t)))) : null,
    ),
    h(
      "section",
      { class: "apart", "aria-labelledby": "apart-title" },
      h("h2", { id: "apart-title" }, apart.length ? `From turn #${shared}, side by side` : "No turn differs"),
      apart.length
        ? h(
            "div",
            { class: "branches" },
            h("div", { class: "branch-row branch-head", "aria-hidden": "true" }, h("div", {}, ""), h("div", {}, "Branch A"), h("div", {}, "Branch B")),
            apart,
          )
        : null,
    ),
  );
  return null;
}
