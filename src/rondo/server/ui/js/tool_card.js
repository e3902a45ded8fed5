// A tool call as a card: the tool's name, its status and duration in the header; arguments,
// progress of a streaming tool, and the result or error in the body; and, while the call waits
// for a human, the Approve / Reject / Skip buttons that decide it.

import { formatDuration, h, icon, replace } from "./dom.js";
import { jsonView, preview } from "./json_view.js";
import { childSessionsSection } from "./nested_sessions.js";

const STATUS = {
  running: ["Running", "st-running"],
  done: ["Done", "st-done"],
  error: ["Error", "st-error"],
  pending: ["Needs approval", "st-pending"],
  approved: ["Approved", "st-done"],
  rejected: ["Rejected", "st-rejected"],
  skipped: ["Skipped", "st-skipped"],
  unanswered: ["No result", "st-skipped"],
  interrupted: ["Interrupted", "st-skipped"],
};

const DECISIONS = {
  approve: ["check", "Approved by you"],
  reject: ["x", "Rejected by you"],
  skip: ["skip", "Skipped by you"],
};

export class ToolCard {
  /** `onDecide(card, decision, note)` sends a decision and resolves when its run ends. */
  /** `children(item)` lists the sessions the call ran an agent in ([{id, href}]). */
  constructor(item, { onDecide, children = undefined }) {
    this.onDecide = onDecide;
    this.children = children;
    this.summary = h("span", { class: "tool-summary" });
    this.status = h("span", { class: "badge" });
    this.duration = h("span", { class: "tool-duration" });
    this.name = h("span", { class: "tool-name" });
    this.body = h("div", { class: "tool-body" });
    this.details = h(
      "details",
      { class: "tool-details", open: true },
      h("summary", { class: "tool-head" }, h("span", { class: "tool-icon" }, icon("tool", 14)), this.name, this.summary, h("span", { class: "tool-spacer" }), this.duration, this.status),
      this.body,
    );
    this.actions = h("div", { class: "tool-actions" });
    this.el = h("div", { class: "tool-card", dataset: { callId: item.callId } }, this.details, this.actions);
    this.busy = false;
    this.update(item);
  }

  update(item) {
    this.item = item;
    const [label, cls] = STATUS[item.status] || [item.status, ""];
    this.el.dataset.tool = item.name;
    this.el.dataset.status = item.status;
    this.name.textContent = item.name;
    this.summary.textContent = preview(item.args, 60);
    this.status.className = `badge ${cls}`;
    this.status.textContent = label;
    const timed = item.durationMs !== undefined && item.status !== "pending";
    this.duration.textContent = timed ? formatDuration(item.durationMs) : "";
    if (item.status === "pending" || item.status === "error") this.details.open = true;
    replace(this.body, ...this.sections(item));
    this.renderActions(item);
  }

  sections(item) {
    const io = [section("Arguments", jsonView(item.args, { open: 3 }))];
    if (item.error) io.push(section("Error", h("pre", { class: "tool-error" }, item.error)));
    else if (item.result !== undefined && item.status !== "pending") {
      io.push(section(item.status === "rejected" ? "Recorded result" : "Result", jsonView(item.result, { open: 3 })));
    }
    const out = [h("div", { class: "tool-io" }, io)];
    const nested = this.children ? childSessionsSection(this.children(item)) : null;
    if (nested) out.push(nested);
    if (item.progress?.length) {
      const shown = item.progress.slice(-20).map((chunk) => h("li", {}, preview(chunk, 200)));
      out.push(section(`Progress · ${item.progress.length}`, h("ol", { class: "tool-progress", start: Math.max(1, item.progress.length - 19) }, shown)));
    }
    if (item.decision) {
      const [glyph, text] = DECISIONS[item.decision] || ["check", item.decision];
      out.push(h("div", { class: `tool-decision is-${item.decision}` }, icon(glyph, 13), text, item.comment ? ` — “${item.comment}”` : ""));
    }
    return out;
  }

  renderActions(item) {
    const pending = item.status === "pending" ? item.pending : null;
    this.el.classList.toggle("is-pending", Boolean(pending));
    if (!pending) {
      this.actions.replaceChildren();
      this.actionsFor = null;
      return;
    }
    if (this.actionsFor === pending.callId) return; // keep what the user typed
    this.actionsFor = pending.callId;
    const longRunning = pending.kind === "long_running";
    const note = h(longRunning ? "textarea" : "input", {
      class: "input tool-note",
      placeholder: longRunning ? 'Result as JSON, e.g. {"status": "done"}' : "Note for the agent (optional)",
      "aria-label": longRunning ? "Result" : "Note",
      rows: longRunning ? 3 : null,
    });
    const buttons = [
      ["approve", "Approve", "btn btn-primary", "check"],
      ["reject", "Reject", "btn btn-danger", "x"],
      ["skip", "Skip", "btn", "skip"],
    ].map(([decision, label, cls, glyph]) =>
      h("button", { class: cls, type: "button", dataset: { decision }, onClick: () => this.decide(decision, note.value) }, icon(glyph, 14), label),
    );
    this.buttons = buttons;
    replace(
      this.actions,
      h("div", { class: "tool-hint" }, icon("alert", 14), pending.hint || `${item.name} is waiting for your decision.`),
      h("div", { class: "tool-buttons" }, note, ...buttons),
    );
  }

  async decide(decision, note) {
    if (this.busy) return;
    this.busy = true;
    for (const button of this.buttons) button.disabled = true;
    try {
      await this.onDecide(this.item, decision, note.trim());
    } finally {
      this.busy = false;
      for (const button of this.buttons || []) button.disabled = false;
    }
  }
}

function section(title, content) {
  return h("div", { class: "tool-section" }, h("div", { class: "tool-section-title" }, title), content);
}
