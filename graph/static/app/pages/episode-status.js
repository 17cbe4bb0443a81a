// Where an episode is: a progress bar with its phase in words, and the timeline of its statuses.

import { h, when } from "../dom.js";
import { progressPhrase, statusBadge } from "../status.js";
import { countdown } from "./common.js";

/** The names of the agents in `seats` ("Alice (seat 1)"). */
export function seatNames(agents, seats) {
  return seats.map((seat) => `${agents[seat] ? agents[seat].name : "?"} (seat ${seat + 1})`).join(", ");
}

export function episodeProgress(state) {
  const node = h("div", { class: "progress" });
  const draw = () => {
    const episode = state.episode;
    const { turn, maxTurns } = episode.progress;
    const waiting = episode.status === "WAITING" ? episode.waiting : null;
    const phase = progressPhrase(episode.status, {
      turn,
      maxTurns,
      pauseAt: episode.pauseAt ?? null,
      waitingFor: waiting ? { turn: waiting.turn, names: seatNames(episode.agents, waiting.seats) } : null,
      judged: !episode.judgeError,
    });
    node.dataset.status = episode.status;
    node.replaceChildren(
      h("label", { for: "episode-progress" }, phase, waiting ? [" · ", countdown(waiting.deadline)] : null),
      h("progress", { id: "episode-progress", max: maxTurns, value: turn }, `${turn} / ${maxTurns}`),
    );
  };
  return { node, draw };
}

function changeItem(change) {
  return h(
    "li",
    { dataset: { status: change.status, attempt: change.attempt } },
    statusBadge(change.status),
    " ",
    h("time", { datetime: change.at }, when(change.at)),
    change.attempt ? ` · attempt ${change.attempt}` : "",
    change.resumedFromTurn ? ` · resumed from turn ${change.resumedFromTurn}` : "",
    change.reason ? h("span", { class: "reason" }, ` · ${change.reason}`) : "",
  );
}

export function statusTimeline(state) {
  const list = h("ol", { class: "timeline" });
  const node = h("section", { "aria-labelledby": "timeline-title" }, h("h2", { id: "timeline-title" }, "Status timeline"), list);
  const draw = () => list.replaceChildren(...state.episode.statusHistory.map(changeItem));
  return { node, draw };
}
