// Issue 20: a live call's lifecycle events in the conversation (src/rondo/server/ui/js/conversation.js):
// the user's transcribed words become their message, the model's its answer, tool cards between.
import assert from "node:assert/strict";
import { test } from "node:test";

import { Conversation } from "../../src/rondo/server/ui/js/conversation.js";

const at = { run_id: "run-1", invocation_id: "inv-1", agent_name: "talker" };
const said = (role, text, finished, reason_id = "r1") => ({ ...at, type: "transcript", reason_id, role, text, finished });

function shown(conversation) {
  return conversation.items.map((item) => [item.kind, item.kind === "tool" ? `${item.name}:${item.status}` : item.text]);
}

test("a voice turn: the words heard, the tool, the words said", () => {
  const c = new Conversation();
  for (const ev of [
    said("user", "what is ", false),
    said("user", "the weather", false),
    said("user", "what is the weather", true),
    { ...at, type: "tool_call_start", reason_id: "r1", call_id: "c1", tool_name: "weather", args: { city: "Oslo" } },
    { ...at, type: "tool_call_end", reason_id: "r1", call_id: "c1", tool_name: "weather", result: { sky: "clear" } },
    said("model", "It is ", false, "r2"),
    said("model", "clear.", false, "r2"),
    said("model", "It is clear.", true, "r2"),
    said("model", "Anything else?", true, "r2"),
  ]) c.apply(ev);
  assert.deepEqual(shown(c), [
    ["user", "what is the weather"],
    ["tool", "weather:done"],
    ["agent", "It is clear. Anything else?"],
  ]);
  // The turn's record (its last transcript) does not cut the answer short.
  c.apply({ ...at, type: "reason_end", reason_id: "r2", event: { content: { parts: [{ text: "Anything else?" }] } } });
  assert.equal(c.items[2].text, "It is clear. Anything else?");
  assert.equal(c.items[2].streaming, false);
});

test("when the model writes text, its text is the answer, not the transcript", () => {
  const c = new Conversation();
  c.apply({ ...at, type: "reason_delta", reason_id: "r1", kind: "text_delta", text: "Hello." });
  c.apply(said("model", "Hello there.", true));
  assert.deepEqual(shown(c), [["agent", "Hello."]]);
});
