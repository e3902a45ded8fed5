// The conversation of one session as a list of items (user messages, agent messages, tool
// calls, plans, errors, run summaries), built two ways: live, by applying lifecycle events as
// they stream; and after a reload, from the session's stored records (ADK's camelCase JSON).
// Views subscribe and update the one item that changed.

import { describeDetail } from "./api.js";
import { CONFIRMATION_TOOL, lifecycleFromRecords } from "./records_lifecycle.js";

export { CONFIRMATION_TOOL };

/** A pending call from either wire (lifecycle snake_case or a camelCase projection). */
export function normalizePending(raw) {
  const original = raw.original_call ?? raw.originalCall ?? null;
  return {
    callId: raw.call_id ?? raw.callId,
    toolName: raw.tool_name ?? raw.toolName ?? "",
    args: raw.args ?? {},
    kind: raw.kind ?? "long_running",
    hint: raw.hint ?? "",
    runId: raw.run_id ?? raw.runId ?? "",
    originalCall: original,
    // The tool card this call belongs to: the guarded call for a confirmation.
    cardKey: raw.original_call_id || raw.originalCallId || original?.id || (raw.call_id ?? raw.callId),
  };
}

/** The text of a stream error event, whatever field the server put it in. */
export function errorText(event) {
  const value = event.error ?? event.detail ?? event.message ?? event.error_message ?? event.errorMessage;
  if (typeof value === "string") return value;
  if (value && typeof value === "object") return describeDetail(value.detail ?? value.message ?? value);
  return "The run failed.";
}

const DECIDED_STATUS = { approve: "approved", reject: "rejected", skip: "skipped" };

export class Conversation {
  constructor() {
    this.items = [];
    this.byKey = new Map();
    this.listeners = new Set();
    this.running = false;
    this._seq = 0;
  }

  subscribe(listener) {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** The tool cards that wait for a decision. */
  get pendingCards() {
    return this.items.filter((item) => item.kind === "tool" && item.status === "pending");
  }

  // -- building blocks -----------------------------------------------------------------------

  _emit(item, isNew) {
    for (const listener of this.listeners) listener(item, isNew);
  }

  _add(item) {
    item.key = item.key || `${item.kind}-${++this._seq}`;
    this.items.push(item);
    this.byKey.set(item.key, item);
    this._emit(item, true);
    return item;
  }

  _update(item, changes) {
    Object.assign(item, changes);
    this._emit(item, false);
    return item;
  }

  _tool(callId, name, args) {
    const existing = this.byKey.get(callId);
    if (existing) return existing;
    return this._add({ kind: "tool", key: callId, callId, name, args: args || {}, status: "running", progress: [] });
  }

  /** A user's message; `files` are its attachments (attachments.js's ShownFile). */
  addUser(text, invocationId = "", files = []) {
    return this._add({ kind: "user", text, invocationId, files });
  }

  addError(text) {
    return this._add({ kind: "error", text });
  }

  /**
   * A decision the server accepted on `card`. A confirmation's resumed run reports it
   * (`hitl_decided`, then the call's own events); a long-running call's result arrives as the
   * message itself, so the card records what was sent.
   */
  settle(card, decision, body) {
    if (card.status !== "pending") return;
    const delivered = decision === "approve" ? body.result : decision === "skip" ? body.observation : undefined;
    this._update(card, {
      decision,
      comment: body.comment,
      pending: null,
      status: decision === "approve" ? "done" : DECIDED_STATUS[decision],
      result: delivered === undefined ? card.result : delivered,
    });
    this._refreshFooters();
  }

  /** The run ended without its end (stopped, failed, cut off): nothing is running any more. */
  interrupt(text) {
    this.running = false;
    for (const item of this.items) {
      if (item.kind === "tool" && item.status === "running") this._update(item, { status: "interrupted" });
      if (item.kind === "agent" && item.streaming) this._update(item, { streaming: false });
    }
    if (text) this.addError(text);
  }

  // -- live: lifecycle events ----------------------------------------------------------------

  /** Apply one lifecycle event (unknown types are ignored, as the wire format allows). */
  apply(ev) {
    const handler = LIVE[ev.type];
    if (handler) handler(this, ev);
  }

  _agentFor(ev) {
    const key = `reason-${ev.reason_id}`;
    const existing = this.byKey.get(key);
    if (existing) return existing;
    return this._add({ kind: "agent", key, author: ev.node || ev.agent_name, text: "", thinking: "", streaming: true, invocationId: ev.invocation_id });
  }

  _setPending(rawList) {
    for (const raw of rawList || []) {
      const pending = normalizePending(raw);
      const card = this._tool(pending.cardKey, pending.originalCall?.name || pending.toolName, pending.originalCall?.args || pending.args);
      this._update(card, { status: "pending", pending, result: undefined });
    }
  }

  // -- after a reload: stored records --------------------------------------------------------

  /**
   * Rebuild from `GET .../sessions/{id}` events and the session's pending calls: the records
   * become the lifecycle events a live run streams, applied by the same handlers.
   */
  static fromRecords(events, pending = [], usage = []) {
    const conversation = new Conversation();
    for (const ev of lifecycleFromRecords(events, pending, usage)) conversation.apply(ev);
    conversation.running = false;
    for (const item of conversation.items) {
      if (item.kind === "tool" && item.status === "running") item.status = "unanswered";
    }
    conversation._setPending(pending);
    return conversation;
  }

  /** Run footers count only the calls still waiting: a decided call never says "waiting". */
  _refreshFooters() {
    for (const item of this.items) {
      if (item.kind !== "run" || !item.pendingKeys?.length) continue;
      const waiting = item.pendingKeys.filter((key) => this.byKey.get(key)?.status === "pending").length;
      if (waiting !== item.pending) this._update(item, { pending: waiting });
    }
  }
}

// One handler per lifecycle event type.
const LIVE = {
  run_start(c, ev) {
    c.running = true;
    // The message just sent learns its invocation (Edit and Retry rewind to before it).
    const last = [...c.items].reverse().find((item) => item.kind === "user");
    if (last && !last.invocationId) last.invocationId = ev.invocation_id;
  },
  reason_delta(c, ev) {
    if (ev.kind === "text_delta" || ev.kind === "thinking_delta") {
      const item = c._agentFor(ev);
      const field = ev.kind === "thinking_delta" || ev.is_thinking ? "thinking" : "text";
      c._update(item, { [field]: item[field] + (ev.text || ""), streaming: true, fromText: item.fromText || field === "text" });
    }
  },
  transcript(c, ev) {
    // A live call's words: the user's become their message, the model's its answer (unless
    // the model also wrote text, which is then the answer).
    if (ev.role === "user") {
      const key = `heard-${ev.reason_id}`;
      const item = c.byKey.get(key);
      const text = ev.finished ? ev.text : (item?.heard || "") + ev.text;
      if (item) c._update(item, { text, heard: ev.finished ? "" : text });
      else c._add({ kind: "user", key, text, heard: ev.finished ? "" : text, invocationId: ev.invocation_id });
      return;
    }
    const item = c._agentFor(ev);
    if (item.fromText) return;
    const said = ev.finished ? [item.said, ev.text].filter(Boolean).join(" ") : item.said || "";
    const saying = ev.finished ? "" : (item.saying || "") + ev.text;
    c._update(item, { said, saying, text: [said, saying].filter(Boolean).join(" "), streaming: !ev.finished });
  },
  reason_end(c, ev) {
    const parts = ev.event?.content?.parts || [];
    const text = parts.filter((p) => p.text && !p.thought).map((p) => p.text).join("");
    const thinking = parts.filter((p) => p.text && p.thought).map((p) => p.text).join("");
    const key = `reason-${ev.reason_id}`;
    const item = c.byKey.get(key);
    // The stored record is the answer; deltas were only its preview (SPEC V4).
    if (item) c._update(item, { text: item.said ? item.text : text || item.text, thinking: thinking || item.thinking, streaming: false, durationMs: ev.duration_ms });
    else if (text || thinking) c._add({ kind: "agent", key, author: ev.node || ev.agent_name, text, thinking, streaming: false, durationMs: ev.duration_ms, invocationId: ev.invocation_id });
    const record = ev.event;
    if (record && (record.error_message || record.error_code)) {
      c.addError([record.error_code, record.error_message].filter(Boolean).join(": "));
    }
  },
  action_start(c, ev) {
    for (const call of ev.tool_calls || []) c._tool(call.id, call.name, call.args);
  },
  tool_call_start(c, ev) {
    const card = c._tool(ev.call_id, ev.tool_name, ev.args);
    const status = card.decision && card.decision !== "approve" ? card.status : "running";
    c._update(card, { name: ev.tool_name, args: ev.args || card.args, status, startedAt: ev.timestamp });
  },
  tool_call_progress(c, ev) {
    const card = c._tool(ev.call_id, ev.tool_name, ev.args);
    c._update(card, { progress: [...card.progress, ev.chunk] });
  },
  tool_call_end(c, ev) {
    const card = c._tool(ev.call_id, ev.tool_name, ev.args);
    const result = ev.result;
    let status = ev.error ? "error" : "done";
    if (!ev.error && result?.error === "confirmation required") status = "pending";
    if (card.decision === "reject" || card.decision === "skip") status = DECIDED_STATUS[card.decision];
    c._update(card, { result, error: ev.error || undefined, durationMs: ev.duration_ms, status });
  },
  hitl_pending(c, ev) {
    c._setPending(ev.pending);
  },
  guardrail_triggered(c, ev) {
    // G6: a blocked input or answer ends the run; a blocked tool call answers with this.
    c.addError(`Guardrail ${ev.guardrail} (${String(ev.stage || "").replace("_", " ")}): ${ev.message}`);
  },
  budget_exhausted(c, ev) {
    c.addError(`Budget ${ev.budget} used up: ${ev.message}`);
  },
  hitl_decided(c, ev) {
    const card = c._tool(ev.call_id, ev.tool_name, ev.args);
    c._update(card, { decision: ev.decision, comment: ev.comment, pending: null, status: DECIDED_STATUS[ev.decision] });
    c._refreshFooters();
  },
  plan_update(c, ev) {
    const key = `plan-${ev.run_id}`;
    const plan = c.byKey.get(key);
    const plans = ev.plans?.length ? ev.plans : plan?.plans || [];
    if (plan) c._update(plan, { plans, index: ev.index, stage: ev.stage });
    else c._add({ kind: "plan", key, plans, index: ev.index, stage: ev.stage });
  },
  run_end(c, ev) {
    c.running = false;
    for (const item of c.items) {
      if (item.kind === "agent" && item.streaming) c._update(item, { streaming: false });
    }
    if (ev.pending?.length) c._setPending(ev.pending);
    const pendingKeys = (ev.pending || []).map((raw) => normalizePending(raw).cardKey);
    c._add({ kind: "run", invocationId: ev.invocation_id, metrics: ev.metrics || {}, abnormal: Boolean(ev.is_abnormal), pending: pendingKeys.length, pendingKeys });
  },
  user_message(c, ev) {
    c.addUser(ev.text, ev.invocation_id, ev.files); // only in a session rebuilt from its records
  },
  error(c, ev) {
    c.interrupt(errorText(ev));
  },
};
