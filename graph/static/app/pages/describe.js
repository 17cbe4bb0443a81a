// Describe a situation: a sentence becomes a drafted scenario, two agents and their
// relationship (draftWorld); every field can be edited, then saved in one step (saveDraft), and
// a simulation started from what was saved in one more click.

import { h, words } from "../dom.js";
import { RELATIONSHIPS } from "../enums.js";
import { goalPreview } from "../goal.js";
import { AGENT_FIELDS as ALL_AGENT_FIELDS } from "./common.js";

/** What a draft gives an agent: every field of its form but its default model and tag. */
const AGENT_FIELDS = ALL_AGENT_FIELDS.filter(([key]) => key !== "modelId" && key !== "tag");
const SCENARIO_FIELDS = [
  ["codename", "Codename", "text"],
  ["scenario", "Situation", "textarea"],
  ["relationship", "Relationship it assumes", "relationship"],
];
const RELATIONSHIP_FIELDS = [
  ["relationship", "Relationship", "relationship"],
  ["backgroundStory", "Background story", "textarea"],
];

function control(id, kind, value) {
  if (kind === "textarea") return h("textarea", { id, name: id, rows: "3" }, value ?? "");
  if (kind === "relationship") {
    const select = h("select", { id, name: id }, RELATIONSHIPS.map((r) => h("option", { value: r }, words(r))));
    select.value = value;
    return select;
  }
  if (kind === "int") return h("input", { id, name: id, type: "number", value: String(value ?? 0) });
  const text = kind === "list" ? (value || []).join(", ") : value ?? "";
  return h("input", { id, name: id, type: "text", value: text });
}

function fieldFor(path, label, kind, value) {
  const id = path.replaceAll(".", "-");
  const input = control(id, kind, value);
  input.dataset.kind = kind;
  return h("div", { class: "field", dataset: { field: path } }, h("label", { for: id }, label), input);
}

function read(form, path) {
  const input = form.querySelector(`[data-field="${CSS.escape(path)}"] [name]`);
  const kind = input.dataset.kind;
  if (kind === "int") return Number.parseInt(input.value, 10);
  if (kind === "list") return input.value.split(",").map((v) => v.trim()).filter(Boolean);
  return input.value;
}

/** Errors next to their fields: ["input" or "draft", "agents", "0", "age"] names data-field "agents.0.age". */
function showErrors(form, errors) {
  for (const old of form.querySelectorAll(".field-error")) old.remove();
  for (const field of form.querySelectorAll("[aria-invalid]")) field.removeAttribute("aria-invalid");
  const general = form.querySelector(".form-errors");
  general.replaceChildren();
  for (const error of errors) {
    const path = error.field.slice(1).join(".");
    const target = path ? form.querySelector(`[data-field="${CSS.escape(path)}"]`) : null;
    if (!target) {
      general.append(h("p", { role: "alert" }, error.message));
      continue;
    }
    const id = `${path.replaceAll(".", "-")}-error`;
    const input = target.querySelector("[name]");
    input.setAttribute("aria-invalid", "true");
    input.setAttribute("aria-describedby", id);
    target.append(h("p", { class: "field-error", id, role: "alert" }, error.message));
  }
}

function editor(draft) {
  const scenario = draft.scenarios[0];
  const sections = [
    h(
      "fieldset",
      { class: "draft-scenario" },
      h("legend", {}, "Scenario"),
      SCENARIO_FIELDS.map(([key, label, kind]) => fieldFor(`scenarios.0.${key}`, label, kind, scenario[key])),
      scenario.agentGoals.map((goal, seat) => {
        const field = fieldFor(`scenarios.0.agentGoals.${seat}`, `Goal of seat ${seat + 1} (${draft.agents[seat]?.firstName || "agent"})`, "textarea", goal);
        field.append(goalPreview(field.querySelector("textarea")));
        return field;
      }),
    ),
    draft.agents.map((agent, i) =>
      h(
        "fieldset",
        { class: "draft-agent" },
        h("legend", {}, `Agent ${i + 1}`),
        AGENT_FIELDS.map(([key, label, kind]) => fieldFor(`agents.${i}.${key}`, label, kind, agent[key])),
      ),
    ),
    draft.relationships.map((relation, i) =>
      h(
        "fieldset",
        { class: "draft-relationship", dataset: { agents: `${relation.agentIndex},${relation.otherAgentIndex}` } },
        h("legend", {}, `How agents ${relation.agentIndex + 1} and ${relation.otherAgentIndex + 1} relate`),
        RELATIONSHIP_FIELDS.map(([key, label, kind]) => fieldFor(`relationships.${i}.${key}`, label, kind, relation[key])),
      ),
    ),
  ];
  return sections;
}

function edited(form, draft) {
  return {
    agents: draft.agents.map((_, i) => Object.fromEntries(AGENT_FIELDS.map(([key]) => [key, read(form, `agents.${i}.${key}`)]))),
    scenarios: draft.scenarios.map((scenario, i) => ({
      ...Object.fromEntries(SCENARIO_FIELDS.map(([key]) => [key, read(form, `scenarios.${i}.${key}`)])),
      agentGoals: scenario.agentGoals.map((_, seat) => read(form, `scenarios.${i}.agentGoals.${seat}`)),
    })),
    relationships: draft.relationships.map((relation, i) => ({
      agentIndex: relation.agentIndex,
      otherAgentIndex: relation.otherAgentIndex,
      ...Object.fromEntries(RELATIONSHIP_FIELDS.map(([key]) => [key, read(form, `relationships.${i}.${key}`)])),
    })),
  };
}

export async function describePage({ api, main }) {
  const { models } = await api.request("DescribeOptions");
  const usable = models.filter((m) => m.available);
  const situation = h("textarea", { id: "situation", name: "situation", rows: "3", required: true, placeholder: "Two roommates argue about the rent; one of them is secretly moving out." });
  const model = h("select", { id: "draftModel", name: "draftModel" }, usable.map((m) => h("option", { value: m.name }, `${m.name} (${m.provider})`)));
  const draftButton = h("button", { type: "submit" }, "Draft it");
  const ask = h(
    "form",
    { class: "describe-form", novalidate: true, "aria-labelledby": "describe-title" },
    h("div", { class: "form-errors", role: "alert" }),
    h("div", { class: "field", dataset: { field: "prompt" } }, h("label", { for: "situation" }, "The situation, in a sentence"), situation),
    h("div", { class: "field", dataset: { field: "model" } }, h("label", { for: "draftModel" }, "Model that drafts (and plays)"), model),
    draftButton,
  );
  const result = h("div", { class: "draft", "aria-live": "polite" });

  ask.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (!situation.value.trim()) return showErrors(ask, [{ field: ["input", "prompt"], message: "Describe a situation first." }]);
    draftButton.disabled = true;
    result.replaceChildren(h("p", { class: "loading" }, "Drafting…"));
    try {
      const payload = (await api.request("DraftWorld", { input: { prompt: situation.value.trim(), model: model.value } })).draftWorld;
      result.replaceChildren();
      if (!payload.draft) return showErrors(ask, payload.userErrors);
      showErrors(ask, []);
      showDraft(payload.draft, payload.userErrors, model.value);
    } catch (error) {
      result.replaceChildren();
      showErrors(ask, [{ field: [], message: error.message }]);
    } finally {
      draftButton.disabled = false;
    }
  });

  function showDraft(draft, problems, chosenModel) {
    const save = h("button", { type: "submit" }, "Save");
    const failing = h("p", { class: "still-failing", role: "status", hidden: true });
    const form = h(
      "form",
      { class: "draft-form", novalidate: true, "aria-labelledby": "draft-title" },
      h("h2", { id: "draft-title" }, "The draft"),
      h("p", { class: "hint" }, "Nothing is stored yet: change anything, then save."),
      h("div", { class: "form-errors", role: "alert" }),
      editor(draft),
      failing,
      save,
    );
    /** The checks the draft (or the last save) fails, beside each field and counted by Save. */
    const showProblems = (errors) => {
      showErrors(form, errors);
      const count = errors.length;
      failing.hidden = count === 0;
      failing.textContent = count === 1
        ? "1 field fails the checks, marked above: fix it before saving."
        : `${count} fields fail the checks, marked above: fix them before saving.`;
    };
    const after = h("div", { class: "saved", "aria-live": "polite" });
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      save.disabled = true;
      try {
        const saved = (await api.request("SaveDraft", { input: edited(form, draft) })).saveDraft;
        if (saved.userErrors.length) {
          save.disabled = false;
          return showProblems(saved.userErrors);
        }
        showProblems([]);
        for (const input of form.querySelectorAll("[name]")) input.disabled = true;
        showSaved(after, saved, chosenModel);
      } catch (error) {
        save.disabled = false;
        showErrors(form, [{ field: [], message: error.message }]);
      }
    });
    result.replaceChildren(form, after);
    if (problems.length) showProblems(problems);
  }

  function showSaved(after, saved, chosenModel) {
    const start = h("button", { type: "button", class: "start-draft" }, "Start a simulation");
    const errors = h("div", { class: "form-errors", role: "alert" });
    start.addEventListener("click", async () => {
      start.disabled = true;
      const input = {
        scenarioId: saved.scenarioIds[0],
        agentIds: saved.agentIds,
        agentModels: [chosenModel],
        judgeModel: chosenModel,
        maxTurns: 6,
      };
      try {
        const { episode, userErrors } = (await api.request("StartSimulation", { input })).startSimulation;
        if (userErrors.length) {
          start.disabled = false;
          return errors.replaceChildren(...userErrors.map((e) => h("p", {}, e.message)));
        }
        location.hash = `#/episodes/${encodeURIComponent(episode.id)}`;
      } catch (error) {
        start.disabled = false;
        errors.replaceChildren(h("p", {}, error.message));
      }
    });
    after.replaceChildren(
      h("h2", {}, "Saved"),
      h(
        "ul",
        { class: "saved-ids" },
        h("li", {}, "Scenario ", h("a", { href: `#/scenarios/${encodeURIComponent(saved.scenarioIds[0])}` }, saved.scenarioIds[0])),
        saved.agentIds.map((id, i) => h("li", {}, `Agent ${i + 1} `, h("a", { href: `#/agents/${encodeURIComponent(id)}` }, id))),
        saved.relationshipIds.map((id) => h("li", {}, "Relationship ", h("a", { href: `#/relationships/${encodeURIComponent(id)}` }, id))),
      ),
      errors,
      start,
    );
  }

  main.append(
    h("h1", { id: "describe-title" }, "Describe a situation"),
    h("p", {}, "A model drafts a scenario, two agents with full profiles and their relationship from your sentence. Nothing is stored until you save."),
    ask,
    result,
  );
  return null;
}
