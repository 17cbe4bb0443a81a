// Make a rating study: its name, its episodes (by tag, from an experiment, or by ids), how many
// raters and their names, how many rate each episode, and the rubric; field errors from
// userErrors beside their fields; on success each rater's link, shown this once, to copy.

import { h } from "../dom.js";
import { field, showFieldErrors } from "./common.js";
import { rateLink } from "./rate.js";

const RATERS_MAX = 50; // the server's limit (core/limits.py STUDY_RATERS_MAX)

const EPISODE_CHOICES = [
  ["tag", "Every episode with a tag"],
  ["experimentId", "The episodes of an experiment"],
  ["ids", "These episodes (ids)"],
];

/** Which episodes: a choice of the three ways, and the box of the way chosen (an experiment's,
 * when `experimentId` names one). */
function episodeChooser(experiments, experimentId) {
  const controls = {
    tag: h("input", { id: "study-tag", type: "text", "aria-label": "Tag" }),
    experimentId: h(
      "select",
      { id: "study-experiment", "aria-label": "Experiment" },
      h("option", { value: "" }, experiments.length ? "Choose an experiment" : "No experiment yet"),
      experiments.map((e) => h("option", { value: e.id, selected: e.id === experimentId }, `${e.name} (${e.slotCount} episodes)`)),
    ),
    ids: h("textarea", { id: "study-ids", rows: "4", "aria-label": "Episode ids", placeholder: "One id a line" }),
  };
  const first = experiments.some((e) => e.id === experimentId) ? "experimentId" : "tag";
  const radios = EPISODE_CHOICES.map(([way, label]) => {
    const radio = h("input", { type: "radio", name: "episodes-by", id: `episodes-by-${way}`, value: way, checked: way === first });
    return h("li", {}, radio, h("label", { for: radio.id }, label));
  });
  const fieldset = h(
    "fieldset",
    { class: "field", id: "episodes", dataset: { field: "episodes" } },
    h("legend", {}, "Episodes"),
    h("ul", { class: "choices" }, radios),
    Object.values(controls),
    h("p", { class: "hint" }, "Completed episodes only; at most 500."),
  );
  const chosen = () => fieldset.querySelector('input[name="episodes-by"]:checked').value;
  const show = () => {
    for (const [way, control] of Object.entries(controls)) control.hidden = way !== chosen();
  };
  fieldset.addEventListener("change", show);
  show();
  const value = () => {
    const way = chosen();
    if (way === "ids") return { ids: controls.ids.value.split(/[\s,]+/).filter(Boolean) };
    const text = controls[way].value.trim();
    return { [way]: text || null };
  };
  return { fieldset, value };
}

/** A name box per rater, as many as the number of raters says; what was typed is kept. */
function raterNames(count) {
  const list = h("ol", { class: "rater-names" });
  const fieldset = h(
    "fieldset",
    { class: "field", id: "raterNames", dataset: { field: "raterNames" } },
    h("legend", {}, "Raters' names"),
    h("p", { class: "hint" }, "Optional: a name left empty is Rater 1, Rater 2, …"),
    list,
  );
  const draw = () => {
    const wanted = Number.parseInt(count.value, 10);
    const n = Number.isInteger(wanted) ? Math.min(Math.max(wanted, 0), RATERS_MAX) : 0;
    while (list.children.length > n) list.lastChild.remove();
    while (list.children.length < n) {
      const i = list.children.length;
      const input = h("input", { type: "text", id: `rater-name-${i}`, autocomplete: "off" });
      list.append(h("li", {}, h("label", { for: input.id, class: "visually-hidden" }, `Rater ${i + 1}'s name`), input));
    }
  };
  count.addEventListener("input", draw);
  draw();
  const value = () => {
    const typed = [...list.querySelectorAll("input")].map((input, i) => input.value.trim() || `Rater ${i + 1}`);
    return typed.some((name, i) => name !== `Rater ${i + 1}`) ? typed : [];
  };
  return { fieldset, value };
}

/** Each rater's link, shown this once, with a button that copies it. */
function raterLinks(study, links) {
  return h(
    "section",
    { class: "study-made", "aria-labelledby": "study-made-title" },
    h("h2", { id: "study-made-title", tabindex: "-1" }, `Made: ${study.name}`),
    h("p", {}, "Each link holds its rater's token, shown only this once: send each to its rater. A lost link is replaced with New link on the study's page."),
    h(
      "ul",
      { class: "made-links" },
      links.map((link) => {
        const address = new URL(rateLink(study.id, link.rater, link.token), document.baseURI).href;
        const copy = h("button", { type: "button", class: "copy", "aria-label": `Copy ${link.name}'s link` }, "Copy");
        const done = h("span", { class: "hint", role: "status" });
        copy.addEventListener("click", async () => {
          try {
            await navigator.clipboard.writeText(address);
            done.textContent = "Copied.";
          } catch {
            done.textContent = "Not copied: select the link and copy it.";
          }
        });
        return h(
          "li",
          { dataset: { rater: link.rater } },
          h("strong", {}, `${link.rater + 1}. ${link.name}`),
          " ",
          copy,
          " ",
          done,
          h("code", { class: "rater-link", dataset: { rater: link.rater } }, address),
        );
      }),
    ),
    h("p", {}, h("a", { href: `#/studies/${encodeURIComponent(study.id)}` }, "Follow the study")),
  );
}

/** A number box's number; NaN when it is empty (Number("") is 0). */
function number(input) {
  return input.value.trim() === "" ? Number.NaN : Number(input.value);
}

/** What the form can tell before asking the server, as userErrors. */
function localErrors(input) {
  const local = [];
  const episodes = Object.values(input.episodes)[0];
  if (!episodes || !episodes.length) local.push({ field: ["input", "episodes"], message: "Say which episodes: a tag, an experiment or ids." });
  if (!Number.isInteger(input.raters)) local.push({ field: ["input", "raters"], message: `A whole number of raters, 1 to ${RATERS_MAX}.` });
  if (!Number.isInteger(input.ratersPerEpisode)) local.push({ field: ["input", "ratersPerEpisode"], message: "A whole number of raters per episode." });
  return local;
}

/** The form; `made` is called with the new study once it is made; `experimentId` chooses that
 * experiment's episodes to begin with. */
export async function studyForm(api, made, experimentId = null) {
  const options = await api.request("StudyOptions");
  const c = {
    name: h("input", { id: "study-name", type: "text", required: true }),
    raters: h("input", { id: "study-raters", type: "number", min: "1", max: String(RATERS_MAX), value: "3", required: true }),
    perEpisode: h("input", { id: "study-per-episode", type: "number", min: "1", max: String(RATERS_MAX), value: "2", required: true }),
    rubric: h(
      "select",
      { id: "study-rubric" },
      h("option", { value: "" }, "Sotopia's seven"),
      options.evaluationDimensionLists.map((l) => h("option", { value: l.id }, `${l.name} (${l.dimensions.map((d) => d.name).join(", ")})`)),
    ),
  };
  const episodes = episodeChooser(options.experiments.nodes, experimentId);
  const names = raterNames(c.raters);
  const submit = h("button", { type: "submit" }, "Make the study");
  const form = h(
    "form",
    { class: "start-form study-form", novalidate: true, "aria-label": "Make a study" },
    h("div", { class: "form-errors", role: "alert" }),
    field("name", "Name", c.name),
    episodes.fieldset,
    field("raters", "Raters", c.raters, `Each gets a link of their own; 1 to ${RATERS_MAX}.`),
    names.fieldset,
    field("ratersPerEpisode", "Raters per episode", c.perEpisode, "Two or more, to measure how far they agree."),
    field("evaluationDimensionListId", "Rubric", c.rubric),
    submit,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const input = {
      name: c.name.value.trim(),
      episodes: episodes.value(),
      raters: number(c.raters),
      raterNames: names.value(),
      ratersPerEpisode: number(c.perEpisode),
      evaluationDimensionListId: c.rubric.value || null,
    };
    const local = localErrors(input);
    if (local.length) return showFieldErrors(form, local);
    submit.disabled = true;
    try {
      const answer = (await api.request("CreateRatingStudy", { input })).createRatingStudy;
      if (answer.userErrors.length) return showFieldErrors(form, answer.userErrors);
      const shown = raterLinks(answer.study, answer.raterLinks);
      form.replaceWith(shown);
      shown.querySelector("h2").focus();
      made(answer.study);
    } catch (error) {
      showFieldErrors(form, [{ field: [], message: error.message }]);
    } finally {
      submit.disabled = false;
    }
  });
  return form;
}
