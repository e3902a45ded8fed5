// The web UI's SSE reader (src/rondo/server/ui/js/sse.js) against frames as servers send them.
import assert from "node:assert/strict";
import { test } from "node:test";

import { readSse } from "../../src/rondo/server/ui/js/sse.js";

/** A response body that delivers `chunks` one read at a time. */
function body(chunks) {
  const encoder = new TextEncoder();
  return new ReadableStream({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(encoder.encode(chunk));
      controller.close();
    },
  });
}

async function frames(chunks) {
  const out = [];
  for await (const frame of readSse(body(chunks))) out.push(frame);
  return out;
}

test("frames split across reads are joined, ids and event names kept", async () => {
  const got = await frames(['id: 1\nevent: run_start\nda', 'ta: {"a":1}\n\nid: 2\ndata: x\n', "\n"]);
  assert.deepEqual(got, [
    { event: "run_start", id: "1", data: '{"a":1}' },
    { event: "message", id: "2", data: "x" },
  ]);
});

test("CRLF line ends, comments and multi-line data", async () => {
  const got = await frames([": keep-alive\r\n\r\ndata: one\r\ndata: two\r\n\r\n"]);
  assert.deepEqual(got, [{ event: "message", id: null, data: "one\ntwo" }]);
});

test("a frame without data is skipped; a last frame without a blank line still arrives", async () => {
  const got = await frames(["event: ping\n\n", "data: last"]);
  assert.deepEqual(got, [{ event: "message", id: null, data: "last" }]);
});

test("only one leading space of a value is dropped; a field without a colon is empty", async () => {
  const got = await frames(["data:  two spaces\ndata\n\n"]);
  assert.deepEqual(got, [{ event: "message", id: null, data: " two spaces\n" }]);
});
