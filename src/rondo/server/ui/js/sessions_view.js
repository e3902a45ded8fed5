// The session picker: the app's sessions for the current user, newest first, with a button
// to start a new one and a two-step delete (the second click confirms) on each.

import { formatAgo, h, icon, replace, shortId } from "./dom.js";

const TITLES_KEY = "rondo.titles";

/** Titles are the first message sent in a session, remembered by this browser. */
export const titles = {
  all() {
    try {
      return JSON.parse(localStorage.getItem(TITLES_KEY) || "{}");
    } catch {
      return {};
    }
  },
  get(key) {
    return this.all()[key] || "";
  },
  set(key, text) {
    const all = this.all();
    if (all[key]) return;
    all[key] = text.length > 80 ? `${text.slice(0, 79)}…` : text;
    localStorage.setItem(TITLES_KEY, JSON.stringify(all));
  },
  remove(key) {
    const all = this.all();
    delete all[key];
    localStorage.setItem(TITLES_KEY, JSON.stringify(all));
  },
};

export class SessionsView {
  /** Callbacks: `onNew()`, `onOpen(id)`, `onDelete(id)`, `titleKey(id)`. */
  constructor({ onNew, onOpen, onDelete, titleKey }) {
    this.onOpen = onOpen;
    this.onDelete = onDelete;
    this.titleKey = titleKey;
    this.list = h("nav", { class: "session-list", "aria-label": "Sessions" });
    this.newButton = h("button", { class: "btn btn-primary btn-block", type: "button", onClick: onNew }, icon("plus", 14), "New session");
    this.el = h("div", { class: "sessions" }, h("div", { class: "sessions-head" }, this.newButton), this.list);
    this.sessions = [];
    this.activeId = null;
  }

  show(sessions, activeId) {
    this.sessions = [...sessions].sort((a, b) => (b.lastUpdateTime || 0) - (a.lastUpdateTime || 0));
    this.activeId = activeId;
    this.render();
  }

  setActive(id) {
    this.activeId = id;
    for (const row of this.list.querySelectorAll(".session")) row.classList.toggle("is-active", row.dataset.sessionId === id);
  }

  render() {
    if (!this.sessions.length) {
      replace(this.list, h("div", { class: "panel-empty" }, "No sessions yet. Send a message to start one."));
      return;
    }
    replace(this.list, this.sessions.map((session) => this.row(session)));
  }

  row(session) {
    const title = titles.get(this.titleKey(session.id)) || `Session ${shortId(session.id)}`;
    const open = h(
      "a",
      { class: "session-open", href: `#/apps/${encodeURIComponent(session.appName)}/sessions/${encodeURIComponent(session.id)}`, title: session.id },
      h("span", { class: "session-title" }, title),
      h("span", { class: "session-sub" }, `${shortId(session.id)} · ${formatAgo(session.lastUpdateTime)}`),
    );
    const remove = h("button", { class: "icon-btn session-delete", type: "button", "aria-label": "Delete session", title: "Delete session" }, icon("trash", 14));
    const row = h("div", { class: `session${session.id === this.activeId ? " is-active" : ""}`, dataset: { sessionId: session.id } }, open, remove);
    remove.addEventListener("click", () => this.confirmDelete(row, session));
    return row;
  }

  confirmDelete(row, session) {
    const cancel = h("button", { class: "btn btn-xs", type: "button" }, "Cancel");
    const confirm = h("button", { class: "btn btn-danger btn-xs", type: "button" }, "Delete");
    const bar = h("div", { class: "session-confirm" }, h("span", {}, "Delete this session?"), cancel, confirm);
    row.append(bar);
    row.classList.add("is-confirming");
    confirm.focus();
    cancel.addEventListener("click", () => {
      bar.remove();
      row.classList.remove("is-confirming");
    });
    confirm.addEventListener("click", async () => {
      confirm.disabled = true;
      cancel.disabled = true;
      try {
        await this.onDelete(session.id);
      } finally {
        bar.remove();
        row.classList.remove("is-confirming");
      }
    });
  }
}
