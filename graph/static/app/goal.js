// A goal as a person reads it: Sotopia's hint tags (<extra_info>, <clarification_hint>,
// <strategy_hint>) shown as labelled hints under the goal's own words, never as raw tags.

import { h } from "./dom.js";

export const HINTS = {
  extra_info: "Extra information",
  clarification_hint: "Clarification hint",
  strategy_hint: "Strategy hint",
};

const TAG = new RegExp(`<(/?)(${Object.keys(HINTS).join("|")})>`, "g");

/**
 * The goal's parts in order: {hint: null, text} for its own words, {hint: "extra_info", text}
 * for a hint. An unclosed hint runs to the next hint or the end; a stray closing tag is dropped.
 */
export function goalParts(goal) {
  const parts = [];
  let open = null;
  let at = 0;
  const push = (text) => {
    const trimmed = text.replace(/\s+/g, " ").trim();
    if (trimmed) parts.push({ hint: open, text: trimmed });
  };
  for (const match of (goal || "").matchAll(TAG)) {
    push(goal.slice(at, match.index));
    at = match.index + match[0].length;
    open = match[1] ? null : match[2];
  }
  push((goal || "").slice(at));
  return parts;
}

/** The goal as an element (a span, so it fits in any cell): its words, each hint labelled. */
export function goalView(goal) {
  const parts = goalParts(goal);
  return h(
    "span",
    { class: "goal" },
    parts.map((part) =>
      part.hint
        ? h("span", { class: "goal-hint", dataset: { hint: part.hint } }, h("span", { class: "goal-hint-label" }, `${HINTS[part.hint]}:`), " ", part.text)
        : h("span", { class: "goal-text" }, part.text),
    ),
  );
}

/** Under a box where goals are written: how their hints will be shown, following the typing.
 * `goalsOf` splits the box's text into goals (one goal by default). Hidden without hints. */
export function goalPreview(control, goalsOf = (text) => [text]) {
  const preview = h("div", { class: "goal-preview", "aria-live": "polite" });
  const draw = () => {
    const goals = goalsOf(control.value);
    const views = goals.map((goal) => goalView(goal));
    const shown = goals.length > 1 ? h("ol", { class: "goal-list" }, views.map((view) => h("li", {}, view))) : views;
    preview.replaceChildren(h("p", { class: "hint" }, "Shown as:"), ...[shown].flat());
    preview.hidden = !goals.some((goal) => goalParts(goal).some((part) => part.hint));
  };
  control.addEventListener("input", draw);
  draw();
  return preview;
}
