// A tool call that ran an agent in a session of its own (an AgentTool, a Harness `task` or
// `multitask`, SPEC H4) links from its card to that child session. The store names a child
// session after its parent and the call: `<session id>~<call id>`, and `~<call id>.<index>`
// for a multitask's tasks (rondo.sessions.base.nested_session_id), so the card finds its
// children among the app's sessions. A call id too long for that scheme (the store then uses a
// digest) gets no link.

import { h, icon } from "./dom.js";

const UNSAFE = /[^A-Za-z0-9._~:@-]/g;

/** The ids among `sessionIds` of the sessions the call `callId` of session `parentId` ran. */
export function childSessionIds(sessionIds, parentId, callId) {
  if (!parentId || !callId) return [];
  const base = `${parentId}~${String(callId).replace(UNSAFE, "_")}`;
  const indexed = new RegExp(`^${base.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}\\.\\d+$`);
  return sessionIds.filter((id) => id === base || indexed.test(id)).sort();
}

/** The card section linking to `children` ([{id, href}]), or null when there are none. */
export function childSessionsSection(children) {
  if (!children.length) return null;
  const links = children.map(({ id, href }) =>
    h("a", { class: "tool-child-link", href, title: `Open the sub-agent's session ${id}` }, icon("chevron", 13), children.length > 1 ? id.slice(id.lastIndexOf("~") + 1) : "Open the sub-agent's session"),
  );
  return h("div", { class: "tool-section tool-children" }, h("div", { class: "tool-section-title" }, children.length > 1 ? `Sub-agent sessions · ${children.length}` : "Sub-agent session"), h("div", { class: "tool-child-links" }, links));
}
