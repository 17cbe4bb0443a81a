// How an episode ended: why it failed, the judge's scores and reasoning, or, when the judge gave
// none, a way to judge it again.

import { rangesOf, scoreChart } from "../chart.js";
import { append, clear, h } from "../dom.js";

function errorLine(message) {
  return h("p", { class: "error", role: "alert" }, message);
}

/** Why an episode failed, under its own heading. */
export function failureNotes(error) {
  return [h("h2", { id: "results-title" }, "Failure"), errorLine(error)];
}

const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Follows a re-judging until it ended, saying in `note` where it is; false if the page was left. */
async function untilJudged(api, rejudging, note) {
  for (;;) {
    await pause(1000);
    if (!note.isConnected) return false;
    const { progress } = (await api.request("RejudgingProgress", { id: rejudging })).rejudging;
    if (progress.completed || progress.failed) return true;
    note.replaceChildren(progress.running ? "The judge is scoring…" : "Waiting for a worker…");
  }
}

// Judge an episode that completed without scores again, with its own judges and dimensions:
// the scores that judgement gives become the episode's. Follows the re-judging to its end, then
// `reload()`s the page's episode and says so if the judge failed again.
async function judgeAgain(api, state, { button, note, section, reload }) {
  button.disabled = true;
  note.replaceChildren("Asking for a new judgement…");
  try {
    const { id, judges, judgeAggregate, evaluationDimensionListId } = state.episode;
    const input = { episodeIds: [id], judges, judgeAggregate, evaluationDimensionListId };
    const result = (await api.request("RejudgeEpisode", { input })).rejudgeEpisodes;
    if (result.userErrors.length) {
      note.replaceChildren(errorLine(result.userErrors.map((e) => e.message).join("; ")));
      button.disabled = false;
      return;
    }
    const rejudging = result.rejudging.id;
    if (!(await untilJudged(api, rejudging, note))) return; // the page was left
    await reload();
    const evaluation = state.episode.evaluations.find((e) => e.id === rejudging);
    if (state.episode.judgeError && evaluation && evaluation.error) {
      section.append(errorLine(`The judge failed again: ${evaluation.error}`));
    }
  } catch (error) {
    note.replaceChildren(errorLine(error.message));
    button.disabled = false;
  }
}

function unjudged(episode, judge) {
  const note = h("div", { class: "rejudge-note", role: "status" });
  const button = h("button", { type: "button", class: "rejudge" }, "Judge again");
  button.addEventListener("click", () => judge(button, note));
  return [
    h("h2", { id: "results-title" }, "Not judged"),
    h(
      "div",
      { class: "unjudged" },
      h("p", {}, h("strong", {}, "The judge gave no scores: "), episode.judgeError),
      h("p", {}, "The conversation is kept. Judged again by its judge (", h("code", {}, episode.judgeModel || ""), "), the scores it gives become this episode's."),
      h("div", { class: "actions" }, button),
      note,
    ),
  ];
}

function scores(episode, lists) {
  const ranges = rangesOf(episode.evaluationDimensionListId, lists);
  return [
    h("h2", { id: "results-title" }, "Scores"),
    h("div", { class: "charts" }, episode.rewards.map((reward) => scoreChart(reward, ranges))),
    h("h3", {}, "The judge's reasoning"),
    h("div", { class: "reasoning" }, episode.reasoning.split(/\n+/).map((para) => h("p", {}, para))),
    episode.terminationReason ? h("p", {}, `The conversation ended: ${episode.terminationReason}`) : null,
  ];
}

/** The results section of `state.episode`; `reload()` reads the episode again and redraws the page. */
export function resultsSection(api, state, reload) {
  const section = h("section", { class: "results", "aria-labelledby": "results-title" });
  const judge = (button, note) => judgeAgain(api, state, { button, note, section, reload });
  const draw = () => {
    const episode = state.episode;
    clear(section);
    if (episode.status === "FAILED" && episode.error) section.append(...failureNotes(episode.error));
    if (episode.status === "COMPLETED" && episode.judgeError) return append(section, unjudged(episode, judge));
    if (episode.rewards.length) append(section, scores(episode, state.lists));
  };
  return { node: section, draw };
}
