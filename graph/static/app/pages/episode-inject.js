// A message from the environment to an unfinished episode's agents, all of them or some.

import { h } from "../dom.js";
import { chosenRecipients, recipientsField } from "./common.js";

export function injectForm(api, episode) {
  const text = h("textarea", { id: "inject-text", name: "inject-text", rows: "2", required: true });
  const to = recipientsField("inject-to", "For", episode.agents.map((a, i) => (a ? a.name : `seat ${i + 1}`)));
  const note = h("div", { class: "form-errors", role: "alert" });
  const button = h("button", { type: "submit" }, "Inject");
  const form = h(
    "form",
    { class: "inject-form", "aria-labelledby": "inject-title" },
    h("h2", { id: "inject-title" }, "Environment message"),
    h("div", { class: "field", dataset: { field: "text" } }, h("label", { for: "inject-text" }, "Message"), text),
    to,
    note,
    button,
    h("p", { class: "hint" }, "The agents see it from their next turn."),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    note.replaceChildren();
    button.disabled = true;
    try {
      const input = { episodeId: episode.id, text: text.value, to: chosenRecipients(to) };
      const result = (await api.request("InjectEvent", { input })).injectEvent;
      if (result.userErrors.length) {
        note.append(...result.userErrors.map((e) => h("p", {}, e.message)));
      } else {
        text.value = "";
        for (const box of to.querySelectorAll("input:checked")) box.checked = false;
      }
    } catch (error) {
      note.append(h("p", {}, error.message));
    } finally {
      button.disabled = false;
    }
  });
  return form;
}
