// Server-Sent Events read from a fetch() body. EventSource cannot POST, and the run routes
// take a JSON body, so the frames are parsed here (the subset of the SSE format servers send:
// `event:`, `data:` and `id:` lines, `:` comments, blank-line separators).

/** Yield `{event, data, id}` for each frame of a streamed response body. */
export async function* readSse(body, signal) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  const onAbort = () => reader.cancel().catch(() => {});
  signal?.addEventListener("abort", onAbort, { once: true });
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true }).replace(/\r\n?/g, "\n");
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const frame = parseFrame(buffer.slice(0, end));
        buffer = buffer.slice(end + 2);
        if (frame) yield frame;
      }
    }
    const last = parseFrame(buffer.trim());
    if (last) yield last;
  } finally {
    signal?.removeEventListener("abort", onAbort);
    reader.releaseLock();
  }
}

function parseFrame(text) {
  if (!text) return null;
  let event = "message";
  let id = null;
  const data = [];
  for (const line of text.split("\n")) {
    if (!line || line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "data") data.push(value);
    else if (field === "event") event = value;
    else if (field === "id") id = value;
  }
  if (!data.length) return null;
  return { event, id, data: data.join("\n") };
}
