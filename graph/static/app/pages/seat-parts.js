// What a person in a seat sees besides the conversation: whose turn it is, who they are, and the
// scores at the end.

import { rangesOf, scoreChart } from "../chart.js";
import { append, clear, h, words } from "../dom.js";
import { goalView } from "../goal.js";
import { seatPhrase } from "../status.js";
import { countdown } from "./common.js";
import { failureNotes } from "./episode-results.js";

/** Whose turn it is, with a countdown; `nameOf` names each seat. */
export function drawBanner(banner, { view, status, waiting }, nameOf) {
  const yours = view && view.yourTurn;
  banner.dataset.yours = yours ? "true" : "false";
  banner.dataset.status = status;
  if (yours) {
    banner.replaceChildren(`Your turn (#${yours.turn}): `, countdown(yours.deadline));
  } else if (status === "WAITING" && waiting) {
    const whom = waiting.seats.map((s) => `${nameOf[s] ?? "?"} (seat ${s + 1})`).join(", ");
    banner.replaceChildren(`Waiting for ${whom}: `, countdown(waiting.deadline));
  } else {
    banner.replaceChildren(seatPhrase(status));
  }
}

function partners(view) {
  if (!view.partners.length) return null;
  const item = (p) => h("li", {}, h("strong", {}, p.name), ` (${words(p.relationship)})`, p.profile ? `: ${p.profile}` : "");
  return [h("h3", {}, "The others"), h("ul", { class: "partners" }, view.partners.map(item))];
}

/** The seat's agent: goal, secret, the others, and all it was told. */
export function drawMe(me, view) {
  if (!view) return;
  append(clear(me), [
    h("h2", { id: "me-title" }, `You are ${view.agentName}`),
    h(
      "dl",
      {},
      h("dt", {}, "Your goal"),
      h("dd", {}, goalView(view.goal)),
      h("dt", {}, "Your secret"),
      h("dd", { class: "secret" }, view.secret || "(none)"),
    ),
    partners(view),
    h("details", { class: "background" }, h("summary", {}, "Everything your agent was told"), h("p", {}, view.background)),
  ]);
}

function yours(chart) {
  chart.classList.add("yours");
  chart.prepend(h("p", { class: "hint" }, "Your agent"));
  return chart;
}

/** A seat token alone reads no episode: its own scores come with its view. */
function ownScores(results, view, seat) {
  const own = { agentIndex: seat, agent: { name: view.agentName }, ...view.score };
  results.replaceChildren(h("h2", { id: "results-title" }, "Scores"), h("div", { class: "charts" }, yours(scoreChart(own, Object.fromEntries(view.score.ranges.map((r) => [r.dimension, [r.low, r.high]]))))));
}

function allScores(results, ended, lists, seat) {
  const ranges = rangesOf(ended.evaluationDimensionListId, lists);
  const ordered = [...ended.rewards].sort((a, b) => (a.agentIndex === seat ? -1 : b.agentIndex === seat ? 1 : 0));
  const chart = (reward) => (reward.agentIndex === seat ? yours(scoreChart(reward, ranges)) : scoreChart(reward, ranges));
  append(results, [
    h("h2", { id: "results-title" }, "Scores"),
    h("div", { class: "charts" }, ordered.map(chart)),
    ended.terminationReason ? h("p", {}, `The conversation ended: ${ended.terminationReason}`) : null,
  ]);
}

/** The ended episode's outcome in `results`; `state.view` is read again when it has no scores yet. */
export async function drawSeatResults(api, results, state, { id, seat, token }) {
  if (!api.mayRead()) {
    if (!state.view || !state.view.score) state.view = (await api.request("SeatView", { id, seat, seatToken: token })).seatView;
    if (state.view && state.view.score) ownScores(results, state.view, seat);
    return;
  }
  const data = await api.request("SeatScores", { id });
  const ended = data.episode;
  if (!ended) return;
  clear(results);
  if (ended.status === "FAILED" && ended.error) results.append(...failureNotes(ended.error));
  if (ended.rewards.length) allScores(results, ended, data.evaluationDimensionLists, seat);
}
