// The top bar: the app picker, the user id, the token (when one is kept), the inspector toggle.

import { h, icon } from "./dom.js";

export class Header {
  /** Callbacks: `onApp(name)`, `onUser(id)`, `onSignOut()`, `onToggleInspector()`. */
  constructor({ onApp, onUser, onSignOut, onToggleInspector }) {
    this.appSelect = h("select", { class: "input input-sm", "aria-label": "App" });
    this.appSelect.addEventListener("change", () => onApp(this.appSelect.value));
    this.userInput = h("input", { class: "input input-sm user-input", "aria-label": "User id", spellcheck: "false", title: "The user id sessions belong to" });
    const commitUser = () => {
      const value = this.userInput.value.trim();
      if (!value) this.userInput.value = this.user;
      else if (value !== this.user) onUser(value);
    };
    this.userInput.addEventListener("change", commitUser);
    this.userInput.addEventListener("keydown", (event) => {
      if (event.key === "Enter") this.userInput.blur();
    });
    this.signOut = h("button", { class: "btn btn-ghost btn-sm", type: "button", hidden: true, title: "Forget the bearer token kept in this browser", onClick: onSignOut }, icon("key", 14), "Sign out");
    this.version = h("span", { class: "version" });
    this.el = h(
      "header",
      { class: "topbar" },
      h("a", { class: "brand", href: "#/" }, h("span", { class: "brand-mark" }, "◐"), "rondo"),
      h("label", { class: "field" }, h("span", {}, "App"), this.appSelect),
      h("label", { class: "field" }, icon("user", 14), h("span", { class: "sr-only" }, "User"), this.userInput),
      h("span", { class: "topbar-spacer" }),
      this.version,
      this.signOut,
      h("button", { class: "icon-btn", type: "button", "aria-label": "Toggle the inspector", title: "Toggle the inspector", onClick: onToggleInspector }, icon("panel", 16)),
    );
  }

  showApps(apps, current) {
    this.appSelect.replaceChildren(
      ...(current ? [] : [h("option", { value: "", selected: true, disabled: true }, "Choose an app")]),
      ...apps.map((name) => h("option", { value: name, selected: name === current }, name)),
    );
    this.appSelect.disabled = apps.length === 0;
  }

  showUser(user) {
    this.user = user;
    this.userInput.value = user;
  }

  showAuth(hasToken) {
    this.signOut.hidden = !hasToken;
  }

  showVersion(info) {
    if (info?.version) this.version.textContent = `rondo ${info.version}`;
  }
}
