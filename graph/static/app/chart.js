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
