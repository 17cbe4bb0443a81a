// Each agent's scores per dimension as a plain SVG bar chart, on each dimension's own range.

import { h, svg } from "./dom.js";

/** Sotopia's seven dimensions and their ranges, for episodes without a custom list. */
export const SOTOPIA_RANGES = {
  believability: [0, 10],
  relationship: [-5, 5],
  knowledge: [0, 10],
  secret: [-10, 0],
  social_rules: [-10, 0],
  financial_and_material_benefits: [-5, 5],
  goal: [0, 10],
};

/** The ranges of the dimension list `listId` names among `lists`: Sotopia's without one. */
export function rangesOf(listId, lists) {
  const list = listId ? lists.find((l) => l.id === listId) : null;
  if (!list) return SOTOPIA_RANGES;
  return Object.fromEntries(list.dimensions.map((d) => [d.name, [d.rangeLow, d.rangeHigh]]));
}

const BAR_WIDTH = 300;
const WIDTH = BAR_WIDTH + 90;
const ROW = 38;

function label(name) {
  return name.replaceAll("_", " ");
}

/** The chart of one agent's reward; `ranges` maps a dimension name to [low, high]. */
export function scoreChart(reward, ranges) {
  const name = reward.agent ? reward.agent.name : `Seat ${reward.agentIndex + 1}`;
  const rows = reward.dimensions;
  const height = rows.length * ROW + 10;
  const parts = [svg("title", {}, `Scores of ${name}`)];
  rows.forEach((row, i) => {
    const [low, high] = ranges[row.dimension] || [Math.min(0, row.score), Math.max(10, row.score)];
    const x = (value) => ((Math.min(high, Math.max(low, value)) - low) / (high - low || 1)) * BAR_WIDTH;
    const y = 4 + i * ROW;
    const zero = x(0);
    const end = x(row.score);
    parts.push(
      svg(
        "g",
        { class: "dimension", "data-dimension": row.dimension, "data-score": row.score },
        svg("text", { x: 0, y: y + 11, class: "dimension-label" }, label(row.dimension)),
        svg("rect", { x: 0, y: y + 16, width: BAR_WIDTH, height: 14, class: "track" }),
        svg("rect", {
          x: Math.min(zero, end),
          y: y + 16,
          width: Math.max(1.5, Math.abs(end - zero)),
          height: 14,
          class: row.score < 0 ? "bar negative" : "bar",
        }),
        svg("line", { x1: zero, x2: zero, y1: y + 14, y2: y + 32, class: "zero" }),
        svg("text", { x: BAR_WIDTH + 6, y: y + 28, class: "score" }, `${row.score} (${low}..${high})`),
      ),
    );
  });
  const overall = reward.overall === null ? "no overall score (the judge failed)" : `overall ${reward.overall.toFixed(2)}`;
  return h(
    "figure",
    { class: "scores", dataset: { agentIndex: reward.agentIndex } },
    h("figcaption", {}, h("strong", {}, name), ": ", h("span", { class: "overall" }, overall)),
    svg(
      "svg",
      {
        viewBox: `0 0 ${WIDTH} ${height}`,
        role: "img",
        "aria-label": `${name}: ` + rows.map((r) => `${label(r.dimension)} ${r.score}`).join(", "),
        class: "chart",
      },
      ...parts,
    ),
  );
}

const PALETTE = ["#2563eb", "#d97706", "#059669", "#db2777", "#7c3aed", "#0891b2"];
const CHART_WIDTH = 360;
const AXIS_START = 14;
const AXIS_END = CHART_WIDTH - 14;
const GROUP_LINE = 12;

/**
 * A dimension's range. `overall`, the mean of the others, is drawn on the span of their ranges
 * (-10..10 for Sotopia's seven): the same units as any one dimension, where the exact bounds
 * of a mean of mixed ranges (-4.29..5.71) would read as a mistake.
 */
function rangeOf(dimension, dimensions, ranges) {
  if (dimension !== "overall") return ranges[dimension] || null;
  const parts = dimensions.filter((d) => d !== "overall");
  if (!parts.length || !parts.every((d) => d in ranges)) return null;
  return [Math.min(...parts.map((d) => ranges[d][0])), Math.max(...parts.map((d) => ranges[d][1]))];
}

/** Characters of a dimension's name on one line of the chart (its widest letters included). */
const LABEL_CHARACTERS = 38;
const LABEL_LINE = 15;

/** A dimension's name in lines that fit its band, broken between words (a longer word, by force). */
function labelLines(name) {
  const lines = [];
  for (const word of label(name).split(" ")) {
    for (let start = 0; start < word.length; start += LABEL_CHARACTERS) {
      const piece = word.slice(start, start + LABEL_CHARACTERS);
      const last = lines.length - 1;
      if (start === 0 && last >= 0 && lines[last].length + 1 + piece.length <= LABEL_CHARACTERS) lines[last] += ` ${piece}`;
      else lines.push(piece);
    }
  }
  return lines.length ? lines : [""];
}

/**
 * Each group's mean per dimension as a dot with its 95% interval as an error bar. Each
 * dimension is a band of its own: its name (in lines that fit), one line per group, and an
 * axis on that dimension's range in `ranges` (or the data's own span where the range is not
 * known) with its ends labelled, all inside the band. Null when no group has a score.
 */
export function intervalChart(groups, ranges = SOTOPIA_RANGES) {
  const scored = groups.filter((g) => g.dimensions.length);
  if (!scored.length) return null;
  const dimensions = scored[0].dimensions.map((d) => d.dimension);
  const groupsHeight = 50 + (groups.length - 1) * GROUP_LINE;
  const names = dimensions.map(labelLines);
  const heights = names.map((lines) => groupsHeight + (lines.length - 1) * LABEL_LINE);
  const height = heights.reduce((sum, h) => sum + h, 0);
  const parts = [svg("title", {}, "Mean score per dimension with 95% intervals")];
  let top = 0;
  dimensions.forEach((dimension, i) => {
    const results = groups.map((g) => g.dimensions.find((d) => d.dimension === dimension) || null);
    const values = results.filter(Boolean).flatMap((r) => (r.confidenceInterval ? [r.confidenceInterval.low, r.confidenceInterval.high] : [r.mean]));
    const [low, high] = rangeOf(dimension, dimensions, ranges) || [Math.floor(Math.min(0, ...values)), Math.ceil(Math.max(1, ...values))];
    const x = (value) => AXIS_START + ((Math.min(high, Math.max(low, value)) - low) / (high - low || 1)) * (AXIS_END - AXIS_START);
    const rowTop = top;
    const labelled = (names[i].length - 1) * LABEL_LINE;
    const dotY = (j) => rowTop + labelled + 26 + j * GROUP_LINE;
    const axisY = dotY(groups.length - 1) + 8;
    const row = svg(
      "g",
      { class: "dimension-row", "data-dimension": dimension, "data-low": low, "data-high": high },
      svg("rect", { x: 0, y: rowTop, width: CHART_WIDTH, height: heights[i], class: `band band-${i % 2}` }),
      svg(
        "text",
        { x: AXIS_START, y: rowTop + 15, class: "dimension-label" },
        names[i].map((line, k) => svg("tspan", { x: AXIS_START, dy: k ? LABEL_LINE : 0 }, line)),
      ),
      low < 0 && high > 0 ? svg("line", { x1: x(0), x2: x(0), y1: dotY(0) - 6, y2: axisY, class: "zero-line" }) : null,
      svg("line", { x1: x(low), x2: x(high), y1: axisY, y2: axisY, class: "axis" }),
      svg("text", { x: x(low), y: axisY + 12, class: "tick low", "text-anchor": "start" }, String(low)),
      low < 0 && high > 0 ? svg("text", { x: x(0), y: axisY + 12, class: "tick origin", "text-anchor": "middle" }, "0") : null,
      svg("text", { x: x(high), y: axisY + 12, class: "tick high", "text-anchor": "end" }, String(high)),
    );
    results.forEach((result, j) => {
      if (!result) return;
      const cy = dotY(j);
      const colour = PALETTE[j % PALETTE.length];
      const interval = result.confidenceInterval;
      row.append(
        svg(
          "g",
          { class: "interval", "data-dimension": dimension, "data-group": groups[j].model || "", "data-mean": result.mean },
          interval ? svg("line", { x1: x(interval.low), x2: x(interval.high), y1: cy, y2: cy, stroke: colour, "stroke-width": 2 }) : null,
          interval ? svg("line", { x1: x(interval.low), x2: x(interval.low), y1: cy - 4, y2: cy + 4, stroke: colour }) : null,
          interval ? svg("line", { x1: x(interval.high), x2: x(interval.high), y1: cy - 4, y2: cy + 4, stroke: colour }) : null,
          svg("circle", { cx: x(result.mean), cy, r: 4, fill: colour }),
        ),
      );
    });
    parts.push(row);
    top += heights[i];
  });
  const legend = h(
    "ul",
    { class: "legend" },
    groups.map((g, j) => h("li", {}, h("span", { class: `swatch swatch-${j % PALETTE.length}` }), g.model || "(none)")),
  );
  return h(
    "figure",
    { class: "interval-chart" },
    h("figcaption", {}, "Each model's mean per dimension, on that dimension's range; the bars are 95% intervals."),
    legend,
    svg(
      "svg",
      {
        viewBox: `0 0 ${CHART_WIDTH} ${height}`,
        role: "img",
        "aria-label": groups.map((g) => `${g.model}: ` + g.dimensions.map((d) => `${label(d.dimension)} ${d.mean.toFixed(2)}`).join(", ")).join("; "),
        class: "chart",
      },
      ...parts,
    ),
  );
}
