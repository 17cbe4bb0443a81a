// One episode, live: setup, status timeline, the transcript as it grows, then the scores.

import { rangesOf, scoreChart } from "../chart.js";
import { append, clear, h, statusBadge, when, words } from "../dom.js";
import { goalView } from "../goal.js";
import { TERMINAL, chosenRecipients, countdown, recipientsField } from "./common.js";
import { drawGame, gameSection, phaseTag, refreshGame } from "./game.js";

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

/** The names of the agents in `seats` ("Alice (seat 1)"). */
export function seatNames(agents, seats) {
  return seats.map((seat) => `${agents[seat] ? agents[seat].name : "?"} (seat ${seat + 1})`).join(", ");
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

export async function episodePage({ api, main, setConnection }, id) {
  const first = await api.request("EpisodeDetail", { id });
  if (!first.episode) {
    main.append(
      h("h1", {}, "Episode not found"),
      h("p", { class: "error", role: "alert" }, "There is no episode with the id ", h("code", {}, id), ". It may have been deleted, or the address is mistyped."),
      h("p", {}, h("a", { href: "#/" }, "See all episodes")),
    );
    return null;
  }
  let episode = first.episode;
  const lists = first.evaluationDimensionLists;

  const title = h("h1", {});
  const controlNote = h("div", { class: "control-note", role: "status" });
  let viewAs = ""; // "" for everyone, else the seat whose view the transcript shows
  let perspectiveLoads = 0;
  const summary = h("p", { class: "summary" });
  const actions = h("div", { class: "actions" });
  const progress = h("div", { class: "progress" });
  const setup = h("section", { class: "setup", "aria-labelledby": "setup-title" });
  const game = gameSection();
  const timeline = h("ol", { class: "timeline" });
  const notice = h("div", { class: "notice-slot" });
  const transcriptTitle = h("h2", { id: "transcript-title" }, "Transcript");
  const transcript = h("ol", { class: "transcript", "aria-live": "polite" });
  const scores = h("section", { class: "results", "aria-labelledby": "results-title" });
  const streamNote = h("p", { class: "stream-note", role: "status" });

  const drawHeader = () => {
    const scenario = episode.scenario;
    title.replaceChildren(scenario ? scenario.codename || "Episode" : "Episode (scenario deleted)", " ", statusBadge(episode.status));
    title.dataset.status = episode.status;
    summary.replaceChildren(
      `Episode ${episode.id}`,
      episode.tag ? ` · tag ${episode.tag}` : "",
      episode.attempt ? ` · attempt ${episode.attempt}` : " · not started yet",
    );
    actions.replaceChildren();
    if (!TERMINAL.has(episode.status)) {
      const control = (label, operation, field, allowed) => {
        const button = h("button", { type: "button", class: "control", disabled: !allowed.includes(episode.status) }, label);
        button.addEventListener("click", async () => {
          button.disabled = true;
          controlNote.replaceChildren();
          try {
            const result = (await api.request(operation, { id: episode.id }))[field];
            if (result.userErrors.length) {
              controlNote.append(h("p", { class: "error", role: "alert" }, result.userErrors.map((e) => e.message).join("; ")));
            } else if (result.episode) {
              episode.pauseAt = result.episode.pauseAt;
              drawProgress();
            }
          } catch (error) {
            controlNote.append(h("p", { class: "error", role: "alert" }, error.message));
          }
          button.disabled = !allowed.includes(episode.status);
        });
        return button;
      };
      actions.append(
        control("Pause", "PauseEpisode", "pauseSimulation", ["QUEUED", "WAITING", "RUNNING"]),
        control("Step", "StepEpisode", "stepSimulation", ["PAUSED", "RUNNING"]),
        control("Resume", "ResumeEpisode", "resumeSimulation", ["PAUSED"]),
      );
      const cancel = h("button", { type: "button", class: "danger" }, "Cancel episode");
      cancel.addEventListener("click", async () => {
        cancel.disabled = true;
        try {
          const result = await api.request("CancelEpisode", { id: episode.id });
          const errors = result.cancelSimulation.userErrors;
          if (errors.length) actions.append(h("p", { class: "error", role: "alert" }, errors.map((e) => e.message).join("; ")));
        } catch (error) {
          actions.append(h("p", { class: "error", role: "alert" }, error.message));
          cancel.disabled = false;
        }
      });
      actions.append(cancel);
    }
  };

  const drawProgress = () => {
    const { turn, maxTurns } = episode.progress;
    const waiting = episode.status === "WAITING" ? episode.waiting : null;
    const pausing = episode.status === "RUNNING" && episode.pauseAt !== null && episode.pauseAt !== undefined;
    const phase = {
      QUEUED: "Waiting for a worker",
      RUNNING: `Turn ${turn} of ${maxTurns}${pausing ? ` (pauses before ${episode.pauseAt ? `turn #${episode.pauseAt}` : "its next turn"})` : ""}`,
      WAITING: waiting ? `Turn #${waiting.turn} of ${maxTurns}: waiting for ${seatNames(episode.agents, waiting.seats)}` : "Waiting for a person",
      PAUSED: `Paused after ${turn} of ${maxTurns} turns: resume or step to go on`,
      EVALUATING: "The judge is scoring",
      COMPLETED: `Done: ${turn} of ${maxTurns} turns, ${episode.judgeError ? "not judged" : "scored"}`,
      FAILED: `Failed after ${turn} of ${maxTurns} turns`,
      CANCELLED: `Cancelled after ${turn} of ${maxTurns} turns`,
    }[episode.status];
    progress.dataset.status = episode.status;
    progress.replaceChildren(
      h("label", { for: "episode-progress" }, phase, waiting ? [" · ", countdown(waiting.deadline)] : null),
      h("progress", { id: "episode-progress", max: maxTurns, value: turn }, `${turn} / ${maxTurns}`),
    );
  };

  const drawSetup = () => {
    const scenario = episode.scenario;
    const goals = scenario ? scenario.agentGoals : [];
    const rows = episode.agentIds.map((agentId, i) => {
      const agent = episode.agents[i];
      return h(
        "tr",
        {},
        h("td", {}, String(i + 1)),
        h(
          "td",
          {},
          agent ? h("a", { href: `#/agents/${encodeURIComponent(agent.id)}` }, agent.name) : `${agentId} (deleted)`,
          agent ? h("span", { class: "who" }, `${agent.occupation || ""}${agent.age ? ", " + agent.age : ""}`) : null,
        ),
        h(
          "td",
          {},
          episode.humanSeats.some((s) => s.seat === i)
            ? h("span", { class: "human" }, "a person")
            : h("code", {}, episode.agentModels[i] || episode.agentModels[0] || ""),
        ),
      );
    });
    const goalItems = episode.agentIds.map((agentId, i) => [
      h("dt", {}, `${episode.agents[i] ? episode.agents[i].name : agentId} (seat ${i + 1})`),
      h("dd", {}, goals[i] ? goalView(goals[i]) : "—"),
    ]);
    const relationships = episode.relationships.map((r) =>
      h(
        "li",
        {},
        `${r.agent ? r.agent.name : "?"} and ${r.otherAgent ? r.otherAgent.name : "?"}: `,
        h("strong", {}, words(r.relationship)),
        r.backgroundStory ? ` (${r.backgroundStory})` : "",
      ),
    );
    const list = lists.find((l) => l.id === episode.evaluationDimensionListId);
    setup.replaceChildren(
      h("h2", { id: "setup-title" }, "Setup"),
      scenario
        ? h("p", { class: "scenario" }, h("a", { href: `#/scenarios/${encodeURIComponent(scenario.id)}` }, scenario.codename || "Scenario"), ": ", scenario.scenario)
        : h("p", {}, `Scenario ${episode.scenarioId} was deleted.`),
      h(
        "table",
        { class: "agents" },
        h("caption", {}, "Agents, in seat order"),
        h(
          "thead",
          {},
          h(
            "tr",
            {},
            ["Seat", "Agent", "Model"].map((t) => h("th", { scope: "col", class: t.toLowerCase() }, t)),
          ),
        ),
        h("tbody", {}, rows),
      ),
      h("h3", {}, "Goals"),
      h("dl", { class: "goals" }, goalItems),
      h("h3", {}, "Relationship"),
      relationships.length
        ? h("ul", { class: "relationships" }, relationships)
        : h("p", {}, scenario ? `None stored; the scenario assumes ${words(scenario.relationship)}.` : "None stored."),
      h(
        "dl",
        { class: "facts" },
        h("dt", {}, "Judge"),
        h("dd", {}, h("code", {}, episode.judgeModel || "")),
        h("dt", {}, "Turn order"),
        h("dd", {}, words(episode.turnOrder)),
        h("dt", {}, "Dimensions"),
        h("dd", {}, list ? list.name : "Sotopia's seven"),
        h("dt", {}, "Created"),
        h("dd", {}, when(episode.createdAt)),
      ),
    );
  };

  const drawTimeline = () => {
    timeline.replaceChildren(
      ...episode.statusHistory.map((change) =>
        h(
          "li",
          { dataset: { status: change.status, attempt: change.attempt } },
          statusBadge(change.status),
          " ",
          h("time", { datetime: change.at }, when(change.at)),
          change.attempt ? ` · attempt ${change.attempt}` : "",
          change.resumedFromTurn ? ` · resumed from turn ${change.resumedFromTurn}` : "",
          change.reason ? h("span", { class: "reason" }, ` · ${change.reason}`) : "",
        ),
      ),
    );
  };

  const drawTranscript = (live = false) => {
    notice.replaceChildren(resetNotice(episode, live) || "");
    if (viewAs !== "") return drawPerspective();
    transcriptTitle.textContent = newAttemptChange(episode) ? `Transcript (attempt ${episode.attempt})` : "Transcript";
    transcript.dataset.view = "everyone";
    transcript.replaceChildren(...transcriptItems(episode.turns, episode.environmentMessages));
  };

  // The transcript as one agent saw it, read again whenever the episode moves on.
  const drawPerspective = async () => {
    const seat = Number(viewAs);
    const load = ++perspectiveLoads;
    const name = episode.agents[seat] ? episode.agents[seat].name : `seat ${seat + 1}`;
    transcriptTitle.textContent = `Transcript as ${name} saw it`;
    try {
      const data = await api.request("EpisodePerspective", { id: episode.id, seat });
      if (load !== perspectiveLoads || viewAs !== String(seat)) return;
      const view = data.episode && data.episode.perspective;
      transcript.dataset.view = String(seat);
      transcript.replaceChildren(...(view ? view.seen.map(seenItem) : []));
    } catch (error) {
      if (load !== perspectiveLoads) return;
      transcript.replaceChildren(h("li", { class: "error", role: "alert" }, error.message));
    }
  };

  const viewSelect = h(
    "select",
    { id: "view-as", name: "view-as" },
    h("option", { value: "" }, "everyone (all that happened)"),
    episode.agents.map((agent, i) => h("option", { value: String(i) }, agent ? agent.name : `seat ${i + 1}`)),
  );
  viewSelect.addEventListener("change", () => {
    viewAs = viewSelect.value;
    drawTranscript();
  });
  const viewSwitch = h("div", { class: "view-switch" }, h("label", { for: "view-as" }, "View as"), viewSelect);

  const injectText = h("textarea", { id: "inject-text", name: "inject-text", rows: "2", required: true });
  const injectTo = recipientsField("inject-to", "For", episode.agents.map((a, i) => (a ? a.name : `seat ${i + 1}`)));
  const injectNote = h("div", { class: "form-errors", role: "alert" });
  const injectButton = h("button", { type: "submit" }, "Inject");
  const injectForm = h(
    "form",
    { class: "inject-form", "aria-labelledby": "inject-title" },
    h("h2", { id: "inject-title" }, "Environment message"),
    h("div", { class: "field", dataset: { field: "text" } }, h("label", { for: "inject-text" }, "Message"), injectText),
    injectTo,
    injectNote,
    injectButton,
    h("p", { class: "hint" }, "The agents see it from their next turn."),
  );
  injectForm.addEventListener("submit", async (event) => {
    event.preventDefault();
    injectNote.replaceChildren();
    injectButton.disabled = true;
    try {
      const input = { episodeId: episode.id, text: injectText.value, to: chosenRecipients(injectTo) };
      const result = (await api.request("InjectEvent", { input })).injectEvent;
      if (result.userErrors.length) {
        injectNote.append(...result.userErrors.map((e) => h("p", {}, e.message)));
      } else {
        injectText.value = "";
        for (const box of injectTo.querySelectorAll("input:checked")) box.checked = false;
      }
    } catch (error) {
      injectNote.append(h("p", {}, error.message));
    } finally {
      injectButton.disabled = false;
    }
  });

  // Judge an episode that completed without scores again, with its own judge and dimensions:
  // the scores that judgement gives become the episode's. Follows the re-judging to its end.
  const judgeAgain = async (button, note) => {
    button.disabled = true;
    note.replaceChildren("Asking for a new judgement…");
    try {
      const input = {
        episodeIds: [episode.id],
        judgeModel: episode.judgeModel,
        evaluationDimensionListId: episode.evaluationDimensionListId,
      };
      const result = (await api.request("RejudgeEpisode", { input })).rejudgeEpisodes;
      if (result.userErrors.length) {
        note.replaceChildren(h("p", { class: "error", role: "alert" }, result.userErrors.map((e) => e.message).join("; ")));
        button.disabled = false;
        return;
      }
      const rejudging = result.rejudging.id;
      for (;;) {
        await new Promise((resolve) => setTimeout(resolve, 1000));
        if (!note.isConnected) return; // the page was left
        const { progress } = (await api.request("RejudgingProgress", { id: rejudging })).rejudging;
        if (progress.completed || progress.failed) break;
        note.replaceChildren(progress.running ? "The judge is scoring…" : "Waiting for a worker…");
      }
      const data = await api.request("EpisodeDetail", { id: episode.id });
      if (data.episode) episode = data.episode;
      drawAll();
      const evaluation = episode.evaluations.find((e) => e.id === rejudging);
      if (episode.judgeError && evaluation && evaluation.error) {
        scores.append(h("p", { class: "error", role: "alert" }, `The judge failed again: ${evaluation.error}`));
      }
    } catch (error) {
      note.replaceChildren(h("p", { class: "error", role: "alert" }, error.message));
      button.disabled = false;
    }
  };

  const drawUnjudged = () => {
    const note = h("div", { class: "rejudge-note", role: "status" });
    const button = h("button", { type: "button", class: "rejudge" }, "Judge again");
    button.addEventListener("click", () => judgeAgain(button, note));
    scores.append(
      h("h2", { id: "results-title" }, "Not judged"),
      h(
        "div",
        { class: "unjudged" },
        h("p", {}, h("strong", {}, "The judge gave no scores: "), episode.judgeError),
        h("p", {}, "The conversation is kept. Judged again by its judge (", h("code", {}, episode.judgeModel || ""), "), the scores it gives become this episode's."),
        h("div", { class: "actions" }, button),
        note,
      ),
    );
  };

  const drawResults = () => {
    clear(scores);
    if (episode.status === "FAILED" && episode.error) {
      scores.append(h("h2", { id: "results-title" }, "Failure"), h("p", { class: "error", role: "alert" }, episode.error));
    }
    if (episode.status === "COMPLETED" && episode.judgeError) {
      drawUnjudged();
      return;
    }
    if (!episode.rewards.length) return;
    const ranges = rangesOf(episode.evaluationDimensionListId, lists);
    append(scores, [
      h("h2", { id: "results-title" }, "Scores"),
      h("div", { class: "charts" }, episode.rewards.map((reward) => scoreChart(reward, ranges))),
      h("h3", {}, "The judge's reasoning"),
      h("div", { class: "reasoning" }, episode.reasoning.split(/\n+/).map((para) => h("p", {}, para))),
      episode.terminationReason ? h("p", {}, `The conversation ended: ${episode.terminationReason}`) : null,
    ]);
  };

  const drawAll = (live = false) => {
    drawHeader();
    drawProgress();
    drawSetup();
    drawTimeline();
    drawTranscript(live);
    drawResults();
    drawGame(game, episode.game);
    injectForm.hidden = TERMINAL.has(episode.status);
  };

  main.append(
    title,
    summary,
    actions,
    controlNote,
    progress,
    streamNote,
    h(
      "div",
      { class: "columns" },
      h(
        "div",
        { class: "column-main" },
        h(
          "section",
          { class: "transcript-section", "aria-labelledby": "transcript-title" },
          transcriptTitle,
          viewSwitch,
          notice,
          transcript,
          h("p", { class: "transcript-empty hint" }, "No turns yet."),
        ),
        injectForm,
        scores,
      ),
      h(
        "div",
        { class: "column-side" },
        game,
        setup,
        h("section", { "aria-labelledby": "timeline-title" }, h("h2", { id: "timeline-title" }, "Status timeline"), timeline),
      ),
    ),
  );
  drawAll();
  if (TERMINAL.has(episode.status)) return null;

  // Events are applied in sequence order exactly once: anything at or below the sequence the
  // page already shows is skipped. A gap (a snapshot newer than the page, an expired cursor)
  // re-reads the episode; events that arrive meanwhile wait and are applied after it.
  let pending = null;
  let stopped = false;
  const refresh = async (live = false) => {
    if (pending) return;
    pending = [];
    for (let tries = 0; !stopped; tries += 1) {
      try {
        const data = await api.request("EpisodeDetail", { id });
        if (data.episode) episode = data.episode;
        drawAll(live);
        break;
      } catch (error) {
        streamNote.textContent = `Could not re-read the episode (${error.message}); trying again…`;
        await new Promise((resolve) => setTimeout(resolve, Math.min(4000, 250 * 2 ** tries)));
      }
    }
    const waiting = pending;
    pending = null;
    waiting.forEach(apply);
  };

  const apply = (event) => {
    if (event.sequence <= episode.sequence) return;
    if (event.kind === "SNAPSHOT" || event.kind === "CURSOR_EXPIRED") {
      refresh();
      return;
    }
    episode.sequence = event.sequence;
    if (event.kind === "TURN") {
      episode.turns.push(event.turn);
      episode.progress.turn = Math.max(episode.progress.turn, event.turn.turn + 1);
      if (viewAs === "") transcript.append(turnItem(event.turn));
      else drawPerspective();
      drawProgress();
      if (episode.game) refreshGame(api, id, game);
      return;
    }
    if (event.kind === "INJECTION") {
      if (!event.environmentMessage) return;
      episode.environmentMessages.push(event.environmentMessage);
      if (viewAs === "") transcript.append(environmentItem(event.environmentMessage));
      else drawPerspective();
      return;
    }
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
      drawTranscript(true);
    }
    drawHeader();
    drawProgress();
    drawTimeline();
    if (TERMINAL.has(event.status)) refresh();
  };

  const stop = api.follow("WatchEpisode", { id }, {
    event: (event) => (pending ? pending.push(event) : apply(event)),
    state: (state) => {
      setConnection(state);
      streamNote.textContent = state === "reconnecting" ? "The live connection dropped; reconnecting and resuming from the last event…" : "";
      streamNote.dataset.state = state;
    },
    failed: (error) => {
      streamNote.textContent = error.message;
      streamNote.classList.add("error");
    },
  });
  return () => {
    stopped = true;
    stop();
  };
}
