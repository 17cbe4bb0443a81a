// An episode's statuses in words: their order, which are final, their badges (coloured by the
// `.status-*` rules of app.css), and what each means to the one watching and to a person in a seat.

import { h } from "./dom.js";
import { ENUMS } from "./enums.js";

export const STATUSES = ENUMS.EpisodeStatus;
export const TERMINAL = new Set(["COMPLETED", "FAILED", "CANCELLED"]);

/** The statuses in which each control of an unfinished episode may be used. */
export const CONTROLS = {
  PauseEpisode: ["QUEUED", "WAITING", "RUNNING"],
  StepEpisode: ["PAUSED", "RUNNING"],
  ResumeEpisode: ["PAUSED"],
};

export function statusBadge(status) {
  return h("span", { class: `status status-${status.toLowerCase()}`, "data-status": status }, status);
}

/**
 * Where an episode is, for the one watching it: `turn` of `maxTurns`, whether it pauses before
 * `pauseAt` (null when not pausing; 0 for its next turn), whom it waits for, whether it was judged.
 */
export function progressPhrase(status, { turn, maxTurns, pauseAt, waitingFor, judged }) {
  const pausing = pauseAt === null ? "" : ` (pauses before ${pauseAt ? `turn #${pauseAt}` : "its next turn"})`;
  return {
    QUEUED: "Waiting for a worker",
    RUNNING: `Turn ${turn} of ${maxTurns}${pausing}`,
    WAITING: waitingFor ? `Turn #${waitingFor.turn} of ${maxTurns}: waiting for ${waitingFor.names}` : "Waiting for a person",
    PAUSED: `Paused after ${turn} of ${maxTurns} turns: resume or step to go on`,
    EVALUATING: "The judge is scoring",
    COMPLETED: `Done: ${turn} of ${maxTurns} turns, ${judged ? "scored" : "not judged"}`,
    FAILED: `Failed after ${turn} of ${maxTurns} turns`,
    CANCELLED: `Cancelled after ${turn} of ${maxTurns} turns`,
  }[status];
}

/** Where an episode is, for a person in one of its seats when it is not their turn. */
export function seatPhrase(status) {
  const phrase = {
    QUEUED: "The others are about to move: waiting for a worker…",
    RUNNING: "The others are taking their turn…",
    WAITING: "Waiting for a person…",
    PAUSED: "The episode is paused; it goes on when it is resumed.",
    EVALUATING: "The conversation is over; the judge is scoring it…",
    COMPLETED: "The episode is over: the scores are below.",
    FAILED: "The episode failed.",
    CANCELLED: "The episode was cancelled.",
  }[status];
  return status === null ? "Connecting…" : phrase || status;
}
