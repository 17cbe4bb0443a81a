// The app: a hash router over the pages, and the token gate in front of them.

import { Api, ApiError, TOKEN_REFUSED, token } from "./api.js";
import { clear, currentRoute, h } from "./dom.js";
import { loadOperations } from "./operations.js";
import { RATE_ROUTE, raterTokenOf } from "./pages/rate.js";
import { SEAT_ROUTE, seatTokenOf } from "./pages/seat.js";
import { ROUTES } from "./routes.js";

const main = document.getElementById("main");
const connection = document.getElementById("connection");
/** Whether the server has tokens: it says so in the page, so none is asked for in vain. */
const TOKENS_REQUIRED = document.querySelector('meta[name="parley-tokens"]')?.content === "required";

let stopPage = null;
let rendering = 0;

function setConnection(state) {
  const labels = {
    connecting: "Connecting…",
    live: "Live",
    reconnecting: "Connection lost: reconnecting…",
    ended: "",
  };
  connection.textContent = labels[state] ?? state;
  connection.dataset.state = state;
}

export function errorBox(error) {
  return h("div", { class: "error", role: "alert" }, error.message || String(error));
}

async function render(api) {
  const turn = ++rendering;
  if (stopPage) stopPage();
  stopPage = null;
  setConnection("ended");
  const [path, query] = currentRoute();
  api.seatToken = seatTokenOf(path, query);
  api.raterToken = raterTokenOf(path, query);
  const ownToken = SEAT_ROUTE.test(path) || RATE_ROUTE.test(path); // a seat's or a rater's page asks for its own
  if (!api.mayRead() && !ownToken) return tokenGate(api, null);
  for (const [pattern, page, section] of ROUTES) {
    const match = pattern.exec(path);
    if (!match) continue;
    for (const link of document.querySelectorAll("nav a[data-section]")) {
      if (link.dataset.section === section) link.setAttribute("aria-current", "page");
      else link.removeAttribute("aria-current");
    }
    clear(main).append(h("p", { class: "loading" }, "Loading…"));
    const page_ = h("div", { class: "page" });
    const context = { api, query, setConnection, errorBox, main: page_ };
    try {
      const stop = await page(context, ...match.slice(1).map(decodeURIComponent));
      if (turn !== rendering) {
        if (stop) stop();
        return;
      }
      stopPage = stop || null;
      clear(main).append(page_);
      if (turn > 1) main.focus({ preventScroll: true }); // a new page: start reading at its top
    } catch (error) {
      if (turn !== rendering) return;
      if (error instanceof ApiError && error.kind === "auth") return; // the gate shows itself
      clear(main).append(page_, errorBox(error));
    }
    return;
  }
  clear(main).append(
    h("h1", {}, "Not found"),
    h("p", {}, "There is no page at ", h("code", {}, path), ". ", h("a", { href: "#/" }, "See the episodes.")),
  );
}

function tokenGate(api, message) {
  if (stopPage) stopPage();
  stopPage = null;
  rendering += 1;
  const input = h("input", {
    id: "token",
    name: "token",
    type: "password",
    autocomplete: "current-password",
    required: true,
    "aria-describedby": message ? "token-error" : null,
  });
  const form = h(
    "form",
    { class: "token-form", "aria-labelledby": "token-title" },
    h("h1", { id: "token-title" }, "A token is needed"),
    h("p", {}, "This Parley server asks for a bearer token. It is kept for this browser tab only."),
    message ? h("p", { id: "token-error", class: "error", role: "alert" }, message) : null,
    h("label", { for: "token" }, "Token"),
    input,
    h("button", { type: "submit" }, "Continue"),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    token.set(input.value.trim());
    await enter(api);
  });
  clear(main).append(form);
  input.focus();
}

async function enter(api) {
  if (api.mayRead()) {
    try {
      await api.request("Probe"); // a token kept from before may no longer be one
    } catch (error) {
      if (error instanceof ApiError && error.kind === "auth") return; // onAuthError shows the gate
      clear(main).append(errorBox(error));
      return;
    }
  }
  await render(api);
}

async function start() {
  const operations = await loadOperations("app/operations.graphql");
  const api = new Api(operations, "graphql", TOKENS_REQUIRED);
  api.onAuthError = (error) => {
    token.clear();
    tokenGate(api, error.refused ? TOKEN_REFUSED : null);
  };
  window.addEventListener("hashchange", () => render(api));
  api.seatToken = seatTokenOf(...currentRoute()); // a participant's link needs no API token
  api.raterToken = raterTokenOf(...currentRoute()); // nor does a rater's
  await enter(api);
}

start().catch((error) => clear(main).append(errorBox(error)));
