// An unfinished episode's page kept live: its events applied as they come, the episode read
// again where the events cannot say enough.

import { TERMINAL } from "../status.js";
import { refreshGame } from "./game.js";
import { environmentItem, turnItem } from "./transcript.js";

const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function applyTurn(api, state, view, event) {
  const episode = state.episode;
  episode.turns.push(event.turn);
  episode.progress.turn = Math.max(episode.progress.turn, event.turn.turn + 1);
  view.transcript.add(turnItem(event.turn));
  view.progress.draw();
  if (episode.game) refreshGame(api, episode.id, view.game);
}

function applyInjection(state, view, event) {
  if (!event.environmentMessage) return;
  state.episode.environmentMessages.push(event.environmentMessage);
  view.transcript.add(environmentItem(event.environmentMessage));
}

function applyStatus(state, view, event) {
  const episode = state.episode;
  const beginsAttempt = event.attempt > episode.attempt && episode.attempt > 0;
  episode.status = event.status;
  episode.statusHistory.push({
    status: event.status,
    at: event.occurredAt,
    sequence: event.sequence,
    attempt: event.attempt,
    reason: event.reason,
    resumedFromTurn: event.resumedFromTurn,
  });
  episode.attempt = event.attempt;
  episode.waiting = event.status === "WAITING" ? event.waiting : null;
  if (event.status === "PAUSED" || TERMINAL.has(event.status)) episode.pauseAt = null;
  if (beginsAttempt) {
    const kept = event.resumedFromTurn || 0;
    episode.turns = episode.turns.filter((turn) => turn.turn < kept);
    episode.progress.turn = kept;
    view.transcript.draw(true);
  }
  view.header.draw();
  view.progress.draw();
  view.timeline.draw();
}

/**
 * Follows the episode's events until the returned function is called. Events are applied in
 * sequence order exactly once: anything at or below the sequence the page already shows is
 * skipped. A gap (a snapshot newer than the page, an expired cursor) re-reads the episode;
 * events that arrive meanwhile wait and are applied after it.
 */
export function followEpisode(api, state, view, setConnection) {
  const note = view.streamNote;
  let pending = null;
  let stopped = false;

  const refresh = async () => {
    if (pending) return;
    pending = [];
    for (let tries = 0; !stopped; tries += 1) {
      try {
        await view.reload();
        break;
      } catch (error) {
        note.textContent = `Could not re-read the episode (${error.message}); trying again…`;
        await pause(Math.min(4000, 250 * 2 ** tries));
      }
    }
    const waiting = pending;
    pending = null;
    waiting.forEach(apply);
  };

  const apply = (event) => {
    if (event.sequence <= state.episode.sequence) return;
    if (event.kind === "SNAPSHOT" || event.kind === "CURSOR_EXPIRED") return void refresh();
    state.episode.sequence = event.sequence;
    if (event.kind === "TURN") return applyTurn(api, state, view, event);
    if (event.kind === "INJECTION") return applyInjection(state, view, event);
    applyStatus(state, view, event);
    if (TERMINAL.has(event.status)) refresh();
  };

  const stop = api.follow("WatchEpisode", { id: state.episode.id }, {
    event: (event) => (pending ? pending.push(event) : apply(event)),
    state: (connection) => {
      setConnection(connection);
      note.textContent = connection === "reconnecting" ? "The live connection dropped; reconnecting and resuming from the last event…" : "";
      note.dataset.state = connection;
    },
    failed: (error) => {
      note.textContent = error.message;
      note.classList.add("error");
    },
  });
  return () => {
    stopped = true;
    stop();
  };
}
