// The conversation on screen: one small view per conversation item, updated in place as the
// lifecycle stream changes it. The list follows the newest output unless the reader scrolled up.

import { fileRow } from "./attachments.js";
import { formatDuration, h, icon, replace } from "./dom.js";
import { renderMarkdown } from "./markdown.js";
import { costBits } from "./run_cost.js";
import { ToolCard } from "./tool_card.js";

class MessageView {
  constructor(item, actions, loadFile = null) {
    const user = item.kind === "user";
    this.text = h("div", { class: "msg-text" });
    this.files = user ? fileRow(item.files || [], loadFile) : null; // a user's attached files
    this.thinking = user ? null : h("details", { class: "msg-thinking", hidden: true }, h("summary", {}, "Thinking"), h("div", { class: "msg-thinking-text" }));
    this.meta = h("div", { class: "msg-meta" });
    // Edit / Retry / Fork from here (run_control.js), under the message.
    const buttons = (actions?.(item) || []).map((a) => h("button", { class: "msg-action", type: "button", onClick: () => a.run() }, a.label));
    this.msg = h("div", { class: `msg ${user ? "msg-user" : "msg-agent"}` }, user ? this.files : [this.meta, this.thinking], this.text);
    // Beside the bubble, not in it: the message's own text stays only its text.
    this.el = buttons.length ? h("div", { class: `msg-box msg-box-${user ? "user" : "agent"}` }, this.msg, h("div", { class: "msg-actions" }, buttons)) : this.msg;
    this.scheduled = false;
    this.update(item);
  }

  update(item) {
    this.item = item;
    this.msg.classList.toggle("is-streaming", Boolean(item.streaming));
    this.msg.dataset.streaming = item.streaming ? "true" : "false";
    const meta = `${item.author}|${item.durationMs}`;
    if (item.kind !== "user" && meta !== this.shownMeta) {
      this.shownMeta = meta;
      const parts = [h("span", { class: "msg-author" }, item.author || "agent")];
      if (item.durationMs) parts.push(h("span", { class: "msg-time" }, formatDuration(item.durationMs)));
      replace(this.meta, ...parts);
    }
    // Deltas arrive faster than frames: render at most once per frame, and for a long answer
    // (whose Markdown takes a while to build) only every few times that long.
    if (!this.scheduled) {
      this.scheduled = true;
      const wait = item.streaming ? Math.min(4 * (this.cost || 0), 500) : 0;
      setTimeout(() => requestAnimationFrame(() => {
        this.scheduled = false;
        const start = performance.now();
        this.render();
        this.cost = performance.now() - start;
      }), wait);
    }
  }

  render() {
    const item = this.item;
    if (item.kind === "user") {
      this.text.textContent = item.text;
      this.text.hidden = !item.text && Boolean(this.files); // a message of files only
      return;
    }
    replace(this.text, renderMarkdown(item.text || ""));
    this.thinking.hidden = !item.thinking;
    this.thinking.lastElementChild.textContent = item.thinking || "";
  }
}

class ErrorView {
  constructor(item) {
    this.el = h("div", { class: "msg-error", role: "alert" }, icon("alert", 16), h("span", {}, item.text));
  }
  update() {}
}

class PlanView {
  constructor(item) {
    this.list = h("ol", { class: "plan-list" });
    this.el = h("div", { class: "plan" }, h("div", { class: "plan-title" }, "Plan"), this.list);
    this.update(item);
  }
  update(item) {
    replace(
      this.list,
      item.plans.map((step, index) => h("li", { class: index < item.index ? "is-done" : index === item.index ? "is-current" : "" }, step)),
    );
  }
}

class RunFooter {
  constructor(item) {
    this.el = h("div", { class: "run-footer" });
    this.update(item);
  }
  update(item) {
    const m = item.metrics || {};
    const bits = [];
    if (m.model_calls !== undefined) bits.push(`${m.model_calls} model call${m.model_calls === 1 ? "" : "s"}`);
    if (m.tool_calls) bits.push(`${m.tool_calls} tool call${m.tool_calls === 1 ? "" : "s"}`);
    bits.push(...costBits(m, h)); // tokens (cached too) and dollars: run_cost.js
    if (m.duration_ms !== undefined) bits.push(formatDuration(m.duration_ms));
    if (item.pending) bits.push(`paused: waiting for ${item.pending === 1 ? "your decision" : `${item.pending} decisions`}`);
    this.el.className = `run-footer${item.abnormal ? " is-abnormal" : ""}`;
    const joined = bits.flatMap((bit, i) => (i ? [" · ", bit] : [bit]));
    replace(this.el, item.abnormal ? "The run ended on a partial response · " : "", joined);
  }
}

const VIEWS = { user: MessageView, agent: MessageView, error: ErrorView, plan: PlanView, run: RunFooter };

export class ChatView {
  constructor({ onDecide, actions = undefined, children = undefined, loadFile = null }) {
    this.onDecide = onDecide;
    this.actions = actions;
    this.loadFile = loadFile; // a stored message's image (attachments.js storedImages)
    this.children = children; // a tool card's child sessions (nested_sessions.js)
    this.list = h("div", { class: "chat-list", role: "log", "aria-live": "polite" });
    this.empty = h("div", { class: "chat-empty" });
    this.el = h("div", { class: "chat-scroll" }, this.empty, this.list);
    this.views = new Map();
    this.unsubscribe = null;
  }

  /** Show `conversation` (or nothing) and follow its changes. */
  show(conversation, emptyText) {
    this.unsubscribe?.();
    this.views.clear();
    this.list.replaceChildren();
    this.conversation = conversation;
    this.emptyText = emptyText;
    if (conversation) {
      for (const item of conversation.items) this.add(item);
      this.unsubscribe = conversation.subscribe((item, isNew) => (isNew ? this.add(item) : this.change(item)));
    }
    this.refreshEmpty();
    this.el.scrollTop = this.el.scrollHeight;
  }

  refreshEmpty() {
    const empty = !this.conversation || this.conversation.items.length === 0;
    this.empty.hidden = !empty;
    if (empty) replace(this.empty, ...(this.emptyText || []));
  }

  add(item) {
    const follow = this.nearBottom();
    const View = item.kind === "tool" ? null : VIEWS[item.kind];
    const view = View ? new View(item, this.actions, this.loadFile) : new ToolCard(item, { onDecide: this.onDecide, children: this.children });
    this.views.set(item.key, view);
    this.list.append(view.el);
    this.refreshEmpty();
    if (follow) this.follow();
  }

  /** Render the tool cards again (the sessions they link to changed). */
  refreshToolCards() {
    for (const view of this.views.values()) if (view instanceof ToolCard) view.update(view.item);
  }

  change(item) {
    const follow = this.nearBottom();
    this.views.get(item.key)?.update(item);
    if (follow) this.follow();
  }

  nearBottom() {
    return this.el.scrollHeight - this.el.scrollTop - this.el.clientHeight < 120;
  }

  /** Scroll to the newest output after this frame's rendering (once per frame). */
  follow() {
    if (this.following) return;
    this.following = true;
    requestAnimationFrame(() => {
      this.following = false;
      this.el.scrollTop = this.el.scrollHeight;
    });
  }
}
