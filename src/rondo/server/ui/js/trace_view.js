// The Trace tab: the session's OpenTelemetry spans (from the server's span store, the same
// route google-adk's dev UI reads) as one waterfall per invocation. Click a span for its JSON.

import { formatDuration, h, replace, shortId } from "./dom.js";

const INVOCATION = "gcp.vertex.agent.invocation_id";

/** Spans grouped by invocation (their trace when they carry no invocation id), oldest first. */
export function invocations(spans) {
  const byTrace = new Map();
  for (const span of spans) {
    const key = String(span.trace_id);
    if (!byTrace.has(key)) byTrace.set(key, []);
    byTrace.get(key).push(span);
  }
  const groups = [];
  for (const members of byTrace.values()) {
    const tagged = members.find((s) => s.attributes?.[INVOCATION]);
    groups.push({ id: tagged ? tagged.attributes[INVOCATION] : String(members[0].trace_id), spans: members });
  }
  groups.sort((a, b) => first(a.spans) - first(b.spans));
  return groups;
}

function first(spans) {
  return Math.min(...spans.map((s) => s.start_time));
}

/** The spans depth first (children by start time), each with its depth. */
export function ordered(spans) {
  const ids = new Set(spans.map((s) => String(s.span_id)));
  const children = new Map();
  const roots = [];
  for (const span of spans) {
    const parent = span.parent_span_id == null ? null : String(span.parent_span_id);
    if (parent === null || !ids.has(parent)) roots.push(span);
    else {
      if (!children.has(parent)) children.set(parent, []);
      children.get(parent).push(span);
    }
  }
  const byStart = (a, b) => a.start_time - b.start_time;
  const out = [];
  const visit = (span, depth) => {
    out.push({ span, depth });
    for (const child of (children.get(String(span.span_id)) || []).sort(byStart)) visit(child, depth + 1);
  };
  for (const root of roots.sort(byStart)) visit(root, 0);
  return out;
}

function kind(span) {
  const operation = span.attributes?.["gen_ai.operation.name"];
  if (operation === "invoke_agent") return "agent";
  if (operation === "chat" || operation === "generate_content") return "model";
  if (operation === "execute_tool") return "tool";
  return "other";
}

export class TraceView {
  /** `select(row, title, value)` shows a span's JSON in the inspector's detail pane. */
  constructor(select) {
    this.select = select;
    this.el = h("div", { class: "trace-view" });
    this.show([]);
  }

  show(spans, message = "No spans yet. Each run of this session shows here as a waterfall.") {
    if (!spans.length) {
      replace(this.el, h("div", { class: "panel-empty" }, message));
      return;
    }
    replace(this.el, invocations(spans).map((group) => this.waterfall(group)));
  }

  waterfall(group) {
    const start = first(group.spans);
    const end = Math.max(...group.spans.map((s) => s.end_time));
    const total = Math.max(end - start, 1);
    const rows = ordered(group.spans).map(({ span, depth }) => {
      const ms = (span.end_time - span.start_time) / 1e6;
      const left = ((span.start_time - start) / total) * 100;
      const width = Math.max(((span.end_time - span.start_time) / total) * 100, 0.5);
      const failed = Boolean(span.attributes?.["error.type"]);
      const row = h(
        "button",
        { class: `span-row span-${kind(span)}${failed ? " span-error" : ""}`, type: "button", title: span.name, dataset: { span: String(span.span_id) } },
        h("span", { class: "span-name", style: `padding-left: ${depth * 14}px` }, span.name),
        h("span", { class: "span-track" }, h("span", { class: "span-bar", style: `left: ${left}%; width: ${width}%` })),
        h("span", { class: "span-ms" }, formatDuration(ms)),
      );
      row.addEventListener("click", () => this.select(row, span.name, span));
      return row;
    });
    return h(
      "section",
      { class: "trace-invocation", "aria-label": `Invocation ${group.id}` },
      h("div", { class: "trace-head" }, h("span", { class: "chip" }, "invocation"), h("span", { class: "row-id", title: group.id }, shortId(group.id)), h("span", { class: "span-ms" }, formatDuration(total / 1e6))),
      rows,
    );
  }
}
