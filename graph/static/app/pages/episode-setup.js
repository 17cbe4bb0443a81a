// What an episode was set up with: its scenario, agents and their models, goals, relationship,
// judge and dimensions.

import { h, when, words } from "../dom.js";
import { goalView } from "../goal.js";

function agentRow(episode, agentId, i) {
  const agent = episode.agents[i];
  return h(
    "tr",
    {},
    h("td", {}, String(i + 1)),
    h(
      "td",
      {},
      agent ? h("a", { href: `#/agents/${encodeURIComponent(agent.id)}` }, agent.name) : `${agentId} (deleted)`,
      agent ? h("span", { class: "who" }, `${agent.occupation || ""}${agent.age ? ", " + agent.age : ""}`) : null,
    ),
    h(
      "td",
      {},
      episode.humanSeats.some((s) => s.seat === i)
        ? h("span", { class: "human" }, "a person")
        : h("code", {}, episode.agentModels[i] || episode.agentModels[0] || ""),
    ),
  );
}

function agentsTable(episode) {
  return h(
    "table",
    { class: "agents" },
    h("caption", {}, "Agents, in seat order"),
    h("thead", {}, h("tr", {}, ["Seat", "Agent", "Model"].map((t) => h("th", { scope: "col", class: t.toLowerCase() }, t)))),
    h("tbody", {}, episode.agentIds.map((agentId, i) => agentRow(episode, agentId, i))),
  );
}

function goalsList(episode) {
  const goals = episode.scenario ? episode.scenario.agentGoals : [];
  const items = episode.agentIds.map((agentId, i) => [
    h("dt", {}, `${episode.agents[i] ? episode.agents[i].name : agentId} (seat ${i + 1})`),
    h("dd", {}, goals[i] ? goalView(goals[i]) : "—"),
  ]);
  return h("dl", { class: "goals" }, items);
}

function relationships(episode) {
  const items = episode.relationships.map((r) =>
    h(
      "li",
      {},
      `${r.agent ? r.agent.name : "?"} and ${r.otherAgent ? r.otherAgent.name : "?"}: `,
      h("strong", {}, words(r.relationship)),
      r.backgroundStory ? ` (${r.backgroundStory})` : "",
    ),
  );
  if (items.length) return h("ul", { class: "relationships" }, items);
  const scenario = episode.scenario;
  return h("p", {}, scenario ? `None stored; the scenario assumes ${words(scenario.relationship)}.` : "None stored.");
}

function facts(episode, list) {
  return h(
    "dl",
    { class: "facts" },
    h("dt", {}, "Judge"),
    h("dd", {}, h("code", {}, episode.judgeModel || "")),
    h("dt", {}, "Turn order"),
    h("dd", {}, words(episode.turnOrder)),
    h("dt", {}, "Dimensions"),
    h("dd", {}, list ? list.name : "Sotopia's seven"),
    h("dt", {}, "Created"),
    h("dd", {}, when(episode.createdAt)),
  );
}

function scenarioLine(episode) {
  const scenario = episode.scenario;
  if (!scenario) return h("p", {}, `Scenario ${episode.scenarioId} was deleted.`);
  const link = h("a", { href: `#/scenarios/${encodeURIComponent(scenario.id)}` }, scenario.codename || "Scenario");
  return h("p", { class: "scenario" }, link, ": ", scenario.scenario);
}

export function setupSection(state) {
  const node = h("section", { class: "setup", "aria-labelledby": "setup-title" });
  const draw = () => {
    const episode = state.episode;
    const list = state.lists.find((l) => l.id === episode.evaluationDimensionListId);
    node.replaceChildren(
      h("h2", { id: "setup-title" }, "Setup"),
      scenarioLine(episode),
      agentsTable(episode),
      h("h3", {}, "Goals"),
      goalsList(episode),
      h("h3", {}, "Relationship"),
      relationships(episode),
      facts(episode, list),
    );
  };
  return { node, draw };
}
