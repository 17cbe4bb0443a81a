// An episode's model calls (its ledger): every request sent to a model, turn by turn, each with
// the messages as sent, the answer, tokens, latency, tries and any error.

import { h, routeLink, when, words } from "../dom.js";
import { backStack, notFound, pageSize, pager } from "./common.js";

export const CALLS_ROUTE = /^\/episodes\/([^/]+)\/calls$/;

/** Who asked: an agent (by seat) or a judge run. */
function asker(call, agents) {
  if (call.judge) return `judge ${call.judge}`;
  if (call.seat === null) return "";
  const agent = agents[call.seat];
  return agent ? agent.name : `seat ${call.seat + 1}`;
}

function figures(call) {
  const parts = [`${call.promptTokens} + ${call.completionTokens} tokens`, `${Math.round(call.latencyMs)} ms`];
  if (call.attempts > 1) parts.push(`${call.attempts} tries`);
  return parts.join(" · ");
}

function messageItem(message) {
  if (!message) return h("li", { class: "hint" }, "(no longer stored)");
  return h("li", { class: `call-message role-${message.role}` }, h("strong", {}, message.role), h("pre", {}, message.content));
}

function callItem(call, agents) {
  const error = call.errorCode ? h("p", { class: "error" }, `${call.errorCode}: ${call.errorMessage || ""}`) : null;
  return h(
    "li",
    { class: "model-call", dataset: { purpose: call.purpose, turn: call.turn } },
    h(
      "p",
      { class: "call-head" },
      call.turn === null ? null : h("span", { class: "turn-number" }, `#${call.turn}`),
      h("span", { class: "tag" }, words(call.purpose)),
      " ",
      h("strong", {}, asker(call, agents)),
      ` · ${call.model} · ${figures(call)} · ${when(call.finishedAt)}`,
    ),
    error,
    h(
      "details",
      {},
      h("summary", {}, `Request: ${call.messages.length} message(s)${call.responseFormat ? ", with a JSON schema" : ""}`),
      h("ol", { class: "call-messages" }, call.messages.map(messageItem)),
    ),
    call.answer === null ? null : h("div", { class: "call-answer" }, h("strong", {}, "Answer"), h("pre", {}, call.answer)),
  );
}

/** A choice of which calls to show: every call, one turn's, or the judges'. */
function callFilter(id, episode, params) {
  const turns = Array.from({ length: episode.progress.turn }, (_, turn) => turn);
  const chosen = params.purpose === "JUDGE" ? "judges" : params.turn ?? "";
  const select = h(
    "select",
    { id: "calls-of", name: "calls-of" },
    h("option", { value: "" }, "every call"),
    turns.map((turn) => h("option", { value: String(turn), selected: String(turn) === chosen }, `turn ${turn}`)),
    h("option", { value: "judges", selected: chosen === "judges" }, "the judges"),
  );
  select.addEventListener("change", () => {
    const value = select.value;
    location.hash = routeLink(`/episodes/${encodeURIComponent(id)}/calls`, value === "judges" ? { purpose: "JUDGE" } : { turn: value });
  });
  return h("div", { class: "view-switch" }, h("label", { for: "calls-of" }, "Show"), select);
}

export async function callsPage({ api, main, query }, id) {
  const params = { turn: query.get("turn") || null, purpose: query.get("purpose") === "JUDGE" ? "JUDGE" : null, after: query.get("after") };
  const turn = params.turn === null ? null : Number.parseInt(params.turn, 10);
  const variables = { id, first: pageSize(query), after: params.after, turn: Number.isInteger(turn) ? turn : null, purpose: params.purpose };
  const data = await api.request("EpisodeCalls", variables);
  const episode = data.episode;
  const back = h("a", { href: `#/episodes/${encodeURIComponent(id)}` }, "Back to the episode");
  if (!episode) {
    const why = ["There is no episode with the id ", h("code", {}, id), ". It may have been deleted, or the address is mistyped."];
    return notFound(main, "Episode not found", why, h("a", { href: "#/" }, "See all episodes"));
  }
  const calls = episode.modelCalls;
  const link = (values) => routeLink(`/episodes/${encodeURIComponent(id)}/calls`, values);
  main.append(
    h("h1", {}, "Model calls"),
    h("p", { class: "summary" }, `Episode ${id} · ${calls.totalCount} call(s) shown here · `, back),
    callFilter(id, episode, params),
    calls.nodes.length
      ? h("ol", { class: "model-calls" }, calls.nodes.map((call) => callItem(call, episode.agents)))
      : h("p", { class: "hint" }, "No model calls recorded here (none made, or past the ledger's retention)."),
    pager(link, params, calls.pageInfo, backStack(query)),
  );
  return null;
}
