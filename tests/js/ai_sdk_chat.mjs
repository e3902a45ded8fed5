// Drives rondo's /ai-sdk/APP with the AI SDK's own chat (AbstractChat + DefaultChatTransport,
// what useChat runs), turn by turn, and prints the messages the chat holds after each turn.
// Usage: node ai_sdk_chat.mjs URL SCENARIO_JSON
// SCENARIO_JSON: {"id", "headers", "tools", "turns": [{"user"?: text, "files"?: [...],
//                 "approve"?: bool, "toolOutput"?: value}]}
import {
  AbstractChat,
  DefaultChatTransport,
  lastAssistantMessageIsCompleteWithApprovalResponses,
} from "ai";

class MemoryState {
  constructor() {
    this.status = "ready";
    this.error = undefined;
    this.messages = [];
  }
  pushMessage(message) { this.messages = [...this.messages, message]; }
  popMessage() { this.messages = this.messages.slice(0, -1); }
  replaceMessage(index, message) {
    this.messages = [...this.messages.slice(0, index), message, ...this.messages.slice(index + 1)];
  }
  snapshot(thing) { return structuredClone(thing); }
}

class Chat extends AbstractChat {
  constructor(init) { super({ ...init, state: new MemoryState() }); }
}

const [url, scenarioText] = process.argv.slice(2);
const scenario = JSON.parse(scenarioText);
const errors = [];
const data = [];
const chat = new Chat({
  id: scenario.id,
  transport: new DefaultChatTransport({
    api: url,
    headers: scenario.headers ?? {},
    body: scenario.tools ? { tools: scenario.tools } : undefined,
  }),
  onError: (error) => errors.push(String(error.message ?? error)),
  onData: (part) => data.push(part),
  sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
});

async function settled() {
  while (chat.status === "submitted" || chat.status === "streaming") {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const turns = [];
for (const turn of scenario.turns) {
  if (turn.user !== undefined || turn.files) {
    await chat.sendMessage(turn.files ? { text: turn.user ?? "", files: turn.files } : { text: turn.user });
  } else if (turn.approve !== undefined) {
    const last = chat.messages[chat.messages.length - 1];
    for (const part of last.parts) {
      if (part.state === "approval-requested") {
        await chat.addToolApprovalResponse({ id: part.approval.id, approved: turn.approve });
      }
    }
  } else if (turn.toolOutput !== undefined) {
    const last = chat.messages[chat.messages.length - 1];
    const part = last.parts.find((p) => p.state === "input-available");
    await chat.addToolOutput({ tool: part.toolName, toolCallId: part.toolCallId, output: turn.toolOutput });
    await chat.sendMessage();
  }
  await settled();
  turns.push({ status: chat.status, errors: [...errors], messages: structuredClone(chat.messages) });
}
process.stdout.write(JSON.stringify({ turns, data }));
