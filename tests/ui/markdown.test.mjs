// The web UI's Markdown subset (src/rondo/server/ui/js/markdown.js): DOM nodes, never markup.
import assert from "node:assert/strict";
import { before, test } from "node:test";

import { JSDOM } from "jsdom";

let renderMarkdown;

before(async () => {
  const { window } = new JSDOM("<!doctype html><body></body>");
  globalThis.document = window.document;
  globalThis.Node = window.Node;
  globalThis.HTMLElement = window.HTMLElement;
  ({ renderMarkdown } = await import("../../src/rondo/server/ui/js/markdown.js"));
});

function html(text) {
  const box = document.createElement("div");
  box.append(renderMarkdown(text));
  return box.innerHTML;
}

test("paragraphs, headings, lists, quotes and fenced code", () => {
  assert.equal(html("# Title\n\nsome *em* and **strong**"), '<h3 class="md-h">Title</h3><p>some <em>em</em> and <strong>strong</strong></p>');
  assert.equal(html("- a\n- b"), '<ul class="md-list"><li>a</li><li>b</li></ul>');
  assert.equal(html("1. a\n2. b"), '<ol class="md-list"><li>a</li><li>b</li></ol>');
  assert.equal(html("> quoted"), '<blockquote class="md-quote">quoted</blockquote>');
  assert.equal(html("```py\nx = 1\n```"), '<pre class="md-code" data-lang="py"><code>x = 1</code></pre>');
});

test("markup in a model's answer stays text", () => {
  const out = html('<img src=x onerror="alert(1)"> `<b>`');
  assert.ok(!out.includes("<img"), out);
  assert.ok(out.includes("&lt;img"), out);
  assert.ok(out.includes('<code class="md-inline">&lt;b&gt;</code>'), out);
});

test("only http(s) and mailto links become links", () => {
  assert.equal(
    html("[docs](https://example.org)"),
    '<p><a href="https://example.org" target="_blank" rel="noopener noreferrer">docs</a></p>',
  );
  assert.equal(html("[x](javascript:alert(1))"), "<p>[x](javascript:alert(1))</p>");
});

test("an unclosed fence (a streaming answer) renders what arrived", () => {
  assert.equal(html("```\npartial"), '<pre class="md-code" data-lang=""><code>partial</code></pre>');
});
