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

const WIDTH = 420;
const LABEL = 190;
const BAR_LEFT = LABEL + 10;
const BAR_WIDTH = 170;
const ROW = 26;

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
    const x = (value) => BAR_LEFT + ((Math.min(high, Math.max(low, value)) - low) / (high - low || 1)) * BAR_WIDTH;
    const y = 5 + i * ROW;
    const zero = x(0);
    const end = x(row.score);
    parts.push(
      svg(
        "g",
        { class: "dimension", "data-dimension": row.dimension, "data-score": row.score },
        svg("text", { x: LABEL, y: y + 15, "text-anchor": "end", class: "dimension-label" }, label(row.dimension)),
        svg("rect", { x: BAR_LEFT, y: y + 3, width: BAR_WIDTH, height: 16, class: "track" }),
        svg("rect", {
          x: Math.min(zero, end),
          y: y + 3,
          width: Math.max(1.5, Math.abs(end - zero)),
          height: 16,
          class: row.score < 0 ? "bar negative" : "bar",
        }),
        svg("line", { x1: zero, x2: zero, y1: y, y2: y + 22, class: "zero" }),
        svg("text", { x: BAR_LEFT + BAR_WIDTH + 6, y: y + 15, class: "score" }, `${row.score} (${low}..${high})`),
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
        viewBox: `0 0 ${WIDTH + 90} ${height}`,
        role: "img",
        "aria-label": `${name}: ` + rows.map((r) => `${label(r.dimension)} ${r.score}`).join(", "),
        class: "chart",
      },
      ...parts,
    ),
  );
}
