// JSON shown to a developer: a syntax-coloured tree whose objects and arrays fold on a click of
// their opening bracket; the text stays selectable and copyable.

import { h } from "./dom.js";

/**
 * A tree for `value`. Objects and arrays deeper than `open` levels start folded; long strings
 * wrap. `copy` adds a "Copy" button with the pretty-printed JSON.
 */
export function jsonView(value, { open = 2, copy = false } = {}) {
  const root = h("div", { class: "json" }, node(value, 0, open));
  if (copy) {
    const button = h("button", { class: "btn btn-ghost btn-xs json-copy", type: "button" }, "Copy");
    button.addEventListener("click", async () => {
      try {
        await navigator.clipboard.writeText(JSON.stringify(value, null, 2));
        button.textContent = "Copied";
      } catch {
        button.textContent = "Copy failed";
      }
      setTimeout(() => (button.textContent = "Copy"), 1200);
    });
    root.prepend(button);
  }
  return root;
}

function node(value, depth, open) {
  if (value === null || typeof value !== "object") return scalar(value);
  const isArray = Array.isArray(value);
  const entries = isArray ? value.map((v, i) => [i, v]) : Object.entries(value);
  const [start, end] = isArray ? ["[", "]"] : ["{", "}"];
  if (!entries.length) return h("span", { class: "j-punct" }, start + end);
  const noun = isArray ? "item" : "key";
  const count = `${entries.length} ${noun}${entries.length === 1 ? "" : "s"}`;
  const toggle = h("button", { class: "j-toggle", type: "button", "aria-expanded": String(depth < open), title: "Fold or unfold" }, start);
  const wrap = h(
    "span",
    { class: `j-node${depth < open ? "" : " is-folded"}` },
    toggle,
    h("span", { class: "j-count" }, count),
    h(
      "div",
      { class: "j-body" },
      entries.map(([key, child]) =>
        h(
          "div",
          { class: "j-row" },
          isArray ? null : [h("span", { class: "j-key" }, JSON.stringify(String(key))), h("span", { class: "j-punct" }, ": ")],
          node(child, depth + 1, open),
        ),
      ),
    ),
    h("span", { class: "j-punct" }, end),
  );
  toggle.addEventListener("click", () => {
    const folded = wrap.classList.toggle("is-folded");
    toggle.setAttribute("aria-expanded", String(!folded));
  });
  return wrap;
}

function scalar(value) {
  if (value === null || value === undefined) return h("span", { class: "j-null" }, "null");
  if (typeof value === "string") return h("span", { class: "j-str" }, JSON.stringify(value));
  if (typeof value === "number") return h("span", { class: "j-num" }, String(value));
  if (typeof value === "boolean") return h("span", { class: "j-bool" }, String(value));
  return h("span", {}, String(value));
}

/** A compact one-line preview of a value, for card headers and timeline rows. */
export function preview(value, max = 80) {
  let text;
  try {
    text = typeof value === "string" ? value : JSON.stringify(value);
  } catch {
    text = String(value);
  }
  if (text === undefined) text = "";
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}
