// Drives rondo's /ag-ui/APP with @ag-ui/client's HttpAgent, turn by turn, and prints what the
// client ends up holding (state, messages, pending interrupts, every event it saw) as JSON.
// Usage: node ag_ui_client.mjs URL SCENARIO_JSON
// SCENARIO_JSON: {"threadId", "headers", "turns": [{"user"?: text, "toolResult"?: {"content"},
//                 "approve"?: bool, "tools"?: [...], "state"?: {...}}]}
import { HttpAgent } from "@ag-ui/client";

const [url, scenarioText] = process.argv.slice(2);
const scenario = JSON.parse(scenarioText);
const agent = new HttpAgent({ url, threadId: scenario.threadId, headers: scenario.headers ?? {} });
const turns = [];
let n = 0;
for (const turn of scenario.turns) {
  n += 1;
  const events = [];
  if (turn.state) agent.setState({ ...agent.state, ...turn.state });
  if (turn.user) agent.addMessage({ id: `user-${n}`, role: "user", content: turn.user });
  if (turn.toolResult) {
    const last = [...agent.messages].reverse().find((m) => m.role === "assistant" && m.toolCalls);
    const call = last.toolCalls[last.toolCalls.length - 1];
    agent.addMessage({ id: `tool-${n}`, role: "tool", toolCallId: call.id, content: turn.toolResult.content });
  }
  const parameters = { runId: `run-${n}`, tools: turn.tools ?? [] };
  if (turn.approve !== undefined) {
    parameters.resume = agent.pendingInterrupts.map((i) => ({
      interruptId: i.id,
      status: "resolved",
      payload: { approved: turn.approve },
    }));
  }
  let error = null;
  let result = null;
  try {
    const answer = await agent.runAgent(parameters, { onEvent: ({ event }) => { events.push(event); } });
    result = answer.result ?? null;
  } catch (exc) {
    error = String(exc && exc.message ? exc.message : exc);
  }
  turns.push({
    events,
    error,
    result,
    state: structuredClone(agent.state),
    messages: structuredClone(agent.messages),
    pendingInterrupts: structuredClone(agent.pendingInterrupts ?? []),
  });
}
process.stdout.write(JSON.stringify({ turns }));
