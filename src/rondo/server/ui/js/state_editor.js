// The State tab's editor: the session's state as JSON in a textarea, checked as it is typed,
// saved as a state delta through the PATCH session route (no agent run). A key removed from
// the text is sent as null. An invalid text, or a refusal by the server (a 4xx), is shown
// under the editor and nothing is changed.

import { h } from "./dom.js";

/** The edited object, or an error message for text that is not a JSON object. */
export function parseState(text) {
  let value;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { error: `Not valid JSON: ${error.message}` };
  }
  if (!value || typeof value !== "object" || Array.isArray(value)) return { error: "The state must be a JSON object ({…})." };
  return { value };
}

/** The delta that turns `before` into `after` (removed keys become null). */
export function stateDelta(before, after) {
  const delta = {};
  for (const [key, value] of Object.entries(after)) {
    if (JSON.stringify(before[key]) !== JSON.stringify(value)) delta[key] = value;
  }
  for (const key of Object.keys(before)) if (!(key in after)) delta[key] = null;
  return delta;
}

/**
 * An editor for `state`; `save(delta)` sends it (it rejects with the server's error). Returns
 * the element to show in the State tab.
 */
export function stateEditor(state, save) {
  const text = JSON.stringify(state, null, 2);
  const area = h("textarea", { class: "state-json", "aria-label": "State JSON", spellcheck: "false", rows: "8" });
  area.value = text;
  const message = h("div", { class: "state-error", role: "alert" });
  const button = h("button", { class: "btn", type: "button" }, "Save state");
  const check = () => {
    const parsed = parseState(area.value);
    message.textContent = parsed.error || "";
    button.disabled = Boolean(parsed.error);
    return parsed;
  };
  area.addEventListener("input", check);
  button.addEventListener("click", async () => {
    const parsed = check();
    if (parsed.error) return;
    const delta = stateDelta(state, parsed.value);
    if (!Object.keys(delta).length) {
      message.textContent = "Nothing changed.";
      return;
    }
    button.disabled = true;
    try {
      await save(delta);
      message.textContent = "";
    } catch (error) {
      message.textContent = `Not saved: ${error.message}`;
    } finally {
      button.disabled = false;
    }
  });
  return h("details", { class: "state-editor" }, h("summary", {}, "Edit as JSON"), area, h("div", { class: "state-actions" }, button), message);
}
