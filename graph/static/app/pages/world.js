// The stored world: agents, scenarios and relationships, each listed, searched, viewed,
// created and edited through one form description per kind.

import { agentChoice, agentFinder, choiceBox } from "../choice.js";
import { append, h, routeLink, words } from "../dom.js";
import { RELATIONSHIPS } from "../enums.js";
import { goalPreview, goalView } from "../goal.js";
import { AGENT_FIELDS, backStack, episodeTable, notFound, pageSize, pager, showFieldErrors } from "./common.js";

// kind: text | textarea | int | list (comma-separated) | lines (one per line) | goals (lines,
// each a goal shown with its hints labelled) | enum
const SCENARIO_FIELDS = [
  ["codename", "Codename", "text"],
  ["scenario", "Situation", "textarea", { required: true }],
  ["agentGoals", "Goals, one line per seat", "goals", { required: true }],
  ["source", "Source", "text"],
  ["relationship", "Assumed relationship", "enum", { choices: RELATIONSHIPS }],
  ["ageConstraint", "Age constraint", "text", { nullable: true }],
  ["occupationConstraint", "Occupation constraint", "text", { nullable: true }],
  ["tag", "Tag", "text"],
];
const RELATIONSHIP_FIELDS = [
  ["agentId", "First agent", "agent", { createOnly: true }],
  ["otherAgentId", "Second agent", "agent", { createOnly: true }],
  ["relationship", "Relationship", "enum", { choices: RELATIONSHIPS }],
  ["backgroundStory", "Background story", "textarea", { nullable: true }],
  ["tag", "Tag", "text"],
];

function control(name, kind, options, value) {
  const id = `field-${name}`;
  const common = { id, name, required: options.required };
  if (kind === "textarea" || kind === "lines" || kind === "goals") {
    const text = kind === "textarea" ? value || "" : (value || []).join("\n");
    return h("textarea", { ...common, rows: kind === "textarea" ? 4 : 3 }, text);
  }
  if (kind === "enum") {
    return h("select", common, options.choices.map((v) => h("option", { value: v, selected: v === value }, words(v))));
  }
  const shown = kind === "list" ? (value || []).join(", ") : value ?? "";
  return h("input", { ...common, type: kind === "int" ? "number" : "text", value: String(shown) });
}

const lines = (text) => text.split("\n").map((s) => s.trim()).filter(Boolean);

function read(form, name, kind, options) {
  const raw = form.elements[name].value;
  if (kind === "int") return raw === "" ? 0 : Number.parseInt(raw, 10);
  if (kind === "list") return raw.split(",").map((s) => s.trim()).filter(Boolean);
  if (kind === "lines" || kind === "goals") return lines(raw);
  if (options.nullable && raw.trim() === "") return null;
  return raw;
}

/**
 * A create-or-edit form; `original` is null to create. Resolves to the saved record's id.
 * `given` ({id, text} or null) is the agent an address named, chosen for `agentId`.
 */
function recordForm({ api, fields, original, create, update, payload, given = null, onSaved }) {
  const form = h("form", { class: "record-form", novalidate: true }, h("div", { class: "form-errors", role: "alert" }));
  for (const [name, label, kind, options = {}] of fields) {
    if (original && options.createOnly) continue;
    if (kind === "agent") {
      const current = name === "agentId" ? given : null;
      form.append(choiceBox({ id: `field-${name}`, name, label, current, find: agentFinder(api), noun: "agent" }));
      continue;
    }
    const input = control(name, kind, options, original ? original[name] : kind === "enum" ? options.choices[0] : null);
    const preview = kind === "goals" ? goalPreview(input, lines) : null;
    form.append(h("div", { class: "field", dataset: { field: name } }, h("label", { for: input.id }, label, options.required ? " (required)" : ""), input, preview));
  }
  const submit = h("button", { type: "submit" }, original ? "Save changes" : "Create");
  form.append(submit);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const input = {};
    for (const [name, , kind, options = {}] of fields) {
      if (original && options.createOnly) continue;
      const value = read(form, name, kind, options);
      if (!original || JSON.stringify(value) !== JSON.stringify(original[name] ?? null)) input[name] = value;
    }
    if (original) input.id = original.id;
    submit.disabled = true;
    try {
      const result = await api.request(original ? update : create, { input });
      const { userErrors } = result[Object.keys(result)[0]];
      if (userErrors.length) return showFieldErrors(form, userErrors);
      onSaved(result[Object.keys(result)[0]][payload].id);
    } catch (error) {
      showFieldErrors(form, [{ field: [], message: error.message }]);
    } finally {
      submit.disabled = false;
    }
  });
  return form;
}

function facts(fields, record) {
  return h(
    "dl",
    { class: "facts" },
    fields.flatMap(([name, label, kind]) => {
      let value = record[name];
      if (kind === "goals") value = h("ol", { class: "goal-list" }, (value || []).map((goal) => h("li", {}, goalView(goal))));
      else if (Array.isArray(value)) value = kind === "lines" ? value.map((v) => h("div", {}, v)) : value.join(", ");
      else if (kind === "enum" && value) value = words(value);
      return [h("dt", {}, label.replace(/ \(.*\)$/, "").replace(/, one line per seat$/, "")), h("dd", {}, value === null || value === "" ? "—" : value)];
    }),
  );
}

function searchForm(path, fields, query) {
  const form = h(
    "form",
    { class: "filters", role: "search" },
    fields.map(([name, label]) =>
      h("div", { class: "field" }, h("label", { for: `search-${name}` }, label), h("input", { id: `search-${name}`, name, type: "search", value: query.get(name) || "" })),
    ),
    h("button", { type: "submit" }, "Search"),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    location.hash = routeLink(path, Object.fromEntries(new FormData(form).entries()));
  });
  return form;
}

function listPage({ path, title, operation, filterFields, columns, newLabel }) {
  return async ({ api, query, main }) => {
    const filter = {};
    for (const [name] of filterFields) if (query.get(name)) filter[name] = query.get(name);
    const after = query.get("after");
    const data = await api.request(operation, { filter, first: pageSize(query), after });
    const connection = Object.values(data)[0];
    main.append(
      h("h1", {}, title),
      h("p", {}, h("a", { href: `#${path}/new`, class: "button" }, newLabel)),
      searchForm(path, filterFields, query),
      h("p", { class: "total" }, `${connection.totalCount} found.`),
      h(
        "table",
        { class: "records" },
        h("thead", {}, h("tr", {}, columns.map(([label]) => h("th", { scope: "col" }, label)))),
        h("tbody", {}, connection.nodes.map((node) => h("tr", {}, columns.map(([, cell]) => h("td", {}, cell(node)))))),
      ),
      pager((params) => routeLink(path, params), { ...filter, first: query.get("first"), after }, connection.pageInfo, backStack(query)),
    );
  };
}

const link = (path, id, text) => h("a", { href: `#${path}/${encodeURIComponent(id)}` }, text);

const agentsPage = listPage({
  path: "/agents",
  title: "Agents",
  operation: "AgentList",
  filterFields: [["name", "Name"], ["occupation", "Occupation"], ["tag", "Tag"]],
  columns: [
    ["Name", (a) => link("/agents", a.id, a.name)],
    ["Age", (a) => (a.age ? String(a.age) : "")],
    ["Occupation", (a) => a.occupation],
    ["Gender", (a) => a.gender],
    ["Tag", (a) => a.tag],
  ],
  newLabel: "New agent",
});

const scenariosPage = listPage({
  path: "/scenarios",
  title: "Scenarios",
  operation: "ScenarioList",
  filterFields: [["codename", "Codename"], ["tag", "Tag"]],
  columns: [
    ["Codename", (s) => link("/scenarios", s.id, s.codename || s.id)],
    ["Situation", (s) => s.scenario],
    ["Relationship", (s) => words(s.relationship)],
    ["Tag", (s) => s.tag],
  ],
  newLabel: "New scenario",
});

const relationshipsPage = async ({ api, query, main }) => {
  const agent = await agentChoice(api, query.get("agentId"));
  const filter = {};
  if (query.get("agentId")) filter.agentId = query.get("agentId");
  if (query.get("relationship")) filter.relationship = query.get("relationship");
  const after = query.get("after");
  const data = await api.request("RelationshipList", { filter, first: pageSize(query), after });
  const form = h(
    "form",
    { class: "filters", role: "search" },
    choiceBox({ id: "search-agentId", name: "agentId", label: "Agent", current: agent, find: agentFinder(api), noun: "agent", none: "any" }),
    h(
      "div",
      { class: "field" },
      h("label", { for: "search-relationship" }, "Kind"),
      h("select", { id: "search-relationship", name: "relationship" }, h("option", { value: "" }, "any"), RELATIONSHIPS.map((r) => h("option", { value: r, selected: r === filter.relationship }, words(r)))),
    ),
    h("button", { type: "submit" }, "Search"),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    location.hash = routeLink("/relationships", Object.fromEntries(new FormData(form).entries()));
  });
  const rows = data.relationships.nodes.map((r) =>
    h(
      "tr",
      {},
      h("td", {}, r.agent ? link("/agents", r.agent.id, r.agent.name) : "(deleted)"),
      h("td", {}, r.otherAgent ? link("/agents", r.otherAgent.id, r.otherAgent.name) : "(deleted)"),
      h("td", {}, link("/relationships", r.id, words(r.relationship))),
      h("td", {}, r.backgroundStory || ""),
    ),
  );
  main.append(
    h("h1", {}, "Relationships"),
    h("p", {}, h("a", { href: "#/relationships/new", class: "button" }, "New relationship")),
    form,
    h("p", { class: "total" }, `${data.relationships.totalCount} found.`),
    h("table", { class: "records" }, h("thead", {}, h("tr", {}, ["Agent", "Other agent", "Kind", "Story"].map((t) => h("th", { scope: "col" }, t)))), h("tbody", {}, rows)),
    pager((params) => routeLink("/relationships", params), { ...filter, first: query.get("first"), after }, data.relationships.pageInfo, backStack(query)),
  );
};

function missing(main, what, id, path) {
  return notFound(main, `${what} not found`, [`There is no ${what.toLowerCase()} with the id `, h("code", {}, id), "."], h("a", { href: `#${path}` }, "See the list"));
}

async function agentPage({ api, main }, id) {
  const data = await api.request("AgentDetail", { id, episodes: { agentId: id } });
  if (!data.agent) return missing(main, "Agent", id, "/agents");
  const agent = data.agent;
  append(main, [
    h("h1", {}, agent.name),
    h("p", {}, h("a", { href: `#/agents/${encodeURIComponent(id)}/edit`, class: "button" }, "Edit")),
    facts(AGENT_FIELDS, agent),
    h("h2", {}, "Relationships"),
    agent.relationships.length
      ? h(
          "ul",
          { class: "relationships" },
          agent.relationships.map((r) =>
            h("li", {}, link("/relationships", r.relationship.id, words(r.type)), " of ", r.otherAgent ? link("/agents", r.otherAgent.id, r.otherAgent.name) : `${r.otherAgentId} (deleted)`, r.relationship.backgroundStory ? `: ${r.relationship.backgroundStory}` : ""),
          ),
        )
      : h("p", {}, "None."),
    h("p", {}, h("a", { href: routeLink("/relationships/new", { agentId: id }) }, "Add a relationship")),
    h("h2", {}, `Episodes (${data.episodes.totalCount})`),
    data.episodes.nodes.length ? episodeTable(data.episodes.nodes, "Latest episodes with this agent") : h("p", {}, "None yet."),
    data.episodes.totalCount > data.episodes.nodes.length ? h("p", {}, h("a", { href: routeLink("/", { agentId: id }) }, "All of them")) : null,
  ]);
}

async function scenarioPage({ api, main }, id) {
  const data = await api.request("ScenarioDetail", { id, episodes: { scenarioId: id } });
  if (!data.scenario) return missing(main, "Scenario", id, "/scenarios");
  main.append(
    h("h1", {}, data.scenario.codename || "Scenario"),
    h("p", {}, h("a", { href: `#/scenarios/${encodeURIComponent(id)}/edit`, class: "button" }, "Edit")),
    facts(SCENARIO_FIELDS, data.scenario),
    h("h2", {}, `Episodes (${data.episodes.totalCount})`),
    data.episodes.nodes.length ? episodeTable(data.episodes.nodes, "Latest episodes of this scenario") : h("p", {}, "None yet."),
  );
}

async function relationshipPage({ api, main }, id) {
  const data = await api.request("RelationshipDetail", { id });
  if (!data.relationship) return missing(main, "Relationship", id, "/relationships");
  const r = data.relationship;
  main.append(
    h("h1", {}, `${r.agent ? r.agent.name : "?"} and ${r.otherAgent ? r.otherAgent.name : "?"}`),
    h("p", {}, h("a", { href: `#/relationships/${encodeURIComponent(id)}/edit`, class: "button" }, "Edit")),
    h(
      "dl",
      { class: "facts" },
      h("dt", {}, "Kind"),
      h("dd", {}, words(r.relationship)),
      h("dt", {}, "Background story"),
      h("dd", {}, r.backgroundStory || "—"),
      h("dt", {}, "Tag"),
      h("dd", {}, r.tag || "—"),
    ),
  );
}

function editPage({ what, path, fields, detail, key, create, update, payload, needsAgents }) {
  return async ({ api, main, query }, id) => {
    let original = null;
    if (id) {
      const data = await api.request(detail, { id, episodes: {} });
      original = data[key];
      if (!original) return missing(main, what, id, path);
    }
    const given = needsAgents ? await agentChoice(api, query.get("agentId")) : null;
    const form = recordForm({
      api,
      fields,
      original,
      create,
      update,
      payload,
      given,
      onSaved: (savedId) => {
        location.hash = `#${path}/${encodeURIComponent(savedId)}`;
      },
    });
    main.append(h("h1", {}, original ? `Edit ${what.toLowerCase()}` : `New ${what.toLowerCase()}`), form);
  };
}

const agentForm = { what: "Agent", path: "/agents", fields: AGENT_FIELDS, detail: "AgentDetail", key: "agent", create: "CreateAgent", update: "UpdateAgent", payload: "agent" };
const scenarioForm = { what: "Scenario", path: "/scenarios", fields: SCENARIO_FIELDS, detail: "ScenarioDetail", key: "scenario", create: "CreateScenario", update: "UpdateScenario", payload: "scenario" };
const relationshipForm = { what: "Relationship", path: "/relationships", fields: RELATIONSHIP_FIELDS, detail: "RelationshipDetail", key: "relationship", create: "CreateRelationship", update: "UpdateRelationship", payload: "relationship", needsAgents: true };

export const worldRoutes = [
  [/^\/agents$/, agentsPage, "agents"],
  [/^\/agents\/new$/, editPage(agentForm), "agents"],
  [/^\/agents\/([^/]+)\/edit$/, editPage(agentForm), "agents"],
  [/^\/agents\/([^/]+)$/, agentPage, "agents"],
  [/^\/scenarios$/, scenariosPage, "scenarios"],
  [/^\/scenarios\/new$/, editPage(scenarioForm), "scenarios"],
  [/^\/scenarios\/([^/]+)\/edit$/, editPage(scenarioForm), "scenarios"],
  [/^\/scenarios\/([^/]+)$/, scenarioPage, "scenarios"],
  [/^\/relationships$/, relationshipsPage, "relationships"],
  [/^\/relationships\/new$/, editPage(relationshipForm), "relationships"],
  [/^\/relationships\/([^/]+)\/edit$/, editPage(relationshipForm), "relationships"],
  [/^\/relationships\/([^/]+)$/, relationshipPage, "relationships"],
];
