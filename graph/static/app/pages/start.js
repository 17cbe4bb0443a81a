// Start a simulation: scenario, agents (searchable, in seat order), models, limits; field
// errors from userErrors beside their fields; on success, the live episode page.

import { h, words } from "../dom.js";
import { showFieldErrors } from "./common.js";
import { seatLink } from "./seat.js";

function field(name, label, control, hint) {
  return h(
    "div",
    { class: "field", dataset: { field: name } },
    h("label", { for: control.id }, label),
    control,
    hint ? h("p", { class: "hint", id: `${control.id}-hint` }, hint) : null,
  );
}

function searchable(id, label, items, describe, multiple) {
  const search = h("input", { id: `${id}-search`, type: "search", placeholder: "Search", "aria-controls": `${id}-options` });
  const options = h("ul", { id: `${id}-options`, class: "choices", role: "list" });
  for (const item of items) {
    const input = h("input", { type: multiple ? "checkbox" : "radio", name: id, value: item.id, id: `${id}-${item.id}` });
    options.append(h("li", { dataset: { text: describe(item).toLowerCase() } }, input, h("label", { for: input.id }, describe(item))));
  }
  search.addEventListener("input", () => {
    const wanted = search.value.trim().toLowerCase();
    for (const li of options.children) li.hidden = wanted !== "" && !li.dataset.text.includes(wanted);
  });
  return h(
    "fieldset",
    { class: "field", dataset: { field: id }, id },
    h("legend", {}, label),
    h("label", { for: search.id, class: "visually-hidden" }, `Search ${label.toLowerCase()}`),
    search,
    options,
  );
}

function modelSelect(id, models) {
  return h(
    "select",
    { id, name: id },
    models.map((m) =>
      h(
        "option",
        { value: m.name, disabled: !m.available },
        m.available ? `${m.name} (${m.provider})` : `${m.name}: unavailable, ${m.reason || "no reason given"}`,
      ),
    ),
  );
}

/** Where each person plays: the links holding the seats' tokens, shown this once. */
function seatLinks(episode, seatTokens) {
  return h(
    "section",
    { class: "seat-links", "aria-labelledby": "seat-links-title" },
    h("h2", { id: "seat-links-title" }, "Started: people play these seats"),
    h("p", {}, "Each link holds its seat's token, shown only this once: give each one to the person who plays that seat."),
    h(
      "ul",
      {},
      seatTokens.map(({ seat, token }) => {
        const name = episode.agents[seat] ? episode.agents[seat].name : `seat ${seat + 1}`;
        const link = seatLink(episode.id, seat, token);
        const full = new URL(link, location.href).href;
        const open = h("button", { type: "button", dataset: { seat } }, `Open seat ${seat + 1}`);
        open.addEventListener("click", () => {
          location.hash = link;
        });
        return h(
          "li",
          { dataset: { seat } },
          h("a", { href: link, class: "seat-link", dataset: { seat } }, `Play ${name} (seat ${seat + 1})`),
          " ",
          open,
          h("br"),
          h("code", {}, full),
        );
      }),
    ),
    h("p", {}, h("a", { href: `#/episodes/${encodeURIComponent(episode.id)}` }, "Watch the episode")),
  );
}

/**
 * The server's errors moved to the fields a person filled in: a model typed into "another model
 * for both" stands for the agents' and the judge's, and a stand-in left to "the judge's model"
 * is the judge's; one message per field.
 */
function besideTheirFields(errors, { other, standIn }) {
  const seen = new Set();
  return errors.flatMap((error) => {
    let [root, name, ...rest] = error.field;
    if (other && (name === "agentModels" || name === "judgeModel" || (name === "standInModel" && !standIn))) name = "otherModel";
    else if (name === "standInModel" && !standIn) name = "judgeModel";
    const key = `${name}\n${error.message}`;
    if (seen.has(key)) return [];
    seen.add(key);
    return [{ ...error, field: name === undefined ? error.field : [root, name, ...rest] }];
  });
}

export async function startPage({ api, main }) {
  const options = await api.request("StartOptions");
  const models = options.models;
  const scenarios = options.scenarios.nodes;
  const agents = options.agents.nodes;

  const seats = [];
  const people = new Set(); // the agents a person plays instead of a model
  const seatList = h("ol", { class: "seats", "aria-live": "polite" });
  const personList = h("ul", { class: "choices people-seats", dataset: { field: "humanSeats" } });
  const personField = h(
    "fieldset",
    { class: "field", hidden: true },
    h("legend", {}, "Played by a person instead of a model"),
    personList,
  );
  const peopleFields = h("fieldset", { class: "field people", hidden: true }, h("legend", {}, "People in seats"));
  const drawSeats = () => {
    seatList.replaceChildren(
      ...seats.map((agentId) => h("li", {}, agents.find((a) => a.id === agentId).name)),
    );
    if (!seats.length) seatList.append(h("li", { class: "hint" }, "Pick two or more agents; the order you pick them in is the seat order."));
    personList.replaceChildren(
      ...seats.map((agentId, i) => {
        const name = agents.find((a) => a.id === agentId).name;
        const box = h("input", {
          type: "checkbox",
          id: `person-${agentId}`,
          checked: people.has(agentId),
        });
        box.addEventListener("change", () => {
          if (box.checked) people.add(agentId);
          else people.delete(agentId);
          peopleFields.hidden = people.size === 0;
        });
        return h("li", {}, box, h("label", { for: box.id }, `${name} (seat ${i + 1})`));
      }),
    );
    personField.hidden = seats.length === 0;
    peopleFields.hidden = people.size === 0;
  };

  const scenarioField = searchable("scenarioId", "Scenario", scenarios, (s) => `${s.codename || s.id}: ${s.scenario}`, false);
  const agentField = searchable("agentIds", "Agents", agents, (a) => `${a.name}${a.occupation ? ", " + a.occupation : ""}`, true);
  agentField.append(h("p", { class: "hint" }, "Seats:"), seatList);
  agentField.addEventListener("change", (event) => {
    const box = event.target;
    const at = seats.indexOf(box.value);
    if (box.checked && at < 0) seats.push(box.value);
    if (!box.checked && at >= 0) seats.splice(at, 1);
    if (!box.checked) people.delete(box.value);
    drawSeats();
  });
  drawSeats();

  const usable = models.filter((m) => m.available);
  const unusable = models.filter((m) => !m.available);
  const agentModel = modelSelect("agentModel", models);
  const judgeModel = modelSelect("judgeModel", models);
  if (usable.length) agentModel.value = judgeModel.value = usable[0].name;
  const otherModel = h("input", { id: "otherModel", name: "otherModel", type: "text", placeholder: "custom/<model>@<base_url>" });

  const maxTurns = h("input", { id: "maxTurns", name: "maxTurns", type: "number", value: "10", min: "1", max: "100", required: true });
  const turnOrder = h("select", { id: "turnOrder", name: "turnOrder" }, ["ROUND_ROBIN", "SIMULTANEOUS", "RANDOM"].map((o) => h("option", { value: o }, words(o))));
  const dimensions = h(
    "select",
    { id: "evaluationDimensionListId", name: "evaluationDimensionListId" },
    h("option", { value: "" }, "Sotopia's seven"),
    options.evaluationDimensionLists.map((l) => h("option", { value: l.id }, `${l.name} (${l.dimensions.map((d) => d.name).join(", ")})`)),
  );
  const tag = h("input", { id: "tag", name: "tag", type: "text" });
  const redelivery = h(
    "select",
    { id: "redelivery", name: "redelivery" },
    h("option", { value: "RESUME" }, "resume from the stored turns"),
    h("option", { value: "RESTART" }, "start over"),
  );
  const deadline = h("input", { id: "seatDeadlineSeconds", name: "seatDeadlineSeconds", type: "number", value: "300", min: "1", max: "604800" });
  const onTimeout = h(
    "select",
    { id: "onSeatTimeout", name: "onSeatTimeout" },
    h("option", { value: "LEAVE" }, "the agent leaves"),
    h("option", { value: "STAND_IN" }, "a stand-in model plays the turn"),
    h("option", { value: "FAIL" }, "the episode fails"),
  );
  const standIn = h("select", { id: "standInModel", name: "standInModel" }, h("option", { value: "" }, "the judge's model"), usable.map((m) => h("option", { value: m.name }, m.name)));
  peopleFields.append(
    h("p", { class: "hint" }, "After starting, each person's seat gets a link to play it."),
    field("seatDeadlineSeconds", "Seconds for each turn", deadline, "1 to 604800."),
    field("onSeatTimeout", "If a person does not act in time", onTimeout),
    field("standInModel", "Stand-in model", standIn),
  );
  const submit = h("button", { type: "submit" }, "Start simulation");

  const form = h(
    "form",
    { class: "start-form", novalidate: true, "aria-labelledby": "start-title" },
    h("div", { class: "form-errors", role: "alert" }),
    scenarioField,
    agentField,
    personField,
    peopleFields,
    field("agentModels", "Agents' model", agentModel),
    field("judgeModel", "Judge's model", judgeModel),
    field("otherModel", "Or another model for both", otherModel, "Any OpenAI-compatible endpoint, as custom/<model>@<base_url>."),
    unusable.length
      ? h(
          "details",
          { class: "unavailable" },
          h("summary", {}, `${unusable.length} model(s) unavailable`),
          h("ul", {}, unusable.map((m) => h("li", {}, h("code", {}, m.name), `: ${m.reason || "unavailable"}`))),
        )
      : null,
    field("maxTurns", "Turn limit", maxTurns, "1 to 100."),
    field("turnOrder", "Turn order", turnOrder),
    field("evaluationDimensionListId", "Dimensions", dimensions),
    field("tag", "Tag", tag),
    field("redelivery", "If its worker is lost", redelivery),
    submit,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const chosen = form.querySelector('input[name="scenarioId"]:checked');
    const other = otherModel.value.trim();
    const input = {
      scenarioId: chosen ? chosen.value : "",
      agentIds: seats,
      agentModels: [other || agentModel.value],
      judgeModel: other || judgeModel.value,
      maxTurns: Number.parseInt(maxTurns.value, 10),
      turnOrder: turnOrder.value,
      evaluationDimensionListId: dimensions.value || null,
      tag: tag.value.trim(),
      redelivery: redelivery.value,
      humanSeats: seats.flatMap((agentId, i) => (people.has(agentId) ? [i] : [])),
    };
    if (input.humanSeats.length) {
      input.seatDeadlineSeconds = Number(deadline.value);
      input.onSeatTimeout = onTimeout.value;
      input.standInModel = standIn.value || null;
    }
    const local = [];
    if (!chosen) local.push({ field: ["input", "scenarioId"], message: "Pick a scenario." });
    if (seats.length < 2) local.push({ field: ["input", "agentIds"], message: "Pick at least two agents." });
    if (!Number.isInteger(input.maxTurns)) local.push({ field: ["input", "maxTurns"], message: "A whole number of turns, 1 to 100." });
    if (input.humanSeats.length && !Number.isFinite(input.seatDeadlineSeconds)) {
      local.push({ field: ["input", "seatDeadlineSeconds"], message: "A number of seconds, 1 to 604800." });
    }
    if (local.length) return showFieldErrors(form, local);
    submit.disabled = true;
    try {
      const result = await api.request("StartSimulation", { input });
      const { episode, userErrors, seatTokens } = result.startSimulation;
      if (userErrors.length) return showFieldErrors(form, besideTheirFields(userErrors, { other, standIn: standIn.value }));
      if (!seatTokens.length) {
        location.hash = `#/episodes/${encodeURIComponent(episode.id)}`;
        return;
      }
      form.replaceWith(seatLinks(episode, seatTokens));
    } catch (error) {
      showFieldErrors(form, [{ field: [], message: error.message }]);
    } finally {
      submit.disabled = false;
    }
  });

  main.append(h("h1", { id: "start-title" }, "Start a simulation"), form);
  return null;
}
