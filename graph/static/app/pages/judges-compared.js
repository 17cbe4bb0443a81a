// "Judges compared": how far two or more of an experiment's evaluations (its episodes' own
// judge, its re-judgings, its rating studies' raters) agree, per dimension and overall: the runs
// of each one judged by a panel against each other, and every two of them against each other.

import { clear, h, words } from "../dom.js";
import { evaluationsOf, figure, plural } from "./experiment-evaluation.js";

const LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";

/** Overall first, then the dimensions as the API gives them. */
function overallFirst(dimensions) {
  return [...dimensions.filter((d) => d.dimension === "overall_score"), ...dimensions.filter((d) => d.dimension !== "overall_score")];
}

const dimensionName = (d) => (d === "overall_score" ? "overall" : words(d));

/** A cell of one estimate, its figures in data attributes for whoever reads the table. */
function estimateCell(kind, symbol, estimate, unitsText = null) {
  const data = { estimate: estimate.estimate ?? "", low: estimate.low ?? "", high: estimate.high ?? "", n: estimate.n };
  return h("td", { class: `figure ${kind}`, dataset: data }, figure(symbol, estimate, unitsText));
}

function table(caption, kind, columns, rows) {
  return h(
    "div",
    { class: "scroll-x" },
    h(
      "table",
      { class: `agreement judges-compared ${kind}` },
      h("caption", {}, caption),
      h("thead", {}, h("tr", {}, columns.map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, rows),
    ),
  );
}

function panelRows(dimensions, letter) {
  return overallFirst(dimensions).flatMap((d) =>
    d.panels.map((p) =>
      h(
        "tr",
        { dataset: { dimension: d.dimension, evaluation: p.evaluation ?? "" } },
        h("th", { scope: "row" }, dimensionName(d.dimension)),
        h("td", { class: "which", title: p.runs.join(", "), dataset: { label: "panel" } }, `${letter(p.evaluation)}, ${p.runs.every((run) => run.startsWith("rater#")) ? plural(p.runs.length, "rater", "raters") : plural(p.runs.length, "run", "runs")}`),
        estimateCell("alpha", "α", p.agreement.alpha, plural(p.agreement.alpha.n, "agent", "agents")),
        estimateCell("icc1", "ICC(2,1)", p.agreement.icc1),
        estimateCell("icck", "ICC(2,k)", p.agreement.icck),
      ),
    ),
  );
}

function pairRows(dimensions, letter) {
  return overallFirst(dimensions).flatMap((d) =>
    d.pairs.map((p) =>
      h(
        "tr",
        { dataset: { dimension: d.dimension, first: p.first ?? "", second: p.second ?? "" } },
        h("th", { scope: "row" }, dimensionName(d.dimension)),
        h("td", { class: "which", dataset: { label: "between" } }, `${letter(p.first)} and ${letter(p.second)}`),
        h("td", { class: "units", dataset: { label: "agents" } }, String(p.pearson.n)),
        estimateCell("pearson", "r", p.pearson),
        estimateCell("spearman", "ρ", p.spearman),
        estimateCell("tau", "τ", p.tau),
      ),
    ),
  );
}

/** The figures of the chosen evaluations, or a line saying why there are none. */
function figures(dimensions, letter) {
  if (!dimensions.length) return [h("p", { class: "no-figures" }, "None of the chosen evaluations has scored these episodes.")];
  const panels = panelRows(dimensions, letter);
  return [
    h("p", { class: "hint" }, `Over the ${plural(dimensions[0].units, "agent", "agents")} of the experiment's episodes, with 95% intervals. `, "α: Krippendorff's alpha between a panel's runs; ICC(2,1) and ICC(2,k): how far one run's score, and their mean, can be trusted; r and ρ: Pearson's and Spearman's correlation of two evaluations' scores for the agents both scored; τ: Kendall's tau between their rankings of the models."),
    panels.length
      ? table("Within each panel", "panels", ["Dimension", "Panel", "Agreement", "ICC(2,1)", "ICC(2,k)"], panels)
      : h("p", { class: "no-panel" }, "None of the chosen evaluations was judged by more than one run."),
    table("Between two evaluations", "pairs", ["Dimension", "Evaluations", "Agents", "Pearson", "Spearman", "Models ranked"], pairRows(dimensions, letter)),
  ];
}

/** The section: a box per evaluation to choose, a button, and what the API says of the choice. */
export function judgesCompared(api, experiment) {
  const choices = evaluationsOf(experiment).map(([id, label], i) => ({ id, label, letter: LETTERS[i] }));
  const letter = (id) => choices.find((c) => c.id === (id ?? "")).letter;
  const result = h("div", { class: "judges-compared-figures", "aria-live": "polite" });
  const boxes = choices.map((c) => h("input", { type: "checkbox", id: `compare-${c.letter}`, value: c.id, checked: choices.length === 2 }));
  const compare = async (event) => {
    event.preventDefault();
    const chosen = boxes.filter((b) => b.checked).map((b) => b.value || null);
    clear(result);
    if (chosen.length < 2) {
      result.append(h("p", { class: "no-figures" }, "Choose two evaluations or more to compare them."));
      return;
    }
    result.append(h("p", { class: "hint" }, "Comparing…"));
    try {
      const answer = await api.request("EvaluationAgreement", { episodes: { experimentId: experiment.id }, evaluations: chosen });
      clear(result).append(...figures(answer.evaluationAgreement, letter));
    } catch (error) {
      clear(result).append(h("p", { role: "alert" }, `The evaluations could not be compared: ${error.message}${error.code ? ` (${error.code})` : ""}`));
    }
  };
  const section = h("section", { class: "judges-compared", "aria-labelledby": "judges-compared-heading" }, h("h2", { id: "judges-compared-heading" }, "Judges compared"));
  if (choices.length < 2) {
    section.append(h("p", { class: "no-figures" }, "The episodes' own judge is this experiment's only evaluation: re-judge its episodes or make a rating study of them to compare two."));
    return section;
  }
  const form = h(
    "form",
    { onsubmit: compare },
    h(
      "fieldset",
      { class: "field" },
      h("legend", {}, "Compare these evaluations"),
      h("ul", { class: "choices", role: "list" }, choices.map((c, i) => h("li", {}, boxes[i], h("label", { for: boxes[i].id }, `${c.letter}. ${c.label}`)))),
    ),
    h("button", { type: "submit" }, "Compare"),
  );
  section.append(form, result);
  return section;
}
