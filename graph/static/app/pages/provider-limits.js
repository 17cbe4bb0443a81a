// The providers' limits every Parley process shares (the models file states them), and how
// much of each is in use now: read again every few seconds while the page shows them.

import { clear, h } from "../dom.js";

const EVERY_MS = 3000;

function used(now, most) {
  return most === null ? String(now) : `${now} of ${most}`;
}

function limitRow(limit) {
  const held = limit.heldFor > 0 ? `held ${limit.heldFor.toFixed(1)} s` : "";
  return h(
    "tr",
    {},
    h("th", { scope: "row" }, h("code", {}, limit.key), h("div", { class: "limit-models" }, limit.models.join(", "))),
    h("td", { "data-label": "Requests this minute" }, used(limit.requestsThisMinute, limit.requestsPerMinute)),
    h("td", { "data-label": "Tokens this minute" }, used(limit.tokensThisMinute, limit.tokensPerMinute)),
    h("td", { "data-label": "In flight" }, used(limit.inFlight, limit.maxInFlight)),
    h("td", { "data-label": "429s seen" }, String(limit.rateLimited), held ? h("div", { class: "limit-held" }, held) : null),
  );
}

function limitsTable(limits) {
  if (!limits.length) return h("p", { class: "muted" }, "The models file states no provider limits.");
  return h(
    "table",
    { class: "provider-limits" },
    h("thead", {}, h("tr", {}, ...["Key and models", "Requests this minute", "Tokens this minute", "In flight", "429s seen"].map((t) => h("th", { scope: "col" }, t)))),
    h("tbody", {}, ...limits.map(limitRow)),
  );
}

/** The panel and a function that stops reading it again. */
export function providerLimitsPanel(api) {
  const box = h("div", { class: "provider-limits-box", "aria-live": "polite" });
  let timer = null;
  let stopped = false;
  const read = async () => {
    try {
      const { providerLimits } = await api.request("ProviderLimits");
      clear(box).append(limitsTable(providerLimits));
    } catch {
      // the next reading tries again
    }
    if (!stopped) timer = setTimeout(read, EVERY_MS);
  };
  read();
  return {
    box,
    stop: () => {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
