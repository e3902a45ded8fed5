// A session's stored records (ADK's camelCase JSON) turned back into the lifecycle events a
// live run streams, so a reload, or a session opened from a link in another tab, is rendered
// by the very code that renders a live run: the same tool cards and decisions (with their
// comments), the same run footers, the same timeline. What the records do not keep is
// derived from them: a tool's duration is the time between its call's record and its
// result's; a run's, the time between its invocation's first and last records.

import { filesOfParts } from "./attachments.js";

export const CONFIRMATION_TOOL = "adk_request_confirmation";

// The `customMetadata` key of the record a failed run ends on (the runner's `FAILURE`).
export const FAILURE = "rondo:failure";

const seconds = (ts) => (typeof ts === "number" ? ts : 0);

function partsOf(record) {
  return record.content?.parts || [];
}

function isToolResults(record) {
  const parts = partsOf(record);
  return parts.length > 0 && parts.every((p) => p.functionResponse);
}

/** The invocations of `records`, in order: [{id, runId, records}]. */
function invocations(records) {
  const out = [];
  for (const record of records) {
    if (record.partial) continue;
    const id = record.invocationId || "";
    const last = out[out.length - 1];
    if (last && last.id === id) last.records.push(record);
    else out.push({ id, runId: record.runId || "", records: [record] });
  }
  return out;
}

/** The error a tool result carries (rondo stores a failed call as `{"error": ...}`). */
function toolError(result) {
  if (result && typeof result === "object" && Object.keys(result).length === 1 && typeof result.error === "string") {
    return result.error === "confirmation required" ? null : result.error;
  }
  return null;
}

/**
 * Lifecycle events rebuilt from `records`; `pending` is the session's pending calls (the
 * pending route's JSON). User messages come as `{type: "user_message", text, files}`, which only the
 * conversation uses (a live run never streams the message it was sent). `usage` is the usage
 * route's JSON: each invocation's cached tokens and price, which the records do not carry.
 */
export function lifecycleFromRecords(records, pending = [], usage = []) {
  const priced = new Map(usage.map((u) => [u.invocationId, u]));
  const stillPending = new Set(pending.map((p) => p.callId ?? p.call_id));
  const calls = new Map(); // call id -> {name, args, at}
  const guarded = new Map(); // confirmation id -> the guarded call
  const out = [];
  for (const inv of invocations(records || [])) {
    const first = inv.records[0];
    const last = inv.records[inv.records.length - 1];
    const base = { run_id: inv.runId, invocation_id: inv.id };
    const metrics = { model_calls: 0, tool_calls: 0, input_tokens: 0, output_tokens: 0, total_tokens: 0, duration_ms: 0 };
    const waiting = [];
    out.push({ type: "run_start", ...base, timestamp: seconds(first.timestamp), resumed: false });
    let previous = seconds(first.timestamp);
    let failed = false;
    for (const record of inv.records) {
      const at = seconds(record.timestamp);
      if (isFailure(record)) {
        out.push(failureEvent(record, base, at));
        failed = true;
      } else if (record.author === "user") {
        userRecord(record, base, at, out, guarded);
        toolResults(record, base, at, out, calls); // a long-running call's delivered result
      } else if (isToolResults(record)) {
        metrics.tool_calls += toolResults(record, base, at, out, calls);
      } else if (isConfirmationRequest(record)) {
        confirmationRequest(record, base, guarded, waiting); // the flow's record, not the model's
      } else {
        metrics.model_calls += 1;
        const usage = record.usageMetadata || {};
        metrics.input_tokens += usage.promptTokenCount || 0;
        metrics.output_tokens += usage.candidatesTokenCount || 0;
        metrics.total_tokens += usage.totalTokenCount || 0;
        modelRecord(record, base, at, previous, out, calls, stillPending, waiting);
      }
      previous = at;
    }
    // A failed run's stream ends on its error: no pending calls, no run footer.
    if (failed && isFailure(last)) continue;
    metrics.duration_ms = Math.max(0, (seconds(last.timestamp) - seconds(first.timestamp)) * 1000);
    addPrice(metrics, priced.get(inv.id));
    if (waiting.length) out.push({ type: "hitl_pending", ...base, timestamp: seconds(last.timestamp), pending: waiting });
    const left = waiting.filter((p) => stillPending.has(p.call_id));
    out.push({ type: "run_end", ...base, timestamp: seconds(last.timestamp), metrics, pending: left, is_abnormal: false, rebuilt: true });
  }
  return out;
}

/** The usage route's figures for one invocation, in `run_end` metrics' names. */
function addPrice(metrics, usage) {
  if (!usage) return;
  metrics.cached_tokens = usage.cachedTokens || 0;
  metrics.cache_write_tokens = usage.cacheWriteTokens || 0;
  metrics.cost_usd = usage.costUsd ?? null;
  metrics.unpriced_calls = usage.unpricedCalls || 0;
  metrics.free_calls = usage.freeCalls || 0;
}

/** Whether `record` is the one a failed run ended on (the runner marks it `rondo:failure`). */
export function isFailure(record) {
  return Boolean(record.customMetadata && FAILURE in record.customMetadata);
}

/**
 * The stream's `error` event a failed run ended on, as the live view received it: the text
 * is the server's `"Type: message"` (the record keeps the type as its `errorCode`).
 */
function failureEvent(record, base, at) {
  const error = [record.errorCode, record.errorMessage].filter(Boolean).join(": ") || "The run failed.";
  return { type: "error", ...base, timestamp: at, error, error_code: record.errorCode || null, rebuilt: true };
}

function userRecord(record, base, at, out, guarded) {
  const text = partsOf(record).filter((p) => p.text && !p.thought).map((p) => p.text).join("");
  const files = filesOfParts(partsOf(record)); // attached files (issue 22)
  if (text || files.length) out.push({ type: "user_message", ...base, timestamp: at, text, files });
  for (const part of partsOf(record)) {
    const answer = part.functionResponse;
    if (!answer || answer.name !== CONFIRMATION_TOOL) continue;
    const call = guarded.get(answer.id);
    const response = answer.response || {};
    const decision = response.decision || (response.confirmed ? "approve" : "reject");
    out.push({
      type: "hitl_decided",
      ...base,
      timestamp: at,
      call_id: call?.id || answer.id,
      tool_name: call?.name || "",
      args: call?.args || {},
      decision,
      comment: response.comment ?? null,
    });
  }
}

function isConfirmationRequest(record) {
  const parts = partsOf(record);
  return parts.length > 0 && parts.every((p) => p.functionCall?.name === CONFIRMATION_TOOL);
}

function confirmationRequest(record, base, guarded, waiting) {
  for (const part of partsOf(record)) {
    const call = part.functionCall;
    const original = call.args?.originalFunctionCall || {};
    guarded.set(call.id, original);
    waiting.push({
      call_id: call.id,
      tool_name: original.name || "",
      args: original.args || {},
      kind: "confirmation",
      hint: call.args?.toolConfirmation?.hint || "",
      run_id: base.run_id,
      original_call: original,
      original_call_id: original.id,
    });
  }
}

function modelRecord(record, base, at, previous, out, calls, stillPending, waiting) {
  const toolCalls = [];
  for (const part of partsOf(record)) {
    const call = part.functionCall;
    if (!call) continue;
    calls.set(call.id, { name: call.name, args: call.args || {}, at });
    toolCalls.push({ id: call.id, name: call.name, args: call.args || {} });
    if ((record.longRunningToolIds || []).includes(call.id) && stillPending.has(call.id)) {
      waiting.push({ call_id: call.id, tool_name: call.name, args: call.args || {}, kind: "long_running", run_id: base.run_id });
    }
  }
  const event = { content: record.content, error_code: record.errorCode, error_message: record.errorMessage };
  out.push({ type: "reason_end", ...base, timestamp: at, reason_id: record.id, node: record.author, agent_name: record.author, duration_ms: (at - previous) * 1000, event });
  if (toolCalls.length) out.push({ type: "action_start", ...base, timestamp: at, tool_calls: toolCalls });
}

function toolResults(record, base, at, out, calls) {
  let count = 0;
  for (const part of partsOf(record)) {
    const response = part.functionResponse;
    if (!response || response.name === CONFIRMATION_TOOL) continue;
    const call = calls.get(response.id);
    const result = response.response;
    const error = toolError(result);
    count += 1;
    out.push({
      type: "tool_call_end",
      ...base,
      timestamp: at,
      call_id: response.id,
      tool_name: response.name,
      args: call?.args || {},
      result: error ? null : result,
      error,
      duration_ms: call ? Math.max(0, (at - call.at) * 1000) : 0,
    });
  }
  return count;
}
