// The transcript: turns and environment messages as list items, and the episode page's section
// that shows them to everyone or as one agent saw them.

import { h } from "../dom.js";
import { phaseTag } from "./game.js";

const ACTIONS = {
  SPEAK: (turn) => h("q", { class: "line" }, turn.argument),
  NON_VERBAL_COMMUNICATION: (turn) => h("em", { class: "line" }, "[non-verbal] ", turn.argument),
  ACTION: (turn) => h("span", { class: "line" }, h("span", { class: "tag" }, "action"), " ", turn.argument),
  LEAVE: () => h("span", { class: "line" }, "left the conversation."),
  NONE: () => h("span", { class: "line" }, "did nothing."),
};

export function turnItem(turn) {
  const draw = ACTIONS[turn.actionType] || ACTIONS.SPEAK;
  const recipients = turn.to && turn.to.length ? turn.to : null;
  return h(
    "li",
    {
      class: `turn turn-${turn.actionType.toLowerCase()}${recipients ? " private" : ""}`,
      dataset: { sequence: turn.sequence, turn: turn.turn, kind: turn.actionType },
    },
    h("span", { class: "turn-number" }, `#${turn.turn}`),
    phaseTag(turn),
    " ",
    h("strong", { class: "speaker" }, turn.speaker),
    recipients ? h("span", { class: "private-to" }, ` (privately to ${recipients.join(", ")})`) : null,
    " ",
    draw(turn),
  );
}

/** An environment message, in the transcript among the turns it came between. */
export function environmentItem(message) {
  const recipients = message.to && message.to.length ? message.to : null;
  return h(
    "li",
    {
      class: `turn environment${recipients ? " private" : ""}`,
      dataset: { sequence: message.sequence, kind: "ENVIRONMENT" },
    },
    message.turn === null || message.turn === undefined ? null : h("span", { class: "turn-number" }, `#${message.turn}`),
    " ",
    h("strong", { class: "speaker" }, "Environment"),
    recipients ? h("span", { class: "private-to" }, ` (privately to ${recipients.join(", ")})`) : null,
    " ",
    h("span", { class: "line" }, message.text),
  );
}

/** One item of an agent's view (Perspective.seen): a turn it saw, or the environment to it. */
export function seenItem(item) {
  if (!item.actionType) return environmentItem({ ...item, text: item.argument || item.text });
  return turnItem(item);
}

/** Turns and environment messages in the order they happened. */
export function transcriptItems(turns, messages) {
  const items = [...turns.map((t) => [t.sequence, turnItem(t)]), ...messages.map((m) => [m.sequence, environmentItem(m)])];
  return items.sort((a, b) => a[0] - b[0]).map(([, item]) => item);
}

/** The RUNNING change that began the current attempt, when that attempt is not the first. */
function newAttemptChange(episode) {
  if (episode.attempt < 2) return null;
  const change = episode.statusHistory.findLast((c) => c.status === "RUNNING" && c.attempt === episode.attempt);
  // Going on after a person's turn or a pause begins an attempt too, with no reason: not news.
  return change && change.reason ? change : null;
}

function resetNotice(episode, live) {
  const change = newAttemptChange(episode);
  if (!change) return null;
  const why = change.reason ? ` (${change.reason})` : "";
  const kept =
    change.resumedFromTurn
      ? `It kept the ${change.resumedFromTurn} turn(s) stored before; the transcript below continues from them.`
      : "It started over: the earlier attempt's turns were discarded and the transcript starts again.";
  return h(
    "div",
    { class: `attempt-reset${live ? " fresh" : ""}`, role: "status", dataset: { attempt: episode.attempt } },
    h("strong", {}, `Attempt ${episode.attempt} began`),
    `${why}. ${kept}`,
  );
}

/** "View as": everyone (`""`), or the seat whose view the transcript shows. */
function viewSwitch(agents, onChange) {
  const select = h(
    "select",
    { id: "view-as", name: "view-as" },
    h("option", { value: "" }, "everyone (all that happened)"),
    agents.map((agent, i) => h("option", { value: String(i) }, agent ? agent.name : `seat ${i + 1}`)),
  );
  select.addEventListener("change", () => onChange(select.value));
  return h("div", { class: "view-switch" }, h("label", { for: "view-as" }, "View as"), select);
}

/**
 * The episode page's transcript of `state.episode`: `draw(live)` shows it again, `add(item)`
 * shows a new turn or message (or reads the chosen agent's view again).
 */
export function transcriptSection(api, state) {
  let viewAs = "";
  let loads = 0;
  const title = h("h2", { id: "transcript-title" }, "Transcript");
  const notice = h("div", { class: "notice-slot" });
  const list = h("ol", { class: "transcript", "aria-live": "polite" });

  // The transcript as one agent saw it, read again whenever the episode moves on.
  const drawPerspective = async () => {
    const seat = Number(viewAs);
    const load = ++loads;
    const { id, agents } = state.episode;
    title.textContent = `Transcript as ${agents[seat] ? agents[seat].name : `seat ${seat + 1}`} saw it`;
    try {
      const data = await api.request("EpisodePerspective", { id, seat });
      if (load !== loads || viewAs !== String(seat)) return;
      const view = data.episode && data.episode.perspective;
      list.dataset.view = String(seat);
      list.replaceChildren(...(view ? view.seen.map(seenItem) : []));
    } catch (error) {
      if (load !== loads) return;
      list.replaceChildren(h("li", { class: "error", role: "alert" }, error.message));
    }
  };

  const draw = (live = false) => {
    const episode = state.episode;
    notice.replaceChildren(resetNotice(episode, live) || "");
    if (viewAs !== "") return drawPerspective();
    title.textContent = newAttemptChange(episode) ? `Transcript (attempt ${episode.attempt})` : "Transcript";
    list.dataset.view = "everyone";
    list.replaceChildren(...transcriptItems(episode.turns, episode.environmentMessages));
  };

  const add = (item) => {
    if (viewAs === "") list.append(item);
    else drawPerspective();
  };

  const choose = (value) => {
    viewAs = value;
    draw();
  };
  const node = h(
    "section",
    { class: "transcript-section", "aria-labelledby": "transcript-title" },
    title,
    viewSwitch(state.episode.agents, choose),
    notice,
    list,
    h("p", { class: "transcript-empty hint" }, "No turns yet."),
  );
  return { node, draw, add };
}
