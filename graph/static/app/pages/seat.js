// A person's seat: their agent's background, goal and secret, the conversation as that agent
// sees it (seatView, then episodeEvents as the seat), whose turn it is with a countdown, a box to
// act, and the scores at the end. The seat token comes in the address once and is then kept for
// this browser tab only; it is sent as the seatToken argument and, where the tab has no API
// token, as the `Seat` credentials that allow only these operations.

import { rangesOf, scoreChart } from "../chart.js";
import { append, clear, h, statusBadge, words } from "../dom.js";
import { goalView } from "../goal.js";
import { ACTION_TYPES, TERMINAL, chosenRecipients, countdown, recipientsField, showFieldErrors } from "./common.js";
import { seenItem } from "./episode.js";

const tokenKey = (id, seat) => `parley-seat:${id}:${seat}`;

/** The address of a seat's page; with a token, it hands the token over once. */
export function seatLink(id, seat, token) {
  const base = `#/seat/${encodeURIComponent(id)}/${seat}`;
  return token ? `${base}?token=${encodeURIComponent(token)}` : base;
}

/** On a seat's page, its token (taken out of the address); elsewhere null. */
export function seatTokenOf(path, query) {
  const match = SEAT_ROUTE.exec(path);
  return match ? takeToken(decodeURIComponent(match[1]), Number(match[2]), query) : null;
}

export const SEAT_ROUTE = /^\/seat\/([^/]+)\/(\d+)$/;

/** The token for this seat: from the address (then moved out of it), or kept from before. */
function takeToken(id, seat, query) {
  const given = query.get("token");
  if (given) {
    sessionStorage.setItem(tokenKey(id, seat), given);
    history.replaceState(null, "", seatLink(id, seat)); // no token left in the address or history
    return given;
  }
  return sessionStorage.getItem(tokenKey(id, seat));
}

function tokenForm(id, seat, message, onToken) {
  const input = h("input", { id: "seat-token", name: "seat-token", type: "password", autocomplete: "off", required: true });
  const form = h(
    "form",
    { class: "token-form seat-token-form", "aria-labelledby": "seat-token-title" },
    h("h2", { id: "seat-token-title" }, "This seat's token"),
    h("p", {}, "The link you were given to play this seat holds its token. Paste the token here if you have it on its own."),
    message ? h("p", { class: "error", role: "alert" }, message) : null,
    h("label", { for: "seat-token" }, "Seat token"),
    input,
    h("button", { type: "submit" }, "Take the seat"),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const value = input.value.trim();
    if (!value) return;
    sessionStorage.setItem(tokenKey(id, seat), value);
    onToken(value);
  });
  return form;
}

const REFUSED = "This seat token is not the token of this seat (or the seat is not played by a person).";
const INVALID =
  "This link is not valid: the episode may have been deleted, or the link is not the whole one you were given.";

/** A tab that may read episodes learns that one is gone; any other is told only INVALID. */
async function episodeGone(api, id) {
  return api.mayRead() && !(await api.request("EpisodeRowById", { id })).episode;
}

function noEpisode(main, id) {
  main.append(
    h("h1", {}, "No such episode"),
    h("p", { class: "error seat-refused", role: "alert" }, "There is no episode ", h("code", {}, id), ": it may have been deleted."),
    h("p", {}, h("a", { href: "#/" }, "See the episodes")),
  );
  return null;
}

export async function seatPage({ api, main, setConnection }, id, seatText) {
  const seat = Number.parseInt(seatText, 10);
  const retry = () => location.reload(); // a new token: the page starts again with it
  const token = sessionStorage.getItem(tokenKey(id, seat));
  if (!token) {
    if (await episodeGone(api, id)) return noEpisode(main, id);
    main.append(h("h1", {}, "Play a seat"), tokenForm(id, seat, null, retry));
    return null;
  }
  const first = await api.request("SeatView", { id, seat, seatToken: token }).catch((error) => {
    // A locked server refuses an unknown seat token (401) and a seat's token for another seat
    // (FORBIDDEN): to this tab, both are a link that is not valid.
    if (error.kind === "seat" || error.code === "FORBIDDEN") return { seatView: null };
    throw error;
  });
  if (!first.seatView) {
    if (await episodeGone(api, id)) return noEpisode(main, id);
    main.append(
      h("h1", {}, "Play a seat"),
      h("p", { class: "error seat-refused", role: "alert" }, api.mayRead() ? REFUSED : INVALID),
      tokenForm(id, seat, null, retry),
    );
    return null;
  }
  let view = first.seatView;
  const names = [view.agentName, ...view.partners.map((p) => p.name)];
  const nameOf = Object.fromEntries([[seat, view.agentName], ...view.partners.map((p) => [p.seat, p.name])]);
  let status = null;
  let waiting = null;
  let stopStream = null;

  const title = h("h1", {});
  const banner = h("div", { class: "turn-banner", role: "status", "aria-live": "polite" });
  const streamNote = h("p", { class: "stream-note", role: "status" });
  const gate = h("div", { class: "gate" });
  const me = h("section", { class: "me", "aria-labelledby": "me-title" });
  const conversation = h("ol", { class: "transcript", "aria-live": "polite" });
  const results = h("section", { class: "results", "aria-labelledby": "results-title" });

  const actionType = h("select", { id: "action-type", name: "action-type" });
  const argument = h("textarea", { id: "action-argument", name: "action-argument", rows: "3" });
  const recipients = recipientsField("action-to", "Privately to", names.slice(1));
  const send = h("button", { type: "submit" }, "Send");
  const sent = h("p", { class: "hint sent", role: "status" });
  const form = h(
    "form",
    { class: "act-form", novalidate: true, "aria-labelledby": "act-title" },
    h("h2", { id: "act-title" }, "Your move"),
    h("div", { class: "form-errors", role: "alert" }),
    h("div", { class: "field", dataset: { field: "actionType" } }, h("label", { for: "action-type" }, "Action"), actionType),
    h(
      "div",
      { class: "field", dataset: { field: "argument" } },
      h("label", { for: "action-argument" }, "What you say or do"),
      argument,
      h("p", { class: "hint" }, "Needed to speak, act or communicate without words; not to do nothing or leave."),
    ),
    recipients,
    send,
    sent,
  );
  const drawActionTypes = (allowed) => {
    const keep = actionType.value;
    actionType.replaceChildren(...allowed.map((t) => h("option", { value: t }, words(t))));
    if (allowed.includes(keep)) actionType.value = keep;
  };
  drawActionTypes(ACTION_TYPES);

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    sent.textContent = "";
    send.disabled = true;
    const input = {
      episodeId: id,
      seat,
      seatToken: token,
      actionType: actionType.value,
      argument: argument.value,
      to: chosenRecipients(recipients),
    };
    try {
      const result = (await api.request("SubmitAction", { input })).submitAction;
      showFieldErrors(form, result.userErrors);
      if (!result.userErrors.length) {
        if (result.perspective) {
          view = result.perspective; // the turn shows at once; the stream confirms it
          draw();
        }
        argument.value = "";
        for (const box of recipients.querySelectorAll("input:checked")) box.checked = false;
        sent.textContent = "Sent.";
      }
    } catch (error) {
      showFieldErrors(form, [{ field: [], message: error.message }]);
    } finally {
      send.disabled = false;
    }
  });

  const drawTitle = () => {
    title.replaceChildren(view.agentName, " ", status ? statusBadge(status) : "");
    if (status) title.dataset.status = status;
  };

  const drawBanner = () => {
    const yours = view && view.yourTurn;
    banner.dataset.yours = yours ? "true" : "false";
    banner.dataset.status = status;
    if (yours) {
      banner.replaceChildren(`Your turn (#${yours.turn}): `, countdown(yours.deadline));
      return;
    }
    if (status === "WAITING" && waiting) {
      const whom = waiting.seats.map((s) => `${nameOf[s] ?? "?"} (seat ${s + 1})`).join(", ");
      banner.replaceChildren(`Waiting for ${whom}: `, countdown(waiting.deadline));
      return;
    }
    const text = {
      null: "Connecting…",
      QUEUED: "The others are about to move: waiting for a worker…",
      RUNNING: "The others are taking their turn…",
      WAITING: "Waiting for a person…",
      PAUSED: "The episode is paused; it goes on when it is resumed.",
      EVALUATING: "The conversation is over; the judge is scoring it…",
      COMPLETED: "The episode is over: the scores are below.",
      FAILED: "The episode failed.",
      CANCELLED: "The episode was cancelled.",
    }[status];
    banner.replaceChildren(text || status);
  };

  const drawMe = () => {
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
      view.partners.length
        ? [
            h("h3", {}, "The others"),
            h(
              "ul",
              { class: "partners" },
              view.partners.map((p) => h("li", {}, h("strong", {}, p.name), ` (${words(p.relationship)})`, p.profile ? `: ${p.profile}` : "")),
            ),
          ]
        : null,
      h("details", { class: "background" }, h("summary", {}, "Everything your agent was told"), h("p", {}, view.background)),
    ]);
  };

  const drawResults = async () => {
    if (!api.mayRead()) {
      // a seat token alone reads no episode: its own scores come with its view (read again
      // when the one at hand came before them)
      if (!view || !view.score) view = (await api.request("SeatView", { id, seat, seatToken: token })).seatView;
      if (!view || !view.score) return;
      const own = { agentIndex: seat, agent: { name: view.agentName }, ...view.score };
      const chart = scoreChart(own, Object.fromEntries(view.score.ranges.map((r) => [r.dimension, [r.low, r.high]])));
      chart.classList.add("yours");
      chart.prepend(h("p", { class: "hint" }, "Your agent"));
      results.replaceChildren(h("h2", { id: "results-title" }, "Scores"), h("div", { class: "charts" }, chart));
      return;
    }
    const data = await api.request("SeatScores", { id });
    const ended = data.episode;
    if (!ended) return;
    clear(results);
    if (ended.status === "FAILED" && ended.error) {
      results.append(h("h2", { id: "results-title" }, "Failure"), h("p", { class: "error", role: "alert" }, ended.error));
    }
    if (!ended.rewards.length) return;
    const ranges = rangesOf(ended.evaluationDimensionListId, data.evaluationDimensionLists);
    const ordered = [...ended.rewards].sort((a, b) => (a.agentIndex === seat ? -1 : b.agentIndex === seat ? 1 : 0));
    append(results, [
      h("h2", { id: "results-title" }, "Scores"),
      h(
        "div",
        { class: "charts" },
        ordered.map((reward) => {
          const chart = scoreChart(reward, ranges);
          if (reward.agentIndex === seat) {
            chart.classList.add("yours");
            chart.prepend(h("p", { class: "hint" }, "Your agent"));
          }
          return chart;
        }),
      ),
      ended.terminationReason ? h("p", {}, `The conversation ended: ${ended.terminationReason}`) : null,
    ]);
  };

  const draw = () => {
    drawTitle();
    drawBanner();
    drawMe();
    if (view) conversation.replaceChildren(...view.seen.map(seenItem));
    if (view && view.yourTurn) {
      drawActionTypes(view.yourTurn.actionTypes);
      if (sent.dataset.turn !== String(view.yourTurn.turn)) sent.textContent = "";
      sent.dataset.turn = String(view.yourTurn.turn);
    }
    form.hidden = TERMINAL.has(status) || status === "EVALUATING";
  };

  const follow = () => {
    stopStream = api.follow("WatchSeat", { id, seat, seatToken: token }, {
      event: (event) => {
        status = event.status;
        if (event.kind !== "TURN" && event.kind !== "INJECTION") waiting = event.status === "WAITING" ? event.waiting : null;
        if (event.perspective) view = event.perspective;
        draw();
        if (TERMINAL.has(status)) drawResults().catch((error) => results.replaceChildren(h("p", { class: "error", role: "alert" }, error.message)));
      },
      state: (state) => {
        setConnection(state);
        streamNote.textContent = state === "reconnecting" ? "The live connection dropped; reconnecting…" : "";
        streamNote.dataset.state = state;
      },
      failed: (error) => {
        form.hidden = true;
        gate.replaceChildren(
          h("p", { class: "error seat-refused", role: "alert" }, error.message),
          tokenForm(id, seat, null, retry),
        );
      },
    });
  };

  main.append(
    title,
    h("p", { class: "summary" }, `Episode ${id}, seat ${seat + 1}`),
    banner,
    streamNote,
    gate,
    h(
      "div",
      { class: "columns seat-columns" },
      h(
        "div",
        { class: "column-main" },
        h("section", { "aria-labelledby": "conversation-title" }, h("h2", { id: "conversation-title" }, "The conversation, as you see it"), conversation),
        form,
        results,
      ),
      h("div", { class: "column-side" }, me),
    ),
  );
  draw();
  form.hidden = true; // until the stream says where the episode is
  follow();
  return () => {
    if (stopStream) stopStream();
  };
}
