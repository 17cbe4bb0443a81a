// A person's seat: their agent's background, goal and secret, the conversation as that agent
// sees it (seatView, then episodeEvents as the seat), whose turn it is with a countdown, a box to
// act, and the scores at the end. The seat token comes in the address once and is then kept for
// this browser tab only; it is sent as the seatToken argument and, where the tab has no API
// token, as the `Seat` credentials that allow only these operations.

import { h } from "../dom.js";
import { TERMINAL, statusBadge } from "../status.js";
import { notFound } from "./common.js";
import { actForm } from "./seat-act.js";
import { drawBanner, drawMe, drawSeatResults } from "./seat-parts.js";
import { seenItem } from "./transcript.js";

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
  const why = ["There is no episode ", h("code", {}, id), ": it may have been deleted."];
  return notFound(main, "No such episode", why, h("a", { href: "#/" }, "See the episodes"), { alertClass: "error seat-refused" });
}

/** The seat's first view, or null when the page said why there is none. */
async function openSeat(api, main, id, seat, token) {
  const retry = () => location.reload(); // a new token: the page starts again with it
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
  if (first.seatView) return first.seatView;
  if (await episodeGone(api, id)) return noEpisode(main, id);
  main.append(
    h("h1", {}, "Play a seat"),
    h("p", { class: "error seat-refused", role: "alert" }, api.mayRead() ? REFUSED : INVALID),
    tokenForm(id, seat, null, retry),
  );
  return null;
}

function seatLayout(parts, id, seat) {
  const { title, banner, streamNote, gate, conversation, form, results, me } = parts;
  const heading = h("h2", { id: "conversation-title" }, "The conversation, as you see it");
  return [
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
        h("section", { "aria-labelledby": "conversation-title" }, heading, conversation),
        form.node,
        results,
      ),
      h("div", { class: "column-side" }, me),
    ),
  ];
}

/** The stream of the seat's events, drawn as they come; returns the function that stops it. */
function followSeat(api, { id, seat, token }, state, parts, setConnection) {
  const { results, streamNote, gate, form, draw } = parts;
  return api.follow("WatchSeat", { id, seat, seatToken: token }, {
    event: (event) => {
      state.status = event.status;
      if (event.kind !== "TURN" && event.kind !== "INJECTION") state.waiting = event.status === "WAITING" ? event.waiting : null;
      if (event.perspective) state.view = event.perspective;
      draw();
      if (!TERMINAL.has(state.status)) return;
      drawSeatResults(api, results, state, { id, seat, token }).catch((error) =>
        results.replaceChildren(h("p", { class: "error", role: "alert" }, error.message)),
      );
    },
    state: (connection) => {
      setConnection(connection);
      streamNote.textContent = connection === "reconnecting" ? "The live connection dropped; reconnecting…" : "";
      streamNote.dataset.state = connection;
    },
    failed: (error) => {
      form.node.hidden = true;
      gate.replaceChildren(
        h("p", { class: "error seat-refused", role: "alert" }, error.message),
        tokenForm(id, seat, null, () => location.reload()),
      );
    },
  });
}

export async function seatPage({ api, main, setConnection }, id, seatText) {
  const seat = Number.parseInt(seatText, 10);
  const token = sessionStorage.getItem(tokenKey(id, seat));
  const first = await openSeat(api, main, id, seat, token);
  if (!first) return null;
  const state = { view: first, status: null, waiting: null };
  const names = [first.agentName, ...first.partners.map((p) => p.name)];
  const nameOf = Object.fromEntries([[seat, first.agentName], ...first.partners.map((p) => [p.seat, p.name])]);
  const parts = {
    title: h("h1", {}),
    banner: h("div", { class: "turn-banner", role: "status", "aria-live": "polite" }),
    streamNote: h("p", { class: "stream-note", role: "status" }),
    gate: h("div", { class: "gate" }),
    me: h("section", { class: "me", "aria-labelledby": "me-title" }),
    conversation: h("ol", { class: "transcript", "aria-live": "polite" }),
    results: h("section", { class: "results", "aria-labelledby": "results-title" }),
  };
  parts.draw = () => {
    const { view, status } = state;
    parts.title.replaceChildren(view.agentName, " ", status ? statusBadge(status) : "");
    if (status) parts.title.dataset.status = status;
    drawBanner(parts.banner, state, nameOf);
    drawMe(parts.me, view);
    if (view) parts.conversation.replaceChildren(...view.seen.map(seenItem));
    parts.form.draw(status, view);
  };
  parts.form = actForm(api, { id, seat, token }, names.slice(1), (perspective) => {
    state.view = perspective;
    parts.draw();
  });
  main.append(...seatLayout(parts, id, seat));
  parts.draw();
  parts.form.node.hidden = true; // until the stream says where the episode is
  const stop = followSeat(api, { id, seat, token }, state, parts, setConnection);
  return () => stop();
}
