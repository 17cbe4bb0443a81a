// Start a simulation: scenario, agents (searchable, in seat order), models, limits; field
// errors from userErrors beside their fields; on success, the live episode page.

import { LONGEST, agentFinder, foundWords, scenarioFinder, searcher } from "../choice.js";
import { h, words } from "../dom.js";
import { ENUMS } from "../enums.js";
import { field, showFieldErrors } from "./common.js";
import { seatLink } from "./seat.js";

/** Agents and scenarios listed at once on the form; typing a name narrows them. */
const START_CHOICES = 100;

/** A select of an enum's values, each shown as `labels` says (in words if not). */
function enumSelect(id, values, labels = {}) {
  return h("select", { id, name: id }, values.map((v) => h("option", { value: v }, labels[v] ?? words(v))));
}

/**
 * A list to tick from, found on the server as a name is typed (`find`, choice.js); what is
 * ticked stays listed, first when the search does not find it. `known` holds every item shown,
 * by id; an item listed again is the same element, so a new answer never swaps the box a
 * person is ticking for another.
 */
function searchable(id, label, { find, describe, multiple, noun }) {
  const known = new Map();
  const rows = new Map();
  const picked = [];
  const search = h("input", { id: `${id}-search`, type: "search", maxlength: LONGEST, placeholder: "Type a name", "aria-controls": `${id}-options`, "aria-describedby": `${id}-found` });
  const options = h("ul", { id: `${id}-options`, class: "choices", role: "list" });
  const found = h("p", { id: `${id}-found`, class: "hint", role: "status" });
  const item = (entry) => {
    if (!rows.has(entry.id)) {
      const input = h("input", { type: multiple ? "checkbox" : "radio", name: id, value: entry.id, id: `${id}-${entry.id}` });
      rows.set(entry.id, h("li", {}, input, h("label", { for: input.id }, describe(entry))));
    }
    const row = rows.get(entry.id);
    row.querySelector("input").checked = picked.includes(entry.id);
    return row;
  };
  const show = (answer) => {
    for (const entry of answer.items) known.set(entry.id, entry);
    const listed = new Set(answer.items.map((entry) => entry.id));
    const kept = picked.filter((pk) => !listed.has(pk)).map((pk) => known.get(pk));
    options.replaceChildren(...[...kept, ...answer.items].map(item));
    found.textContent = foundWords(answer, noun);
  };
  const run = searcher(find, show, (error) => {
    found.textContent = error.message;
  });
  search.addEventListener("input", () => run(search.value));
  const field = h(
    "fieldset",
    { class: "field", dataset: { field: id }, id },
    h("legend", {}, label),
    h("label", { for: search.id, class: "visually-hidden" }, `Search ${label.toLowerCase()}`),
    search,
    found,
    options,
  );
  field.addEventListener("change", (event) => {
    if (event.target.name !== id) return; // the search box
    const at = picked.indexOf(event.target.value);
    if (!multiple) picked.splice(0, picked.length);
    if (event.target.checked && (at < 0 || !multiple)) picked.push(event.target.value);
    if (!event.target.checked && at >= 0) picked.splice(at, 1);
  });
  run("", true);
  return { field, known };
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

const REDELIVERY = { RESUME: "resume from the stored turns", RESTART: "start over" };
const SEAT_TIMEOUT = { LEAVE: "the agent leaves", STAND_IN: "a stand-in model plays the turn", FAIL: "the episode fails" };

/** Who a person plays instead of a model, among the seats in `seats` (agent ids). */
function personChoices(nameOf, seats, people, peopleFields) {
  return seats.map((agentId, i) => {
    const name = nameOf(agentId);
    const box = h("input", { type: "checkbox", id: `person-${agentId}`, checked: people.has(agentId) });
    box.addEventListener("change", () => {
      if (box.checked) people.add(agentId);
      else people.delete(agentId);
      peopleFields.hidden = people.size === 0;
    });
    return h("li", {}, box, h("label", { for: box.id }, `${name} (seat ${i + 1})`));
  });
}

/**
 * The agents, picked in seat order, and which of them a person plays; `seats` (agent ids) and
 * `people` (a set of them) follow the choices.
 */
function seatPicker(api, peopleFields) {
  const seats = [];
  const people = new Set(); // the agents a person plays instead of a model
  const seatList = h("ol", { class: "seats", "aria-live": "polite" });
  const personList = h("ul", { class: "choices people-seats", dataset: { field: "humanSeats" } });
  const personField = h("fieldset", { class: "field", hidden: true }, h("legend", {}, "Played by a person instead of a model"), personList);
  const agents = searchable("agentIds", "Agents", {
    find: agentFinder(api, "ASCENDING", START_CHOICES),
    describe: (a) => `${a.text}${a.agent.occupation ? ", " + a.agent.occupation : ""}`,
    multiple: true,
    noun: "agent",
  });
  const nameOf = (agentId) => agents.known.get(agentId).text;
  const drawSeats = () => {
    seatList.replaceChildren(...seats.map((agentId) => h("li", {}, nameOf(agentId))));
    if (!seats.length) seatList.append(h("li", { class: "hint" }, "Pick two or more agents; the order you pick them in is the seat order."));
    personList.replaceChildren(...personChoices(nameOf, seats, people, peopleFields));
    personField.hidden = seats.length === 0;
    peopleFields.hidden = people.size === 0;
  };
  const agentField = agents.field;
  agentField.append(h("p", { class: "hint" }, "Seats:"), seatList);
  agentField.addEventListener("change", (event) => {
    const box = event.target;
    if (box.name !== "agentIds") return; // the search box
    const at = seats.indexOf(box.value);
    if (box.checked && at < 0) seats.push(box.value);
    if (!box.checked && at >= 0) seats.splice(at, 1);
    if (!box.checked) people.delete(box.value);
    drawSeats();
  });
  drawSeats();
  return { seats, people, agentField, personField };
}

/** How people play: seconds per turn, what happens when one does not act, the stand-in model. */
function peopleControls(usable) {
  const controls = {
    deadline: h("input", { id: "seatDeadlineSeconds", name: "seatDeadlineSeconds", type: "number", value: "300", min: "1", max: "604800" }),
    onTimeout: enumSelect("onSeatTimeout", ENUMS.SeatTimeout, SEAT_TIMEOUT),
    standIn: h("select", { id: "standInModel", name: "standInModel" }, h("option", { value: "" }, "the judge's model"), usable.map((m) => h("option", { value: m.name }, m.name))),
  };
  const fields = h(
    "fieldset",
    { class: "field people", hidden: true },
    h("legend", {}, "People in seats"),
    h("p", { class: "hint" }, "After starting, each person's seat gets a link to play it."),
    field("seatDeadlineSeconds", "Seconds for each turn", controls.deadline, "1 to 604800."),
    field("onSeatTimeout", "If a person does not act in time", controls.onTimeout),
    field("standInModel", "Stand-in model", controls.standIn),
  );
  return { controls, fields };
}

/** The form's controls other than the scenario, agents and people. */
function settingControls(options, models, usable) {
  const controls = {
    agentModel: modelSelect("agentModel", models),
    judgeModel: modelSelect("judgeModel", models),
    otherModel: h("input", { id: "otherModel", name: "otherModel", type: "text", placeholder: "custom/<model>@<base_url>" }),
    maxTurns: h("input", { id: "maxTurns", name: "maxTurns", type: "number", value: "10", min: "1", max: "100", required: true }),
    turnOrder: enumSelect("turnOrder", ENUMS.TurnOrder),
    dimensions: h(
      "select",
      { id: "evaluationDimensionListId", name: "evaluationDimensionListId" },
      h("option", { value: "" }, "Sotopia's seven"),
      options.evaluationDimensionLists.map((l) => h("option", { value: l.id }, `${l.name} (${l.dimensions.map((d) => d.name).join(", ")})`)),
    ),
    tag: h("input", { id: "tag", name: "tag", type: "text" }),
    redelivery: enumSelect("redelivery", ENUMS.Redelivery, REDELIVERY),
  };
  if (usable.length) controls.agentModel.value = controls.judgeModel.value = usable[0].name;
  return controls;
}

function unavailableModels(unusable) {
  if (!unusable.length) return null;
  return h(
    "details",
    { class: "unavailable" },
    h("summary", {}, `${unusable.length} model(s) unavailable`),
    h("ul", {}, unusable.map((m) => h("li", {}, h("code", {}, m.name), `: ${m.reason || "unavailable"}`))),
  );
}

function settingFields(c, unusable) {
  return [
    field("agentModels", "Agents' model", c.agentModel),
    field("judgeModel", "Judge's model", c.judgeModel),
    field("otherModel", "Or another model for both", c.otherModel, "Any OpenAI-compatible endpoint, as custom/<model>@<base_url>."),
    unavailableModels(unusable),
    field("maxTurns", "Turn limit", c.maxTurns, "1 to 100."),
    field("turnOrder", "Turn order", c.turnOrder),
    field("evaluationDimensionListId", "Dimensions", c.dimensions),
    field("tag", "Tag", c.tag),
    field("redelivery", "If its worker is lost", c.redelivery),
  ];
}

/** The startSimulation input the form says, with `other` the model typed for both. */
function startInput(form, { seats, people }, c, p, other) {
  const chosen = form.querySelector('input[name="scenarioId"]:checked');
  const input = {
    scenarioId: chosen ? chosen.value : "",
    agentIds: seats,
    agentModels: [other || c.agentModel.value],
    judgeModel: other || c.judgeModel.value,
    maxTurns: Number.parseInt(c.maxTurns.value, 10),
    turnOrder: c.turnOrder.value,
    evaluationDimensionListId: c.dimensions.value || null,
    tag: c.tag.value.trim(),
    redelivery: c.redelivery.value,
    humanSeats: seats.flatMap((agentId, i) => (people.has(agentId) ? [i] : [])),
  };
  if (input.humanSeats.length) {
    input.seatDeadlineSeconds = Number(p.deadline.value);
    input.onSeatTimeout = p.onTimeout.value;
    input.standInModel = p.standIn.value || null;
  }
  return input;
}

/** What the form can tell before asking the server, as userErrors. */
function localErrors(input) {
  const local = [];
  if (!input.scenarioId) local.push({ field: ["input", "scenarioId"], message: "Pick a scenario." });
  if (input.agentIds.length < 2) local.push({ field: ["input", "agentIds"], message: "Pick at least two agents." });
  if (!Number.isInteger(input.maxTurns)) local.push({ field: ["input", "maxTurns"], message: "A whole number of turns, 1 to 100." });
  if (input.humanSeats.length && !Number.isFinite(input.seatDeadlineSeconds)) {
    local.push({ field: ["input", "seatDeadlineSeconds"], message: "A number of seconds, 1 to 604800." });
  }
  return local;
}

/** Sends the form: field errors beside their fields, else the episode's page or its seats' links. */
async function submitStart(api, form, submit, input, { other, standIn }) {
  const local = localErrors(input);
  if (local.length) return showFieldErrors(form, local);
  submit.disabled = true;
  try {
    const result = await api.request("StartSimulation", { input });
    const { episode, userErrors, seatTokens } = result.startSimulation;
    if (userErrors.length) return showFieldErrors(form, besideTheirFields(userErrors, { other, standIn }));
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
}

export async function startPage({ api, main }) {
  const options = await api.request("StartOptions");
  const models = options.models;
  const usable = models.filter((m) => m.available);
  const unusable = models.filter((m) => !m.available);
  const people = peopleControls(usable);
  const picker = seatPicker(api, people.fields);
  const settings = settingControls(options, models, usable);
  const scenarios = searchable("scenarioId", "Scenario", {
    find: scenarioFinder(api, "ASCENDING", START_CHOICES),
    describe: (s) => `${s.text}: ${s.scenario.scenario}`,
    multiple: false,
    noun: "scenario",
  });
  const submit = h("button", { type: "submit" }, "Start simulation");
  const form = h(
    "form",
    { class: "start-form", novalidate: true, "aria-labelledby": "start-title" },
    h("div", { class: "form-errors", role: "alert" }),
    scenarios.field,
    picker.agentField,
    picker.personField,
    people.fields,
    settingFields(settings, unusable),
    submit,
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const other = settings.otherModel.value.trim();
    const input = startInput(form, picker, settings, people.controls, other);
    submitStart(api, form, submit, input, { other, standIn: people.controls.standIn.value });
  });
  main.append(h("h1", { id: "start-title" }, "Start a simulation"), form);
  return null;
}
