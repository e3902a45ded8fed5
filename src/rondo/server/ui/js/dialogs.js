// Things that interrupt: the bearer-token prompt (when the server answers 401) and the toasts
// that report a failed request with the server's own explanation.

import { h, icon } from "./dom.js";

/**
 * Ask for a bearer token, and the user id it belongs to, in a modal dialog; resolves with
 * `{token, user}` (both trimmed).
 */
export function askCredentials(message, user) {
  return new Promise((resolve) => {
    const token = h("input", { class: "input", type: "password", name: "token", autocomplete: "off", placeholder: "Bearer token", required: true });
    const userId = h("input", { class: "input", name: "user", value: user, spellcheck: "false", required: true });
    const form = h(
      "form",
      { method: "dialog", class: "dialog-body" },
      h("h2", {}, icon("key", 18), "This server needs a token"),
      h("p", {}, "It was started with --auth-tokens. Paste the bearer token you were given and the user id it belongs to; both are kept in this browser (localStorage) until you sign out."),
      h("label", { class: "dialog-field" }, h("span", {}, "Token"), token),
      h("label", { class: "dialog-field" }, h("span", {}, "User id"), userId),
      h("div", { class: "dialog-error", role: "alert", hidden: !message }, message || ""),
      h("div", { class: "dialog-actions" }, h("button", { class: "btn btn-primary", type: "submit" }, "Connect")),
    );
    const dialog = h("dialog", { class: "dialog", "aria-label": "Bearer token" }, form);
    dialog.addEventListener("cancel", (event) => event.preventDefault()); // nothing works without it
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const answer = { token: token.value.trim(), user: userId.value.trim() };
      if (!answer.token || !answer.user) return;
      dialog.close();
      dialog.remove();
      resolve(answer);
    });
    document.body.append(dialog);
    dialog.showModal();
    token.focus();
  });
}

export class Toasts {
  constructor() {
    this.el = h("div", { class: "toasts", role: "status", "aria-live": "assertive" });
  }

  /** Show an error; it stays 10 s, or until closed. */
  error(message, title = "Request failed") {
    const close = h("button", { class: "icon-btn", type: "button", "aria-label": "Dismiss" }, icon("x", 14));
    const toast = h("div", { class: "toast toast-error", role: "alert" }, icon("alert", 16), h("div", {}, h("strong", {}, title), h("div", { class: "toast-text" }, message)), close);
    close.addEventListener("click", () => toast.remove());
    this.el.append(toast);
    setTimeout(() => toast.remove(), 10_000);
  }
}
