// Experiments: the list, and one experiment's live progress, results with intervals, and slots.

import { intervalChart, rangesOf } from "../chart.js";
import { append, clear, h, routeLink, when, words } from "../dom.js";
import { statusBadge } from "../status.js";
import { backStack, pageSize, pager } from "./common.js";
import { changeWords } from "./episode-family.js";
import { evaluationChoice, evaluationsOf, showHumanAgreement } from "./experiment-evaluation.js";
import { judgesCompared } from "./judges-compared.js";
import { providerLimitsPanel } from "./provider-limits.js";

const SLOTS_PER_PAGE = 50;

function percent(part, whole) {
  return whole ? Math.round((100 * part) / whole) : 0;
}

function duration(seconds) {
  if (seconds === null || seconds === undefined) return "unknown";
  if (seconds < 60) return `${Math.round(seconds)} s`;
  if (seconds < 3600) return `${Math.round(seconds / 60)} min`;
  return `${(seconds / 3600).toFixed(1)} h`;
}

/** How far an experiment got, in words: rates and time left count completed episodes only. */
const STOPS = { BUDGET: "its budget is reached", PRECISION: "its precision is reached", CANCELLED: "it was cancelled (a start resumes it)" };

function progressText(p, ended) {
  const rate = p.episodesPerMinute > 0 ? `${p.episodesPerMinute.toFixed(1)} completed a minute` : null;
  if (p.finished) {
    const outcome = [
      `${p.completed} completed`,
      p.failed ? `${p.failed} failed` : null,
      p.cancelled ? `${p.cancelled} cancelled` : null,
      p.notReached ? `${p.notReached} arm ${p.notReached === 1 ? "slot" : "slots"} not reached` : null,
      p.stopped ? `${p.held} never queued: stopped, as ${STOPS[p.stopped]}` : null,
    ];
    return `${ended} of ${p.total} ended: ${outcome.filter(Boolean).join(", ")}${rate ? ` (${rate})` : ""}; finished.`;
  }
  const left = p.secondsLeft === null ? "time left unknown until an episode completes" : `about ${duration(p.secondsLeft)} left`;
  return `${ended} of ${p.total} ended (${percent(ended, p.total)}%), ${rate || "none completed yet"}, ${left}.`;
}

/** A progress bar and the counts beside it; `update(progress)` redraws both in place. */
function progressView(progress) {
  const bar = h("progress", { max: 1, value: 0, "aria-label": "Episodes ended" });
  const summary = h("p", { class: "progress-summary" });
  const counts = h("ul", { class: "counts", "aria-label": "Episodes by status" });
  const view = h("div", { class: "experiment-progress" }, bar, summary, counts);
  view.update = (p) => {
    const ended = p.completed + p.failed + p.cancelled + p.notReached + p.held;
    bar.max = Math.max(1, p.total);
    bar.value = ended;
    view.dataset.finished = String(p.finished);
    summary.textContent = progressText(p, ended);
    clear(counts);
    counts.append(h("li", { dataset: { status: "PENDING" } }, "not started ", h("span", { class: "count" }, String(p.pending))));
    for (const { status, count } of p.counts) {
      counts.append(h("li", { dataset: { status } }, statusBadge(status), " ", h("span", { class: "count" }, String(count))));
    }
    if (p.notReached) {
      // arm slots whose control ended before the arm's turn: never forked, ended so
      counts.append(h("li", { dataset: { status: "NOT_REACHED" } }, "arm not reached ", h("span", { class: "count" }, String(p.notReached))));
    }
    if (p.held) {
      // slots a stopped experiment never queued: its budget or its precision was reached
      counts.append(h("li", { dataset: { status: "HELD" } }, `held (${STOPS[p.stopped]}) `, h("span", { class: "count" }, String(p.held))));
    }
    if (p.armsWaiting) {
      counts.append(h("li", { dataset: { status: "ARMS_WAITING" } }, "arm waiting on a retried control ", h("span", { class: "count" }, String(p.armsWaiting))));
    }
    if (p.unjudged) {
      // completed, but their judge gave no scores: each episode's page can judge it again
      counts.append(h("li", { dataset: { status: "NOT_JUDGED" } }, "completed, not judged ", h("span", { class: "count" }, String(p.unjudged))));
    }
  };
  view.update(progress);
  return view;
}

export async function experimentsPage({ api, query, main }) {
  const after = query.get("after");
  const stack = backStack(query);
  const filter = query.get("tag") ? { tag: query.get("tag") } : null;
  const data = await api.request("ExperimentList", { filter, first: pageSize(query), after });
  const list = data.experiments;
  const rows = list.nodes.map((experiment) => {
    const p = experiment.progress;
    const ended = p.completed + p.failed + p.cancelled;
    return h(
      "tr",
      { dataset: { experiment: experiment.id } },
      h("td", {}, h("a", { href: `#/experiments/${encodeURIComponent(experiment.id)}` }, experiment.name)),
      h("td", {}, experiment.tag),
      h("td", {}, when(experiment.createdAt)),
      h("td", {}, h("progress", { max: Math.max(1, p.total), value: ended, "aria-label": `${ended} of ${p.total} ended` }), ` ${ended} / ${p.total}`),
      h("td", {}, `${p.completed} completed, ${p.failed} failed, ${p.cancelled} cancelled`),
    );
  });
  main.append(
    h("h1", {}, "Experiments"),
    h(
      "p",
      {},
      "An experiment is a design expanded into episodes; create and start one with ",
      h("code", {}, "parley experiment run design.toml"),
      " or the createExperiment mutation.",
    ),
    h(
      "table",
      { class: "experiments" },
      h("caption", {}, `Experiments, newest first (${list.totalCount})`),
      h("thead", {}, h("tr", {}, ["Name", "Tag", "Created", "Ended", "Outcomes"].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, rows),
    ),
    h("p", { class: "empty", hidden: rows.length > 0 }, "No experiments yet."),
    pager((params) => routeLink("/experiments", params), { first: query.get("first"), after }, list.pageInfo, stack),
  );
}

function usageLine(usage) {
  if (!usage.episodes) return h("p", { class: "usage" }, "No tokens spent yet.");
  const count = (n) => Math.round(n).toLocaleString("en");
  const estimated = usage.estimatedTokens ? ` (${count(usage.estimatedTokens)} of them estimated)` : "";
  const cost =
    usage.cost === null
      ? "no cost, as no prices are set for the models they used"
      : usage.pricedEpisodes === usage.episodes
        ? `$${usage.cost.toFixed(4)}`
        : `$${usage.cost.toFixed(4)} for the ${usage.pricedEpisodes} whose models all have prices`;
  return h(
    "p",
    { class: "usage" },
    `Tokens over ${usage.episodes} episodes: ${count(usage.promptTokens)} prompt, ${count(usage.completionTokens)} completion${estimated}; ${cost}.`,
  );
}

/** A figure with its 95% range, as dollars or whole counts. */
function figureText(figure, money) {
  if (!figure) return "unknown";
  const shown = (n) => (money ? `$${n.toFixed(4)}` : Math.round(n).toLocaleString("en"));
  const range = figure.low === null ? " (range unknown until a kind of episode is recorded twice)" : ` (95% range ${shown(figure.low)} to ${shown(figure.high)})`;
  return `${shown(figure.expected)}${range}`;
}

/** What the experiment will take, and its budget against what it spent; `update(estimate)`. */
function costView(api, id, budget, errorBox) {
  const box = h("div", { class: "estimate-box" });
  const messages = h("div", { "aria-live": "polite" });
  box.update = (estimate, usage) => {
    clear(box);
    const spent = usage.cost === null ? null : usage.cost;
    if (budget !== null) {
      const used = spent === null ? "" : `: $${spent.toFixed(4)} spent (${percent(spent, budget)}%)`;
      box.append(h("p", { class: "budget" }, `Budget $${budget.toFixed(4)}${used}.`));
    }
    if (!estimate.covered) {
      box.append(h("p", { class: "estimate" }, `Nothing comparable is recorded for its ${estimate.episodes} episodes yet: a calibration run plays two of each kind, then the estimate covers them.`));
    } else {
      const part = estimate.covered === estimate.episodes ? `its ${estimate.episodes} episodes` : `${estimate.covered} of its ${estimate.episodes} episodes`;
      box.append(
        h("p", { class: "estimate" }, `Estimate for ${part}, from ${estimate.comparable} comparable recorded ${estimate.comparable === 1 ? "episode" : "episodes"}:`),
        h(
          "ul",
          { class: "estimate-figures" },
          h("li", {}, "Model calls ", figureText(estimate.calls, false)),
          h("li", {}, "Tokens ", figureText(estimate.tokens, false)),
          h("li", {}, "Cost ", estimate.cost ? figureText(estimate.cost, true) : "unknown: a model has no prices in the models file"),
        ),
      );
    }
    if (estimate.uncovered.length) {
      const calibrate = async () => {
        clear(messages);
        try {
          const answer = (await api.request("CalibrateExperiment", { id })).calibrateExperiment;
          if (answer.userErrors.length) messages.append(...answer.userErrors.map((e) => h("p", { role: "alert" }, e.message)));
          else messages.append(h("p", { class: "notice" }, `${answer.changed} calibration episodes queued.`));
        } catch (error) {
          messages.append(errorBox(error));
        }
      };
      box.append(
        h("p", {}, "Not covered: ", estimate.uncovered.map((models) => models.join(" / ")).join("; "), "."),
        h("div", { class: "actions" }, h("button", { type: "button", onclick: calibrate }, "Calibrate")),
      );
    }
    box.append(messages);
  };
  return box;
}

function cell(result, model) {
  const interval = result.confidenceInterval;
  // the margin may go under the mean on a narrow screen, never a number across two lines
  const mean = h("span", { class: "mean" }, result.mean.toFixed(2));
  const text = interval ? [mean, " ", h("span", { class: "margin" }, `± ${interval.margin.toFixed(2)}`)] : mean;
  return h(
    "td",
    {
      dataset: { model, dimension: result.dimension, mean: result.mean, count: result.count },
      title: interval
        ? `n = ${result.count}, sd ${result.sd.toFixed(2)}, 95% interval ${interval.low.toFixed(2)} to ${interval.high.toFixed(2)} (t, ${interval.degreesOfFreedom} df)`
        : `n = ${result.count}: too few scores for an interval`,
    },
    text,
  );
}

/** The episodes a row leaves out of its means, by why ("12 episodes: 11 failed, 1 unscored"):
 * counts of episodes, each once, whichever of its seats play the row's model. */
function apartText(group) {
  const parts = [["failed", group.failed], ["cancelled", group.cancelled], ["unscored", group.unscored], ["unfinished", group.unfinished]].filter(([, n]) => n);
  const total = parts.reduce((sum, [, n]) => sum + n, 0);
  if (!total) return "none";
  return `${total} ${total === 1 ? "episode" : "episodes"}: ${parts.map(([why, n]) => `${n} ${why}`).join(", ")}`;
}

/**
 * Each model's mean ± 95% margin per dimension: a column per model (with a link to the episodes
 * behind it), a row per dimension, so that the table stays narrow however many dimensions.
 */
function resultsTable(experimentId, groups, { evaluation, label }) {
  if (!groups.length) return h("p", { class: "empty" }, "No scores yet: results appear as episodes complete.");
  const dimensions = groups[0].dimensions.map((d) => d.dimension);
  const byName = groups.map((group) => new Map(group.dimensions.map((d) => [d.dimension, d])));
  const model = (group) => group.model || "";
  const row = (label, cells, dataset = {}) => h("tr", { dataset }, h("th", { scope: "row" }, label), cells);
  const table = h(
    "table",
    { class: "results" },
    h("caption", {}, `Mean ± 95% margin (t distribution) per model, over both seats; scores from ${label.charAt(0).toLowerCase()}${label.slice(1)}`),
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        h("th", { scope: "col" }, "Dimension"),
        groups.map((group) =>
          h(
            "th",
            { scope: "col", dataset: { model: model(group) } },
            h("a", { href: routeLink(`/experiments/${encodeURIComponent(experimentId)}`, { model: group.model, evaluation }) }, group.model || "(none)"),
          ),
        ),
      ),
    ),
    h(
      "tbody",
      {},
      dimensions.map((d) =>
        row(words(d), groups.map((group, j) => (byName[j].has(d) ? cell(byName[j].get(d), model(group)) : h("td", {}, "–"))), { dimension: d }),
      ),
      row("Seat scores", groups.map((group) => h("td", { dataset: { model: model(group) } }, String(group.scored))), { count: "scored" }),
      row("Not in the means", groups.map((group) => h("td", { dataset: { model: model(group) } }, apartText(group))), { count: "apart" }),
    ),
  );
  return h("div", { class: "scroll-x" }, table);
}

/** A paired difference: `+0.50 [+0.10, +0.90]`, flagged when the interval leaves 0 out. */
function differenceCell(difference) {
  const interval = difference.confidenceInterval;
  const sign = (x) => `${x >= 0 ? "+" : "−"}${Math.abs(x).toFixed(2)}`;
  const apart = interval && (interval.low > 0 || interval.high < 0);
  return h(
    "td",
    {
      class: apart ? "difference apart" : "difference",
      dataset: { dimension: difference.dimension, mean: difference.meanDifference, pairs: difference.pairs },
      title: interval
        ? `${difference.pairs} pairs, 95% interval ${interval.low.toFixed(2)} to ${interval.high.toFixed(2)}${apart ? ": leaves 0 out" : ""}`
        : `${difference.pairs} pairs: too few for an interval`,
    },
    h("span", { class: "mean" }, sign(difference.meanDifference)),
    interval ? [" ", h("span", { class: "margin" }, `[${sign(interval.low)}, ${sign(interval.high)}]`)] : null,
  );
}

/** Each arm against the control: its change, turn and pairs, then arm − control per dimension
 * (a row per dimension, overall first), and a link to one control/arm pair turn by turn. */
function armsView(arms) {
  if (!arms.length) return null;
  const dimensions = [...new Set(arms.flatMap((arm) => arm.differences.map((d) => d.dimension)))];
  const byName = arms.map((arm) => new Map(arm.differences.map((d) => [d.dimension, d])));
  const row = (label, cells, dataset = {}) => h("tr", { dataset }, h("th", { scope: "row" }, label), cells);
  const left = (arm) => {
    const parts = [["not reached", arm.notReached], ["unfinished", arm.unfinished], ["unpaired", arm.unpaired]].filter(([, n]) => n);
    return parts.length ? parts.map(([why, n]) => `${n} ${why}`).join(", ") : "none";
  };
  const table = h(
    "table",
    { class: "results arms" },
    h("caption", {}, "Arm − control, paired by slot and seat: mean difference [95% interval]; an interval that leaves 0 out is marked"),
    h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Arm"), arms.map((arm) => h("th", { scope: "col", dataset: { arm: arm.name } }, arm.name)))),
    h(
      "tbody",
      {},
      row("Change", arms.map((arm) => h("td", { class: "arm-change", dataset: { arm: arm.name } }, changeWords(arm.change))), { field: "change" }),
      row("At turn", arms.map((arm) => h("td", { dataset: { arm: arm.name } }, String(arm.atTurn))), { field: "atTurn" }),
      row("Pairs", arms.map((arm) => h("td", { dataset: { arm: arm.name } }, String(arm.pairs))), { field: "pairs" }),
      dimensions.map((d) => row(words(d), arms.map((arm, j) => (byName[j].has(d) ? differenceCell(byName[j].get(d)) : h("td", {}, "–"))), { dimension: d })),
      row("Not paired", arms.map((arm) => h("td", { dataset: { arm: arm.name } }, left(arm))), { field: "apart" }),
      row(
        "One pair",
        arms.map((arm) =>
          h(
            "td",
            { dataset: { arm: arm.name } },
            arm.firstPair ? h("a", { class: "compare-pair", href: routeLink("/compare", { a: arm.firstPair.control, b: arm.firstPair.arm }) }, "Compare turn by turn") : "no pair yet",
          ),
        ),
        { field: "pair" },
      ),
    ),
  );
  return h("div", { class: "scroll-x" }, table);
}

function slotTable(slots, model, names, stopped) {
  const shown = model ? slots.filter((slot) => slot.model === model || slot.agentModels.includes(model)) : slots;
  return h(
    "table",
    { class: "slots" },
    h("caption", {}, model ? `Episodes with ${model}` : "Episodes of the design"),
    h("thead", {}, h("tr", {}, ["#", "Scenario", "Agents", "Models by seat", "Repeat", "Arm", "Episode"].map((t) => h("th", { scope: "col" }, t)))),
    h(
      "tbody",
      {},
      shown.map((slot) =>
        h(
          "tr",
          { dataset: { slot: slot.number } },
          h("td", {}, String(slot.number)),
          h("td", {}, names.get(slot.scenarioId) || slot.scenarioId),
          h("td", {}, slot.agentIds.map((agent) => names.get(agent) || agent).join(", ")),
          h("td", {}, slot.agentModels.join(" / ")),
          h("td", {}, String(slot.repeat)),
          h("td", {}, slot.arm ? `${slot.arm} (of #${slot.controlSlot})` : "control"),
          h(
            "td",
            {},
            slot.episode
              ? h("a", { href: `#/episodes/${encodeURIComponent(slot.episode.id)}` }, statusBadge(slot.episode.status))
              : stopped
                ? "held"
                : "not started",
          ),
        ),
      ),
    ),
  );
}

/**
 * The results of the evaluation chosen (none when the address names one that is not the
 * experiment's) as a table and a chart, and beside the table their agreement with people;
 * `update()` reads the results again.
 */
function resultsView(api, experiment, lists, evaluation) {
  const id = experiment.id;
  const tableSlot = h("div", { class: "results-table" });
  const chartSlot = h("div", { class: "results-chart" });
  const agreementBox = h("aside", { class: "human-agreement-box", "aria-label": "Agreement with people" });
  const box = h("div", { class: "results-box" }, h("div", { class: "results-beside" }, tableSlot, agreementBox), chartSlot);
  const chosen = [...experiment.rejudgings, ...experiment.ratingStudies].find((e) => e.id === evaluation);
  const known = !evaluation || Boolean(chosen);
  const listId = chosen ? chosen.evaluationDimensionListId : JSON.parse(experiment.design).evaluation_dimension_list_id;
  const ranges = rangesOf(listId, lists);
  const label = (evaluationsOf(experiment).find(([key]) => key === (evaluation || "")) || [null, evaluation])[1];
  const update = async () => {
    if (!known) return;
    // An experiment with arms: its model tables are of the control arm (the slots' own episodes).
    const arm = (JSON.parse(experiment.design).arms || []).length ? { arm: "control" } : {};
    const answer = await api.request("ExperimentResults", { filter: { experimentId: id, ...arm }, groupBy: ["MODEL"], evaluation });
    const groups = answer.episodeResults.groups;
    append(clear(tableSlot), [resultsTable(id, groups, { evaluation, label })]);
    append(clear(chartSlot), [intervalChart(groups, ranges)]);
  };
  showHumanAgreement(api, agreementBox, { experimentId: id, evaluation, studies: experiment.ratingStudies, known });
  return { box, update };
}

export async function experimentPage({ api, query, main, setConnection, errorBox }, id) {
  const after = query.get("after");
  const stack = backStack(query);
  const model = query.get("model");
  const evaluation = query.get("evaluation") || null;
  const detail = () => api.request("ExperimentDetail", { id, first: SLOTS_PER_PAGE, after });
  const [data, world] = await Promise.all([detail(), api.request("WorldNames")]);
  const names = new Map([
    ...world.scenarios.nodes.map((s) => [s.id, s.codename || s.id]),
    ...world.agents.nodes.map((a) => [a.id, a.name]),
  ]);
  const experiment = data.experiment;
  if (!experiment) {
    main.append(h("h1", {}, "No such experiment"), h("p", {}, "There is no experiment ", h("code", {}, id), ". ", h("a", { href: "#/experiments" }, "See the experiments.")));
    return null;
  }
  const progress = progressView(experiment.progress);
  const limits = providerLimitsPanel(api);
  const usageBox = h("div", { class: "usage-box" }, usageLine(data.usageTotals));
  const costs = costView(api, id, experiment.budget, errorBox);
  const estimated = () => api.request("ExperimentEstimate", { id });
  const results = resultsView(api, experiment, data.evaluationDimensionLists, evaluation);
  const [first] = await Promise.all([estimated(), results.update()]);
  costs.update(first.experiment.estimate, data.usageTotals);

  const messages = h("div", { class: "form-errors", "aria-live": "polite" });
  const act = (operation, field) => async () => {
    clear(messages);
    try {
      const answer = (await api.request(operation, { id }))[field];
      if (answer.userErrors.length) messages.append(...answer.userErrors.map((e) => h("p", { role: "alert" }, e.message)));
      else messages.append(h("p", { class: "notice" }, operation === "StartExperiment" ? `${answer.changed} episodes queued.` : `${answer.changed} episodes cancelled.`));
    } catch (error) {
      messages.append(errorBox(error));
    }
  };
  const slotsBox = h("div", { class: "slots-box" });
  const showSlots = (slots, stopped) => clear(slotsBox).append(
    slotTable(slots.nodes, model, names, stopped),
    pager((params) => routeLink(`/experiments/${encodeURIComponent(id)}`, params), { model, evaluation, after }, slots.pageInfo, stack),
  );
  showSlots(experiment.slots, experiment.progress.stopped);
  const armsBox = h("section", { class: "arms-box", hidden: !experiment.arms.length }, h("h2", {}, "Arms"), armsView(experiment.arms));
  const showArms = (arms) => {
    armsBox.hidden = !arms.length;
    clear(armsBox).append(h("h2", {}, "Arms"), armsView(arms) || "");
  };
  append(main, [
    h("p", {}, h("a", { href: "#/experiments" }, "← Experiments")),
    h("h1", {}, experiment.name),
    h("p", {}, "Tag ", h("code", {}, experiment.tag || "(none)"), `, ${experiment.slotCount} episodes, created ${when(experiment.createdAt)}`, experiment.startedAt ? `, last started ${when(experiment.startedAt)}` : "", ". ", h("a", { href: routeLink("/", { tag: experiment.tag }) }, "Its episodes in the list")),
    h("h2", {}, "Progress"),
    progress,
    h(
      "div",
      { class: "actions" },
      h("button", { type: "button", onclick: act("StartExperiment", "startExperiment") }, "Start or resume"),
      h("button", { type: "button", class: "danger", onclick: act("CancelExperiment", "cancelExperiment") }, "Cancel"),
    ),
    messages,
    h("h2", {}, "Cost"),
    costs,
    h("h2", {}, "Provider limits"),
    limits.box,
    h("h2", {}, "Results"),
    experiment.arms.length ? h("p", { class: "arms-note" }, "These are the control arm's results: each slot's own episode. The arms are compared with it below.") : null,
    evaluationChoice(experiment, evaluation),
    results.box,
    armsBox,
    usageBox,
    judgesCompared(api, experiment),
    h("h2", {}, "Episodes"),
    model ? h("p", {}, h("a", { href: routeLink(`/experiments/${encodeURIComponent(id)}`, { evaluation }) }, "Show every model")) : null,
    slotsBox,
    h("details", {}, h("summary", {}, "Design"), h("pre", {}, JSON.stringify(JSON.parse(experiment.design), null, 2))),
  ]);

  // Live: progress from the subscription; results and slots again (debounced) as it changes.
  let seen = JSON.stringify(experiment.progress.counts);
  let timer = null;
  const refresh = () => {
    clearTimeout(timer);
    timer = setTimeout(async () => {
      try {
        const [again, estimate] = await Promise.all([detail(), estimated(), results.update()]);
        if (again.experiment) {
          showSlots(again.experiment.slots, again.experiment.progress.stopped);
          showArms(again.experiment.arms);
        }
        clear(usageBox).append(usageLine(again.usageTotals));
        if (estimate.experiment) costs.update(estimate.experiment.estimate, again.usageTotals);
      } catch {
        // the next change tries again
      }
    }, 300);
  };
  const stop = api.follow("WatchExperiment", { id }, {
    event: (p) => {
      progress.update(p);
      const now = JSON.stringify(p.counts);
      if (now !== seen) refresh();
      seen = now;
    },
    state: setConnection,
    failed: (error) => main.prepend(errorBox(error)),
  });
  return () => {
    clearTimeout(timer);
    stop();
    limits.stop();
  };
}

export const experimentRoutes = [
  [/^\/experiments$/, experimentsPage, "experiments"],
  [/^\/experiments\/([^/]+)$/, experimentPage, "experiments"],
];
