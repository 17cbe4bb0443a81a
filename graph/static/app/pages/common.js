// Pieces several pages share: episode rows, paging, field errors, the page of a missing record.

import { h, when } from "../dom.js";
import { statusBadge } from "../status.js";

// An agent's fields, for its form and its draft: [name, label, kind, options].
export const AGENT_FIELDS = [
  ["firstName", "First name", "text", { required: true }],
  ["lastName", "Last name", "text", { required: true }],
  ["age", "Age", "int"],
  ["occupation", "Occupation", "text"],
  ["gender", "Gender", "text"],
  ["genderPronoun", "Pronouns", "text"],
  ["publicInfo", "Public information", "textarea"],
  ["bigFive", "Big Five", "text"],
  ["moralValues", "Moral values (comma-separated)", "list"],
  ["schwartzPersonalValues", "Schwartz values (comma-separated)", "list"],
  ["personalityAndValues", "Personality and values", "textarea"],
  ["decisionMakingStyle", "Decision-making style", "text"],
  ["secret", "Secret", "textarea"],
  ["mbti", "MBTI", "text"],
  ["modelId", "Default model", "text"],
  ["tag", "Tag", "text"],
];

const REASON_LENGTH = 70;

/** Each agent's overall score in seat order ("3.14 · 2.71"), named in full on hover. */
function overallScores(episode) {
  const name = (i) => (episode.agents[i] ? episode.agents[i].name : `seat ${i + 1}`);
  const score = (reward) => (reward.overall === null ? "–" : reward.overall.toFixed(2));
  const rewards = [...episode.rewards].sort((a, b) => a.agentIndex - b.agentIndex);
  const full = rewards.map((r) => `${name(r.agentIndex)} ${score(r)}`).join(", ");
  return h("span", { class: "overall-scores", title: `Overall score per agent: ${full}` }, "overall ", rewards.map(score).join(" · "));
}

/** Why an episode failed, cut to a line; the whole reason on hover. */
function failureReason(error) {
  const short = error.length > REASON_LENGTH ? `${error.slice(0, REASON_LENGTH - 1).trimEnd()}…` : error;
  return h("span", { class: "failure-reason", title: error }, short);
}

export function episodeRow(episode) {
  const agents = episode.agents.map((a) => (a ? a.name : "(deleted)")).join(", ");
  return h(
    "tr",
    { dataset: { episode: episode.id } },
    h("td", {}, h("a", { href: `#/episodes/${encodeURIComponent(episode.id)}` }, when(episode.createdAt) || episode.id)),
    h("td", {}, episode.scenario ? episode.scenario.codename || episode.scenario.id : "(deleted)"),
    h("td", {}, agents),
    h("td", { class: "status-cell" }, statusBadge(episode.status)),
    h("td", { dataset: { label: "turns" } }, `${episode.progress.turn} / ${episode.progress.maxTurns}`),
    h("td", { class: "result" }, episode.error ? failureReason(episode.error) : episode.rewards.length ? overallScores(episode) : ""),
    h("td", { dataset: { label: episode.tag ? "tag" : null } }, episode.tag || ""),
  );
}

export function episodeTable(episodes, caption) {
  return h(
    "table",
    { class: "episodes" },
    caption ? h("caption", {}, caption) : null,
    h(
      "thead",
      {},
      h("tr", {}, ["Created", "Scenario", "Agents", "Status", "Turns", "Outcome", "Tag"].map((t) => h("th", { scope: "col" }, t))),
    ),
    h("tbody", {}, episodes.map(episodeRow)),
  );
}

/** Previous / next links over cursor pages; `stack` holds the `after` of each earlier page. */
export function pager(link, params, pageInfo, stack) {
  const previous = stack.length
    ? h("a", { href: link({ ...params, after: stack.at(-1), back: stack.length > 1 ? JSON.stringify(stack.slice(0, -1)) : null }), rel: "prev" }, "← Previous page")
    : null;
  const next = pageInfo.hasNextPage
    ? h(
        "a",
        { href: link({ ...params, after: pageInfo.endCursor, back: JSON.stringify([...stack, params.after || null]) }), rel: "next" },
        "Next page →",
      )
    : null;
  return h("nav", { class: "pager", "aria-label": "Pages" }, previous, next);
}

/** Items per page: the address's `first` (1..100), or 25. */
export function pageSize(query) {
  const wanted = Number.parseInt(query.get("first") || "", 10);
  return Number.isInteger(wanted) ? Math.min(100, Math.max(1, wanted)) : 25;
}

/** The `after` cursors of the pages before this one (null for the first page), from `back`. */
export function backStack(query) {
  try {
    const back = JSON.parse(query.get("back") || "[]");
    return Array.isArray(back) ? back : [];
  } catch {
    return [];
  }
}

/** Draw the page of a record that is not there: a heading, `why` (the parts of one alert) and a link onward; null. */
export function notFound(main, heading, why, link, { alertClass = "error" } = {}) {
  main.append(h("h1", {}, heading), h("p", { class: alertClass, role: "alert" }, ...why), h("p", {}, link));
  return null;
}

/** A labelled form control, with its hint below it; `name` is the input field it sets. */
export function field(name, label, control, hint) {
  return h(
    "div",
    { class: "field", dataset: { field: name } },
    h("label", { for: control.id }, label),
    control,
    hint ? h("p", { class: "hint", id: `${control.id}-hint` }, hint) : null,
  );
}

/**
 * Show userErrors next to their fields: each error's path (["input", "maxTurns", ...]) names
 * the element with data-field="maxTurns"; the rest go to the form's own alert.
 */
export function showFieldErrors(form, errors) {
  for (const old of form.querySelectorAll(".field-error")) old.remove();
  for (const field of form.querySelectorAll("[aria-invalid]")) field.removeAttribute("aria-invalid");
  const general = form.querySelector(".form-errors");
  general.replaceChildren();
  for (const error of errors) {
    const name = error.field[0] === "input" || error.field[0] === "inputs" ? error.field[1] : error.field[0];
    const target = name ? form.querySelector(`[data-field="${CSS.escape(name)}"]`) : null;
    if (!target) {
      general.append(h("p", { role: "alert" }, error.message));
      continue;
    }
    const id = `${target.id || name}-error`;
    const message = h("p", { class: "field-error", id, role: "alert", dataset: { for: name } }, error.message);
    const control = target.matches("input, select, textarea") ? target : target.querySelector("input, select, textarea");
    if (control) {
      control.setAttribute("aria-invalid", "true");
      control.setAttribute("aria-describedby", id);
    }
    (target.closest(".field") || target).append(message);
  }
  const first = form.querySelector("[aria-invalid]");
  if (first) first.focus();
}

/** "m:ss left" until an ISO deadline, or that the time is up. */
export function timeLeft(deadline, now = Date.now()) {
  const seconds = Math.max(0, Math.ceil((Date.parse(deadline) - now) / 1000));
  if (seconds === 0) return "time is up";
  const minutes = Math.floor(seconds / 60);
  return `${minutes}:${String(seconds % 60).padStart(2, "0")} left`;
}

/** A span that counts down to `deadline` each second while it is in the page. */
export function countdown(deadline) {
  const span = h("span", { class: "countdown", dataset: { deadline } }, timeLeft(deadline));
  const timer = setInterval(() => {
    if (!span.isConnected) return clearInterval(timer);
    span.textContent = timeLeft(deadline);
  }, 1000);
  return span;
}

/** Checkboxes naming agents, for private recipients; none ticked means everyone. */
export function recipientsField(id, legend, names) {
  return h(
    "fieldset",
    { class: "field recipients", id, dataset: { field: "to" } },
    h("legend", {}, legend),
    names.map((name, i) => {
      const box = h("input", { type: "checkbox", name: id, value: name, id: `${id}-${i}` });
      return h("span", { class: "recipient" }, box, h("label", { for: box.id }, name));
    }),
    h("p", { class: "hint" }, "None ticked: everyone."),
  );
}

export function chosenRecipients(fieldset) {
  return [...fieldset.querySelectorAll("input:checked")].map((box) => box.value);
}

/** Why an agreement figure (an Estimate) or its interval is null, in words. */
export const REASONS = {
  TOO_FEW_UNITS: "too few units",
  TOO_FEW_RATERS: "too few raters",
  TOO_FEW_MODELS: "too few models",
  NO_VARIATION: "no variation",
  NO_RESIDUAL: "no residual",
  UNBOUNDED: "unbounded",
  NO_RESAMPLE: "no resample",
};
