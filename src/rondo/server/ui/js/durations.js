// Durations the live view shows, made the ones a reload shows. A reload can only derive a
// duration from the stored records' timestamps (records_lifecycle.js); the live view first
// shows what the stream measured, and once the run has ended adopts the durations derived
// from the very records a reload reads — so the two show the same text to the millisecond.

import { lifecycleFromRecords } from "./records_lifecycle.js";

function byInvocation(list, invocationOf) {
  const out = new Map();
  for (const entry of list) {
    const id = invocationOf(entry) || "";
    if (!out.has(id)) out.set(id, []);
    out.get(id).push(entry);
  }
  return out;
}

/** Pair the nth live item of each invocation with the nth rebuilt event of it. */
function pairs(items, events) {
  const live = byInvocation(items, (item) => item.invocationId);
  const rebuilt = byInvocation(events, (ev) => ev.invocation_id);
  const out = [];
  for (const [id, list] of live) {
    const matching = rebuilt.get(id) || [];
    list.forEach((item, index) => {
      if (matching[index]) out.push([item, matching[index]]);
    });
  }
  return out;
}

function agentAnswered(ev) {
  return (ev.event?.content?.parts || []).some((p) => p.text);
}

/**
 * Give `conversation`'s tool calls, agent messages and run footers the durations derived from
 * `records` (the session's stored records, ADK's camelCase JSON).
 */
export function adoptRecordedDurations(conversation, records) {
  const events = lifecycleFromRecords(records || []);
  for (const ev of events) {
    if (ev.type !== "tool_call_end") continue;
    const card = conversation.byKey.get(ev.call_id);
    if (card?.kind === "tool" && card.durationMs !== undefined && card.durationMs !== ev.duration_ms) {
      conversation._update(card, { durationMs: ev.duration_ms });
    }
  }
  const runs = conversation.items.filter((item) => item.kind === "run" && item.invocationId !== undefined);
  for (const [item, ev] of pairs(runs, events.filter((e) => e.type === "run_end"))) {
    if (item.metrics?.duration_ms !== ev.metrics.duration_ms) {
      conversation._update(item, { metrics: { ...item.metrics, duration_ms: ev.metrics.duration_ms } });
    }
  }
  const agents = conversation.items.filter((item) => item.kind === "agent" && item.durationMs !== undefined);
  const answers = events.filter((e) => e.type === "reason_end" && agentAnswered(e));
  for (const [item, ev] of pairs(agents, answers)) {
    if (item.durationMs !== ev.duration_ms) conversation._update(item, { durationMs: ev.duration_ms });
  }
}
