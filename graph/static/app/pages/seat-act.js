// A person's move in their seat: the kind of action, what they say or do, to whom.

import { h, words } from "../dom.js";
import { ACTION_TYPES } from "../enums.js";
import { TERMINAL } from "../status.js";
import { chosenRecipients, recipientsField, showFieldErrors } from "./common.js";

function actFields(names) {
  const actionType = h("select", { id: "action-type", name: "action-type" });
  const argument = h("textarea", { id: "action-argument", name: "action-argument", rows: "3" });
  const recipients = recipientsField("action-to", "Privately to", names);
  const send = h("button", { type: "submit" }, "Send");
  const sent = h("p", { class: "hint sent", role: "status" });
  return { actionType, argument, recipients, send, sent };
}

function actLayout({ actionType, argument, recipients, send, sent }) {
  return h(
    "form",
    { class: "act-form", novalidate: true, "aria-labelledby": "act-title" },
    h("h2", { id: "act-title" }, "Your move"),
    h("div", { class: "form-errors", role: "alert" }),
    h("div", { class: "field", dataset: { field: "actionType" } }, h("label", { for: "action-type" }, "Action"), actionType),
    h(
      "div",
      { class: "field", dataset: { field: "argument" } },
      h("label", { for: "action-argument" }, "What you say or do"),
      argument,
      h("p", { class: "hint" }, "Needed to speak, act or communicate without words; not to do nothing or leave."),
    ),
    recipients,
    send,
    sent,
  );
}

function offer(actionType, allowed) {
  const keep = actionType.value;
  actionType.replaceChildren(...allowed.map((t) => h("option", { value: t }, words(t))));
  if (allowed.includes(keep)) actionType.value = keep;
}

/**
 * The form that submits the seat's action (`seat` is {id, seat, token}); `onPerspective(view)`
 * gets the seat's view the answer brings. `draw(status, view)` follows the episode.
 */
export function actForm(api, seat, names, onPerspective) {
  const fields = actFields(names);
  const { actionType, argument, recipients, send, sent } = fields;
  const form = actLayout(fields);
  offer(actionType, ACTION_TYPES);

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    sent.textContent = "";
    send.disabled = true;
    const input = {
      episodeId: seat.id,
      seat: seat.seat,
      seatToken: seat.token,
      actionType: actionType.value,
      argument: argument.value,
      to: chosenRecipients(recipients),
    };
    try {
      const result = (await api.request("SubmitAction", { input })).submitAction;
      showFieldErrors(form, result.userErrors);
      if (!result.userErrors.length) {
        if (result.perspective) onPerspective(result.perspective); // the turn shows at once; the stream confirms it
        argument.value = "";
        for (const box of recipients.querySelectorAll("input:checked")) box.checked = false;
        sent.textContent = "Sent.";
      }
    } catch (error) {
      showFieldErrors(form, [{ field: [], message: error.message }]);
    } finally {
      send.disabled = false;
    }
  });

  const draw = (status, view) => {
    if (view && view.yourTurn) {
      offer(actionType, view.yourTurn.actionTypes);
      if (sent.dataset.turn !== String(view.yourTurn.turn)) sent.textContent = "";
      sent.dataset.turn = String(view.yourTurn.turn);
    }
    form.hidden = TERMINAL.has(status) || status === "EVALUATING";
  };
  return { node: form, draw };
}
