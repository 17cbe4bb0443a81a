// An experiment's results by any evaluation (its episodes' own judge, a re-judging of them, or a
// rating study's raters), and beside them how far that evaluation agrees with people.

import { clear, h, routeLink, when, words } from "../dom.js";
import { REASONS } from "./common.js";

/** The evaluations an experiment's results can use: [id, label], the episodes' judge first. */
export function evaluationsOf(experiment) {
  return [
    ["", "The episodes' own judge"],
    ...experiment.rejudgings.map((r) => [r.id, `Re-judged by ${r.judgeModel}, ${when(r.createdAt)} (${r.episodes} episodes)`]),
    ...experiment.ratingStudies.map((s) => [s.id, `People: ${s.name}, the mean of ${s.raters.length} raters`]),
  ];
}

/** A choice of the evaluation; choosing one puts it in the page's address, which draws it. */
export function evaluationChoice(experiment, chosen) {
  const choices = evaluationsOf(experiment);
  const select = h(
    "select",
    {
      id: "results-evaluation",
      onchange: () => {
        location.hash = routeLink(`/experiments/${encodeURIComponent(experiment.id)}`, { evaluation: select.value });
      },
    },
    choices.map(([id, label]) => h("option", { value: id, selected: id === (chosen || "") }, label)),
  );
  const unknown = chosen && !choices.some(([id]) => id === chosen);
  return h(
    "div",
    { class: "field evaluation-choice" },
    h("label", { for: select.id }, "Scores from"),
    select,
    unknown ? h("p", { class: "hint", role: "alert" }, `The address names an evaluation, ${chosen}, that is not one of this experiment's.`) : null,
  );
}

/** A figure in words, "r = 0.71 [0.55, 0.82], 40 agents": pieces that each stay on one line,
 * so that on a phone the interval goes under the figure rather than off the screen. */
export function figure(symbol, estimate, unitsText = null) {
  const why = estimate.reason ? ` (${REASONS[estimate.reason] ?? estimate.reason})` : "";
  if (estimate.estimate === null) return h("span", { class: "missing" }, `${symbol}: none${why}`);
  const pieces = [h("span", {}, `${symbol}\u00a0=\u00a0${estimate.estimate.toFixed(2)}`)];
  if (estimate.low === null) pieces.push(h("span", {}, why.trim()));
  else pieces.push(h("span", {}, `[${estimate.low.toFixed(2)},\u00a0${estimate.high.toFixed(2)}]${unitsText ? "," : ""}`));
  if (unitsText) pieces.push(h("span", {}, unitsText));
  return pieces.flatMap((piece, i) => (i ? [" ", piece] : [piece]));
}

export const plural = (n, one, many) => `${n}\u00a0${n === 1 ? one : many}`;

/** One study's agreement with the chosen evaluation, a row per dimension (overall first). */
function agreementTable(study, dimensions) {
  const ordered = [...dimensions.filter((d) => d.dimension === "overall_score"), ...dimensions.filter((d) => d.dimension !== "overall_score")];
  const rows = ordered.map((d) => {
    const pair = d.pairs[0];
    const pearson = figure("r", pair.pearson, plural(pair.pearson.n, "agent", "agents"));
    const tau = figure("τ", pair.tau);
    return h(
      "tr",
      { dataset: { dimension: d.dimension, pearson: pair.pearson.estimate ?? "", pearsonN: pair.pearson.n, tau: pair.tau.estimate ?? "" } },
      h("th", { scope: "row" }, d.dimension === "overall_score" ? "overall" : words(d.dimension)),
      h("td", { class: "pearson" }, pearson),
      h("td", { class: "tau" }, tau),
    );
  });
  return h(
    "div",
    { class: "scroll-x" },
    h(
      "table",
      { class: "agreement human-agreement", "aria-label": `How far these scores agree with the raters of ${study.name}` },
      h("thead", {}, h("tr", {}, ["Dimension", "Agrees with people", "Ranks models alike"].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, rows),
    ),
  );
}

function studyHeading(study) {
  return h("h3", {}, "People in ", h("a", { href: `#/studies/${encodeURIComponent(study.id)}` }, study.name));
}

/** How far the chosen evaluation agrees with each study over the experiment's episodes, or a
 * line saying no people have rated them; fills `box` as the figures come. */
export async function showHumanAgreement(api, box, { experimentId, evaluation, studies, known }) {
  clear(box);
  box.append(h("h3", {}, "Agreement with people"));
  if (!known) {
    box.append(h("p", {}, "Choose one of this experiment's evaluations to see how far it agrees with people."));
    return;
  }
  if (!studies.length) {
    box.append(
      h(
        "p",
        { class: "no-study" },
        "No people have rated these episodes. ",
        h("a", { href: routeLink("/studies", { experiment: experimentId }) }, "Make a rating study of them"),
        " to see how far these scores agree with people's.",
      ),
    );
    return;
  }
  for (const study of studies) {
    const section = h("section", { class: "study-agreement", dataset: { study: study.id } }, studyHeading(study));
    box.append(section);
    if (study.id === evaluation) {
      section.append(h("p", {}, "These results are this study's raters' own mean scores."));
      continue;
    }
    try {
      const variables = { filter: { experimentId }, evaluation: evaluation || null, studyId: study.id };
      const answer = await api.request("ResultsHumanAgreement", variables);
      const dimensions = answer.episodeResults.humanAgreement;
      const units = dimensions.length ? dimensions[0].units : 0;
      const models = dimensions.length && dimensions[0].pairs.length ? dimensions[0].pairs[0].models.length : 0;
      section.append(
        h("p", { class: "hint" }, `Over the ${plural(units, "agent", "agents")} of the episodes the study rates, played by ${plural(models, "model", "models")}. `, "r: Pearson's correlation of each agent's score with the raters' mean, with its 95% interval; τ: Kendall's tau between the two rankings of the models."),
        agreementTable(study, dimensions),
      );
    } catch (error) {
      section.append(h("p", { role: "alert" }, `The agreement could not be read: ${error.message}`));
    }
  }
}
