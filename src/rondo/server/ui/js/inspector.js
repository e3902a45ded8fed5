// The side panel a developer debugs with: the session's state, its artifacts, the lifecycle
// timeline of the runs streamed here (ids, offsets, click for the JSON), and the stored records.

import { dataUrl } from "./attachments.js";
import { formatDuration, h, replace, shortId } from "./dom.js";
import { jsonView, preview } from "./json_view.js";
import { TraceView } from "./trace_view.js";
import { stateEditor } from "./state_editor.js";

const TIMELINE_CAP = 2000;

/** The id that names a lifecycle event best: call, then reason, then record, then run. */
function mainId(ev) {
  return ev.call_id || ev.reason_id || ev.event?.id || ev.task_id || ev.run_id || "";
}

function eventSummary(ev) {
  switch (ev.type) {
    case "run_start":
      return ev.resumed ? "resumed" : `session ${shortId(ev.session_id)}`;
    case "reason_delta":
      return ev.kind;
    case "reason_end":
      return `${formatDuration(ev.duration_ms)}${ev.tool_calls?.length ? ` · ${ev.tool_calls.map((c) => c.name).join(", ")}` : ""}`;
    case "action_start":
      return (ev.tool_calls || []).map((c) => c.name).join(", ");
    case "tool_call_start":
      return ev.tool_name;
    case "tool_call_end":
      return `${ev.tool_name} · ${ev.error ? "error" : "ok"} · ${formatDuration(ev.duration_ms)}`;
    case "tool_call_progress":
      return `${ev.tool_name} · #${(ev.index ?? 0) + 1} · ${preview(ev.chunk, 40)}`;
    case "hitl_pending":
      return (ev.pending || []).map((p) => p.tool_name).join(", ");
    case "guardrail_triggered":
      return `${ev.guardrail} · ${ev.stage}${ev.tool_name ? ` · ${ev.tool_name}` : ""}`;
    case "budget_exhausted":
      return `${ev.budget} · ${ev.used ?? "?"} of ${ev.limit}`;
    case "hitl_decided":
      return `${ev.tool_name} · ${ev.decision}`;
    case "context_size":
      return `${ev.token_count} tokens · ${ev.message_count} messages${ev.compressed ? " · compacted" : ""}`;
    case "plan_update":
      return `${ev.stage} · step ${ev.index + 1}/${ev.plans?.length || 0}`;
    case "task_event":
      return `${ev.event?.type || ""} · task ${ev.task_index}`;
    case "run_end":
      return `${ev.is_abnormal ? "abnormal · " : ""}${ev.pending?.length ? `${ev.pending.length} pending · ` : ""}${formatDuration(ev.metrics?.duration_ms)}`;
    case "error":
      return preview(ev.error ?? ev.detail ?? "", 60);
    default:
      return ev.node || "";
  }
}

function offsetText(ms) {
  if (ms < 0) ms = 0;
  if (ms < 1000) return `+${ms.toFixed(ms < 10 ? 1 : 0)} ms`;
  return `+${(ms / 1000).toFixed(2)} s`;
}

function recordSummary(record) {
  const parts = record.content?.parts || [];
  const bits = [];
  for (const part of parts) {
    if (part.text) bits.push(`${part.thought ? "thought" : "text"}: ${preview(part.text, 40)}`);
    if (part.functionCall) bits.push(`call ${part.functionCall.name}`);
    if (part.functionResponse) bits.push(`response ${part.functionResponse.name}`);
    if (part.inlineData) bits.push(part.inlineData.mimeType || "data");
  }
  const delta = record.actions?.stateDelta;
  if (delta && Object.keys(delta).length) bits.push(`state: ${Object.keys(delta).join(", ")}`);
  if (record.errorMessage) bits.push(`error: ${preview(record.errorMessage, 40)}`);
  return bits.join(" · ") || "(no content)";
}

class Timeline {
  constructor(select) {
    this.select = select;
    this.list = h("div", { class: "rows", role: "list" });
    this.el = h("div", { class: "timeline" }, this.list);
    this.events = [];
    this.storageKey = null;
    this.lastGroup = null;
    this.runStart = 0;
  }

  /**
   * Show the timeline of `key` (a session): `events`, the lifecycle events rebuilt from the
   * session's stored records — never this tab's memory, so a reload, this tab after a run, and
   * a link opened in a new tab all show the same timeline. A live run then appends to it.
   */
  load(key, events = []) {
    this.storageKey = key;
    this.events = [];
    this.list.replaceChildren();
    this.lastGroup = null;
    for (const ev of events) this.push(ev);
    this.refreshEmpty();
  }

  refreshEmpty() {
    if (this.events.length) return;
    this.list.replaceChildren(h("div", { class: "panel-empty" }, "Lifecycle events of the runs you start here appear in this timeline."));
  }

  push(ev) {
    if (!this.events.length) this.list.replaceChildren();
    this.events.push(ev);
    if (ev.type === "run_start") this.runStart = ev.timestamp;
    if (ev.type === "reason_delta" && this.lastGroup && this.lastGroup.reasonId === ev.reason_id) {
      this.lastGroup.events.push(ev);
      this.lastGroup.chars += (ev.text || "").length;
      this.lastGroup.summary.textContent = `×${this.lastGroup.events.length} · ${this.lastGroup.chars} chars`;
    } else {
      this.list.append(this.row(ev));
    }
  }

  row(ev) {
    const offset = this.runStart && ev.timestamp ? offsetText((ev.timestamp - this.runStart) * 1000) : "";
    const id = mainId(ev);
    const summary = h("span", { class: "row-summary" }, eventSummary(ev));
    const group = ev.type === "reason_delta" ? { reasonId: ev.reason_id, events: [ev], summary, chars: (ev.text || "").length } : null;
    const row = h(
      "button",
      { class: `row tl-${ev.type}`, type: "button", role: "listitem", title: id, dataset: { type: ev.type } },
      h("span", { class: "row-time" }, offset),
      h("span", { class: "chip" }, ev.type),
      summary,
      h("span", { class: "row-id" }, shortId(id)),
    );
    row.addEventListener("click", () => {
      this.select(row, group ? `${ev.type} ×${group.events.length} · ${ev.reason_id}` : `${ev.type} · ${id}`, group ? group.events : ev);
    });
    this.lastGroup = group;
    return row;
  }

}

export class Inspector {
  /** `loadArtifact(name, version)` returns `{versions, part}` for the artifacts tab. */
  constructor({ loadArtifact, saveState = null }) {
    this.loadArtifact = loadArtifact;
    this.saveState = saveState; // (delta) => Promise: the State tab's editor saves through it
    this.detailTitle = h("div", { class: "detail-title" });
    this.detailBody = h("div", { class: "detail-body" });
    this.detail = h("div", { class: "detail", hidden: true }, h("div", { class: "detail-head" }, this.detailTitle, h("button", { class: "btn btn-ghost btn-xs", type: "button", onClick: () => this.closeDetail() }, "Close")), this.detailBody);
    this.timeline = new Timeline((row, title, value) => this.showDetail(row, title, value));
    this.state = h("div", { class: "panel-pad" });
    this.artifacts = h("div", { class: "panel-pad" });
    this.records = h("div", { class: "rows" });
    this.trace = new TraceView((row, title, value) => this.showDetail(row, title, value));
    this.panes = { state: this.state, artifacts: this.artifacts, timeline: this.timeline.el, events: this.records, trace: this.trace.el };
    this.tabButtons = {};
    const tabs = h("div", { class: "tabs", role: "tablist" });
    for (const [key, label] of [["state", "State"], ["artifacts", "Artifacts"], ["timeline", "Timeline"], ["events", "Events"], ["trace", "Trace"]]) {
      const button = h("button", { class: "tab", type: "button", role: "tab", dataset: { tab: key }, onClick: () => this.selectTab(key) }, label, h("span", { class: "tab-count" }));
      this.tabButtons[key] = button;
      tabs.append(button);
    }
    this.body = h("div", { class: "inspector-body" }, Object.values(this.panes));
    this.el = h("aside", { class: "inspector", "aria-label": "Inspector" }, tabs, this.body, this.detail);
    this.selectTab(localStorage.getItem("rondo.tab") || "timeline");
    this.clear();
  }

  selectTab(key) {
    if (!this.panes[key]) key = "timeline";
    for (const [name, pane] of Object.entries(this.panes)) pane.hidden = name !== key;
    for (const [name, button] of Object.entries(this.tabButtons)) button.setAttribute("aria-selected", String(name === key));
    localStorage.setItem("rondo.tab", key);
  }

  count(tab, n) {
    this.tabButtons[tab].lastElementChild.textContent = n ? String(n) : "";
  }

  clear(message = "Open or start a session to inspect it.") {
    replace(this.state, h("div", { class: "panel-empty" }, message));
    replace(this.artifacts, h("div", { class: "panel-empty" }, message));
    replace(this.records, h("div", { class: "panel-empty" }, message));
    this.trace.show([], message);
    this.timeline.load(null);
    for (const tab of Object.keys(this.panes)) this.count(tab, 0);
    this.closeDetail();
  }

  /**
   * `rebuilt`: the session's lifecycle rebuilt from its records, shown as its timeline; without
   * it the timeline stays as it is (another session's is emptied).
   */
  showSession(session, storageKey, rebuilt = null) {
    if (rebuilt) this.timeline.load(storageKey, rebuilt);
    else if (storageKey !== this.timeline.storageKey) this.timeline.load(storageKey);
    this.count("timeline", this.timeline.events.length);
    const state = session.state || {};
    replace(
      this.state,
      h("dl", { class: "facts" }, fact("Session", session.id), fact("User", session.userId), fact("Updated", session.lastUpdateTime ? new Date(session.lastUpdateTime * 1000).toLocaleString() : "")),
      Object.keys(state).length ? jsonView(state, { open: 2, copy: true }) : h("div", { class: "panel-empty" }, "The state is empty. Tools and callbacks write it."),
      this.saveState ? stateEditor(state, this.saveState) : null,
    );
    this.count("state", Object.keys(state).length);
    this.showRecords(session.events || []);
  }

  showRecords(events) {
    this.count("events", events.length);
    if (!events.length) {
      replace(this.records, h("div", { class: "panel-empty" }, "No records yet."));
      return;
    }
    replace(
      this.records,
      events.map((record, index) => {
        const row = h(
          "button",
          { class: "row", type: "button", title: record.id },
          h("span", { class: "row-time" }, String(index + 1)),
          h("span", { class: `chip ${record.author === "user" ? "chip-user" : ""}` }, record.author),
          h("span", { class: "row-summary" }, recordSummary(record)),
          h("span", { class: "row-id" }, shortId(record.id)),
        );
        row.addEventListener("click", () => this.showDetail(row, `record ${index + 1} · ${record.id}`, record));
        return row;
      }),
    );
  }

  /** The session's spans (the server's trace route), one waterfall per invocation. */
  showTrace(spans) {
    this.count("trace", new Set(spans.map((s) => String(s.trace_id))).size);
    this.trace.show(spans);
  }

  showArtifacts(names) {
    this.count("artifacts", names.length);
    if (!names.length) {
      replace(this.artifacts, h("div", { class: "panel-empty" }, "No artifacts. A tool saves one with tool_context.save_artifact()."));
      return;
    }
    const view = h("div", { class: "artifact-view" });
    const list = h(
      "div",
      { class: "artifact-list" },
      names.map((name) => h("button", { class: "artifact", type: "button", onClick: () => this.openArtifact(name, undefined, view) }, name)),
    );
    replace(this.artifacts, list, view);
  }

  async openArtifact(name, version, view) {
    replace(view, h("div", { class: "panel-empty" }, `Loading ${name}…`));
    try {
      const { versions, part } = await this.loadArtifact(name, version);
      const shown = version ?? versions[versions.length - 1];
      const select = h("select", { class: "input input-sm", "aria-label": "Version" }, versions.map((v) => h("option", { value: v, selected: v === shown }, `v${v}`)));
      select.addEventListener("change", () => this.openArtifact(name, Number(select.value), view));
      replace(view, h("div", { class: "artifact-head" }, h("strong", {}, name), select), artifactPreview(name, part));
    } catch (error) {
      replace(view, h("div", { class: "msg-error" }, error.message));
    }
  }

  pushLifecycle(ev) {
    this.timeline.push(ev);
    this.count("timeline", this.timeline.events.length);
  }

  showDetail(row, title, value) {
    this.selectedRow?.classList.remove("is-selected");
    this.selectedRow = row;
    row.classList.add("is-selected");
    this.detailTitle.textContent = title;
    replace(this.detailBody, jsonView(value, { open: 5, copy: true }));
    this.detail.hidden = false;
  }

  closeDetail() {
    this.selectedRow?.classList.remove("is-selected");
    this.detail.hidden = true;
  }
}

function fact(label, value) {
  return [h("dt", {}, label), h("dd", { title: value }, value || "—")];
}

function artifactPreview(name, part) {
  if (!part) return h("div", { class: "panel-empty" }, "This version is empty.");
  if (typeof part.text === "string") return h("pre", { class: "artifact-text" }, part.text);
  const data = part.inlineData || part.inline_data;
  if (data?.data) {
    const mime = data.mimeType || data.mime_type || "application/octet-stream";
    const href = dataUrl(mime, data.data);
    const download = h("a", { class: "btn btn-xs", href, download: data.displayName || name }, "Download");
    if (mime.startsWith("image/")) return h("div", {}, h("img", { class: "artifact-image", src: href, alt: name }), download);
    if (mime.startsWith("text/") || mime === "application/json") {
      let text = "";
      try {
        text = new TextDecoder().decode(Uint8Array.from(atob(href.slice(href.indexOf(",") + 1)), (c) => c.charCodeAt(0)));
      } catch {
        text = "(cannot decode)";
      }
      return h("div", {}, h("pre", { class: "artifact-text" }, text), download);
    }
    return h("div", { class: "panel-empty" }, `${mime}, ${Math.round((data.data.length * 3) / 4)} bytes `, download);
  }
  return jsonView(part, { open: 2 });
}
