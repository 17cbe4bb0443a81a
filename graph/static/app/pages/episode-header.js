// The top of an episode's page: its title and status, a line about it, and the controls of an
// unfinished episode (pause, step, resume, cancel).

import { h } from "../dom.js";
import { CONTROLS, TERMINAL, statusBadge } from "../status.js";

function errorLine(message) {
  return h("p", { class: "error", role: "alert" }, message);
}

/** A button that sends `operation` (answered in `field`), usable in the statuses CONTROLS lists. */
function controlButton(api, state, { label, operation, field, note, onPauseAt }) {
  const allowed = () => CONTROLS[operation].includes(state.episode.status);
  const button = h("button", { type: "button", class: "control", disabled: !allowed() }, label);
  button.addEventListener("click", async () => {
    button.disabled = true;
    note.replaceChildren();
    try {
      const result = (await api.request(operation, { id: state.episode.id }))[field];
      if (result.userErrors.length) {
        note.append(errorLine(result.userErrors.map((e) => e.message).join("; ")));
      } else if (result.episode) {
        state.episode.pauseAt = result.episode.pauseAt;
        onPauseAt();
      }
    } catch (error) {
      note.append(errorLine(error.message));
    }
    button.disabled = !allowed();
  });
  return button;
}

function cancelButton(api, state, actions) {
  const cancel = h("button", { type: "button", class: "danger" }, "Cancel episode");
  cancel.addEventListener("click", async () => {
    cancel.disabled = true;
    try {
      const result = await api.request("CancelEpisode", { id: state.episode.id });
      const errors = result.cancelSimulation.userErrors;
      if (errors.length) actions.append(errorLine(errors.map((e) => e.message).join("; ")));
    } catch (error) {
      actions.append(errorLine(error.message));
      cancel.disabled = false;
    }
  });
  return cancel;
}

/** " · fork of <parent> at turn k" for a fork; nothing for another episode. */
function forkOf({ parentId, forkedAtTurn }) {
  if (!parentId) return [];
  const parent = h("a", { href: `#/episodes/${encodeURIComponent(parentId)}`, class: "parent-link" }, parentId);
  return [" · fork of ", parent, ` at turn ${forkedAtTurn}`];
}

/** The header's nodes, and `draw()`; `onPauseAt()` after a control changed when it pauses. */
export function episodeHeader(api, state, onPauseAt) {
  const title = h("h1", {});
  const summary = h("p", { class: "summary" });
  const actions = h("div", { class: "actions" });
  const note = h("div", { class: "control-note", role: "status" });
  const control = (label, operation, field) => controlButton(api, state, { label, operation, field, note, onPauseAt });

  const draw = () => {
    const { scenario, status, id, tag, attempt } = state.episode;
    title.replaceChildren(scenario ? scenario.codename || "Episode" : "Episode (scenario deleted)", " ", statusBadge(status));
    title.dataset.status = status;
    const calls = h("a", { href: `#/episodes/${encodeURIComponent(id)}/calls`, class: "calls-link" }, "model calls");
    summary.replaceChildren(`Episode ${id}`, ...forkOf(state.episode), tag ? ` · tag ${tag}` : "", attempt ? ` · attempt ${attempt}` : " · not started yet", " · ", calls);
    actions.replaceChildren();
    if (TERMINAL.has(status)) return;
    actions.append(
      control("Pause", "PauseEpisode", "pauseSimulation"),
      control("Step", "StepEpisode", "stepSimulation"),
      control("Resume", "ResumeEpisode", "resumeSimulation"),
      cancelButton(api, state, actions),
    );
  };
  return { nodes: [title, summary, actions, note], draw };
}
