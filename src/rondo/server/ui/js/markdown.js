// A small Markdown subset for model answers, built as DOM nodes (never innerHTML, so a model
// cannot inject markup): paragraphs, headings, lists, quotes, fenced code, inline code, bold,
// italics and http(s) links. Anything else stays literal text.

import { h } from "./dom.js";

/** Render `text` into a fragment. */
export function renderMarkdown(text) {
  const fragment = document.createDocumentFragment();
  const lines = String(text).replace(/\r\n?/g, "\n").split("\n");
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    const fence = line.match(/^\s*```\s*([\w+-]*)\s*$/);
    if (fence) {
      const code = [];
      i += 1;
      while (i < lines.length && !/^\s*```\s*$/.test(lines[i])) code.push(lines[i++]);
      i += 1; // the closing fence (or the end of a still-streaming block)
      fragment.append(h("pre", { class: "md-code", dataset: { lang: fence[1] || "" } }, h("code", {}, code.join("\n"))));
      continue;
    }
    const heading = line.match(/^(#{1,6})\s+(.*)$/);
    if (heading) {
      fragment.append(h(`h${Math.min(heading[1].length + 2, 6)}`, { class: "md-h" }, inline(heading[2])));
      i += 1;
      continue;
    }
    if (/^\s*([-*+]|\d+[.)])\s+/.test(line)) {
      const ordered = /^\s*\d/.test(line);
      const list = h(ordered ? "ol" : "ul", { class: "md-list" });
      while (i < lines.length && /^\s*([-*+]|\d+[.)])\s+/.test(lines[i])) {
        list.append(h("li", {}, inline(lines[i].replace(/^\s*([-*+]|\d+[.)])\s+/, ""))));
        i += 1;
      }
      fragment.append(list);
      continue;
    }
    if (/^>\s?/.test(line)) {
      const quoted = [];
      while (i < lines.length && /^>\s?/.test(lines[i])) quoted.push(lines[i++].replace(/^>\s?/, ""));
      fragment.append(h("blockquote", { class: "md-quote" }, inline(quoted.join("\n"))));
      continue;
    }
    if (!line.trim()) {
      i += 1;
      continue;
    }
    const para = [];
    while (i < lines.length && lines[i].trim() && !isBlockStart(lines[i])) para.push(lines[i++]);
    fragment.append(h("p", {}, inline(para.join("\n"))));
  }
  return fragment;
}

function isBlockStart(line) {
  return /^\s*```/.test(line) || /^#{1,6}\s/.test(line) || /^\s*([-*+]|\d+[.)])\s+/.test(line) || /^>/.test(line);
}

const INLINE = /(`[^`\n]+`)|(\*\*[^*\n]+\*\*)|(\*[^*\s][^*\n]*\*|_[^_\s][^_\n]*_)|(\[[^\]\n]+\]\([^)\s]+\))|(\n)/g;

function inline(text) {
  const nodes = [];
  let last = 0;
  for (const match of text.matchAll(INLINE)) {
    if (match.index > last) nodes.push(text.slice(last, match.index));
    const [token] = match;
    if (match[1]) nodes.push(h("code", { class: "md-inline" }, token.slice(1, -1)));
    else if (match[2]) nodes.push(h("strong", {}, token.slice(2, -2)));
    else if (match[3]) nodes.push(h("em", {}, token.slice(1, -1)));
    else if (match[4]) nodes.push(link(token));
    else nodes.push(h("br"));
    last = match.index + token.length;
  }
  if (last < text.length) nodes.push(text.slice(last));
  return nodes;
}

function link(token) {
  const [, label, href] = token.match(/^\[([^\]]+)\]\(([^)]+)\)$/);
  if (!/^(https?:|mailto:)/i.test(href)) return token;
  return h("a", { href, target: "_blank", rel: "noopener noreferrer" }, label);
}
