// rondo's web UI: wires the views to the API and keeps the open app and session in the URL
// (`#/apps/{app}/sessions/{id}`), so a reload or a shared link opens the same conversation,
// rebuilt from the session's stored records.

import { Api, ApiError } from "./api.js";
import { Attachments, inlineParts, sayNotSent, storedImages } from "./attachments.js";
import { ChatView } from "./chat_view.js";
import { Composer } from "./composer.js";
import { LiveMic } from "./live_mic.js";
import { Conversation } from "./conversation.js";
import { askCredentials, Toasts } from "./dialogs.js";
import { h, replace } from "./dom.js";
import { adoptRecordedDurations } from "./durations.js";
import { addEvalsTab, EvalView } from "./eval_view.js";
import { Header } from "./header.js";
import { Inspector } from "./inspector.js";
import { childSessionIds } from "./nested_sessions.js";
import { lifecycleFromRecords } from "./records_lifecycle.js";
import { MessageActions, RunControl } from "./run_control.js";
import { SessionsView, titles } from "./sessions_view.js";

const USER_KEY = "rondo.user";
// Sessions whose titles are read from their records in one go (the newest ones).
const TITLE_FETCHES = 30;

/** `#/apps/{app}` or `#/apps/{app}/sessions/{id}` → {app, session}. */
function parseRoute(hash) {
  const parts = hash.replace(/^#\/?/, "").split("/").filter(Boolean).map(decodeURIComponent);
  if (parts[0] !== "apps" || !parts[1]) return { app: null, session: null };
  return { app: parts[1], session: parts[2] === "sessions" && parts[3] ? parts[3] : null };
}

function routeOf(app, session) {
  const base = `#/apps/${encodeURIComponent(app)}`;
  return session ? `${base}/sessions/${encodeURIComponent(session)}` : base;
}

class App {
  constructor(root) {
    this.user = localStorage.getItem(USER_KEY) || "user";
    this.api = new Api({ askToken: (message) => this.askToken(message) });
    this.runs = new RunControl(this.api); // rejoin after a reload, Stop, rewind and fork
    const actions = new MessageActions(this);
    this.apps = [];
    this.app = null;
    this.sessionId = null;
    this.conversation = null;
    this.live = new Map(); // session key -> {conversation, controller} of a streaming run
    // The session being created or opened: a message sent meanwhile waits for it, so it never
    // lands in the conversation (or the session) that was on screen before.
    /** @type {Promise<void>} */
    this.opening = Promise.resolve();
    this.toasts = new Toasts();
    this.header = new Header({
      onApp: (name) => this.go(name, null),
      onUser: (user) => this.changeUser(user),
      onSignOut: () => this.signOut(),
      onToggleInspector: () => this.toggleInspector(),
    });
    this.sessions = new SessionsView({
      onNew: () => this.newSession(),
      onOpen: (id) => this.go(this.app, id),
      onDelete: (id) => this.deleteSession(id),
      titleKey: (id) => this.key(id),
    });
    this.sessionIds = []; // the app's sessions: a tool card links to the ones its call ran
    this.chat = new ChatView({
      onDecide: (card, decision, note) => this.decide(card, decision, note),
      actions: (item) => actions.for(item),
      children: (item) => childSessionIds(this.sessionIds, this.sessionId, item.callId).map((id) => ({ id, href: routeOf(this.app, id) })),
      loadFile: storedImages((name, version) => this.api.artifact(this.app, this.user, this.sessionId, name, version)),
    });
    this.mic = new LiveMic({
      target: () => (this.sessionId ? { app: this.app, user: this.user, session: this.sessionId, token: this.api.token } : null),
      onEvent: (ev) => {
        this.conversation?.apply(ev);
        this.recordLifecycle(this.key(), ev);
      },
      onProblem: (text) => this.toasts.error(text, "Live call"),
    });
    this.attachments = new Attachments(); // files in the composer (attachments.js)
    this.composer = new Composer({ onSend: (text, files) => this.send(text, files), onStop: () => this.stop(), extra: [this.mic.el], attachments: this.attachments });
    this.composer.setEnabled(false); // until route() shows an app
    this.inspector = new Inspector({ loadArtifact: (name, version) => this.loadArtifact(name, version), saveState: (delta) => this.saveState(delta) });
    addEvalsTab(this.inspector, new EvalView({ api: this.api, target: () => (this.app ? { app: this.app, user: this.user, session: this.sessionId } : null), onError: (text, title) => this.toasts.error(text, title) }));
    this.chatTitle = h("div", { class: "chat-title" });
    const chat = h("main", { class: "chat" }, this.chatTitle, this.chat.el, this.composer.el);
    this.attachments.listen(chat, this.composer.input); // a file dropped on the chat, or pasted
    this.layout = h("div", { class: "layout" }, h("aside", { class: "sidebar" }, this.sessions.el), chat, this.inspector.el);
    this.layout.classList.toggle("no-inspector", localStorage.getItem("rondo.inspector") === "hidden");
    root.replaceChildren(this.header.el, this.layout, this.toasts.el);
    this.header.showUser(this.user);
    this.header.showAuth(this.api.hasToken);
    window.addEventListener("hashchange", () => this.route());
  }

  /** A 401 asks for the token and the user id it belongs to (the paths must name that user). */
  async askToken(message) {
    const { token, user } = await askCredentials(message, this.user);
    if (user !== this.user) this.changeUser(user);
    this.header.showAuth(true);
    return token;
  }

  key(session = this.sessionId) {
    return `${this.app}/${this.user}/${session}`;
  }

  async start() {
    this.api.version().then((info) => this.header.showVersion(info), () => {});
    try {
      this.apps = (await this.api.listApps()) || [];
      this.header.showAuth(this.api.hasToken);
    } catch (error) {
      this.showFatal(error);
      return;
    }
    await this.route();
  }

  /** Show `app`/`session` and record it in the URL; resolves once it is on screen. */
  go(app, session) {
    const target = app ? routeOf(app, session) : "#/";
    // pushState fires no hashchange: the route is shown here, once, and can be awaited.
    if (location.hash !== target) history.pushState(null, "", target);
    return this.route();
  }

  // -- routing -------------------------------------------------------------------------------

  async route() {
    let { app, session } = parseRoute(location.hash);
    if (!app && this.apps.length === 1) {
      location.replace(routeOf(this.apps[0], null));
      return;
    }
    this.header.showApps(this.apps, app);
    this.composer.setEnabled(Boolean(app) && this.apps.includes(app));
    if (!app) return this.showAppChooser();
    if (!this.apps.includes(app)) {
      this.showMissing(`There is no app named “${app}” here.`, this.apps.length ? `Pick one of: ${this.apps.join(", ")}.` : "");
      return;
    }
    const appChanged = app !== this.app;
    this.app = app;
    if (session && session === this.sessionId && this.conversation) {
      this.sessions.setActive(session); // already on screen (e.g. just created by a send)
      return;
    }
    this.sessionId = session;
    if (appChanged || !session) this.refreshSessions();
    else this.sessions.setActive(session);
    if (session) {
      this.opening = this.openSession(session);
      await this.opening;
    }
    else this.showDraft();
  }

  showAppChooser() {
    this.app = null;
    this.sessionId = null;
    this.sessions.show([], null);
    this.setChatTitle("Choose an app");
    this.inspector.clear("Choose an app first.");
    const cards = this.apps.map((name) => h("a", { class: "app-card", href: routeOf(name, null) }, h("strong", {}, name), h("span", {}, "Open")));
    this.chat.show(null, this.apps.length ? [h("h2", {}, "Which agent?"), h("div", { class: "app-cards" }, cards)] : noApps());
  }

  showMissing(title, text) {
    this.conversation = null;
    this.setChatTitle("Not found");
    this.chat.show(null, [h("h2", {}, title), h("p", {}, text)]);
    this.inspector.clear(title);
  }

  showDraft() {
    this.conversation = new Conversation();
    this.setChatTitle("New session");
    this.chat.show(this.conversation, [h("h2", {}, `Talk to ${this.app}`), h("p", {}, "Type a message below and press Enter. A new session starts with your first message.")]);
    this.inspector.clear("The session starts with your first message.");
    this.composer.setRunning(false);
    this.composer.setPlaceholder(`Message ${this.app}…`);
    this.composer.focus();
  }

  async openSession(id) {
    const key = this.key(id);
    const live = this.live.get(key);
    this.setChatTitle(titles.get(key) || `Session ${id}`);
    this.composer.setPlaceholder(`Message ${this.app}…`);
    if (live) {
      this.conversation = live.conversation;
      this.chat.show(this.conversation);
      this.composer.setRunning(true);
      return;
    }
    this.composer.setRunning(false);
    try {
      const [session, pending, usage] = await Promise.all([this.api.getSession(this.app, this.user, id), this.loadPending(id), this.loadUsage(id)]);
      if (this.key(id) !== this.key()) return; // the user moved on meanwhile
      const where = { key, app: this.app, user: this.user, session: id };
      const resume = await this.runs.resumable(where);
      const rejoined = resume && (await this.runs.rejoin({ ...where, resume }));
      if (this.key(id) !== this.key()) return;
      // A run still going (a reload mid-answer): the records before it, what this page had
      // read of it, then the rest from the server.
      const shown = rejoined ? session.events.filter((e) => e.runId !== resume.runId || e.author === "user") : session.events;
      this.conversation = Conversation.fromRecords(shown, pending, usage);
      if (rejoined) {
        for (const ev of resume.seen) this.conversation.apply(ev);
        this.stream(this.conversation, id, rejoined.open);
      }
      const first = this.conversation.items.find((item) => item.kind === "user");
      if (first) {
        titles.set(key, first.text);
        this.setChatTitle(titles.get(key));
      }
      this.chat.show(this.conversation, [h("h2", {}, "An empty session"), h("p", {}, "Type a message below and press Enter.")]);
      this.inspector.showSession(session, `rondo.timeline:${key}`, rejoined ? null : timelineOf(session, pending, usage));
      this.refreshArtifacts();
      this.refreshTrace();
      this.composer.focus();
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) {
        this.showMissing("This session does not exist.", `No session ${id} of user “${this.user}” in ${this.app}: it was deleted, or it belongs to another user id.`);
      } else {
        this.showMissing("The session could not be opened.", error.message);
      }
    }
  }

  async loadPending(id) {
    try {
      return (await this.api.pending(this.app, this.user, id)) || [];
    } catch (error) {
      this.toasts.error(error.message, "Could not list the pending calls");
      return [];
    }
  }

  /** Each run's price for the footers; without it a rebuilt run shows its tokens only. */
  async loadUsage(id) {
    try {
      return (await this.api.usage(this.app, this.user, id)) || [];
    } catch {
      return [];
    }
  }

  setChatTitle(text) {
    const id = this.sessionId && text !== `Session ${this.sessionId}` ? this.sessionId : "";
    replace(this.chatTitle, h("span", { class: "chat-title-text" }, text), id ? h("span", { class: "chat-title-id", title: "Session id" }, id) : null);
    document.title = this.app ? `${text} · ${this.app} · rondo` : "rondo";
  }

  // -- sessions ------------------------------------------------------------------------------

  async refreshSessions() {
    if (!this.app) return;
    const app = this.app;
    try {
      const sessions = (await this.api.listSessions(app, this.user)) || [];
      if (app === this.app) {
        this.sessions.show(sessions, this.sessionId);
        this.sessionIds = sessions.map((s) => s.id);
        this.chat.refreshToolCards();
      }
      this.fetchTitles(app, sessions);
    } catch (error) {
      this.toasts.error(error.message, "Could not list the sessions");
    }
  }

  /**
   * A session's title is its first message. Sessions this browser did not start (another
   * browser, the CLI, a cleared storage) get theirs from their records, newest first.
   */
  async fetchTitles(app, sessions) {
    const user = this.user;
    const newest = [...sessions].sort((a, b) => (b.lastUpdateTime || 0) - (a.lastUpdateTime || 0));
    const untitled = newest.filter((s) => !titles.get(`${app}/${user}/${s.id}`)).slice(0, TITLE_FETCHES);
    const found = await Promise.all(
      untitled.map(async (s) => {
        try {
          const session = await this.api.getSession(app, user, s.id);
          const first = (session.events || []).find((e) => e.author === "user" && (e.content?.parts || []).some((p) => p.text));
          const text = first ? first.content.parts.filter((p) => p.text && !p.thought).map((p) => p.text).join("") : "";
          if (text) titles.set(`${app}/${user}/${s.id}`, text);
          return Boolean(text);
        } catch {
          return false; // deleted meanwhile, or unreachable: it keeps its id as its title
        }
      }),
    );
    if (found.some(Boolean) && app === this.app && user === this.user) this.sessions.render();
  }

  newSession() {
    if (!this.app) return;
    const app = this.app;
    this.opening = (async () => {
      try {
        const session = await this.api.createSession(app, this.user);
        if (app !== this.app) return; // the user moved to another app meanwhile
        await this.go(app, session.id);
        this.refreshSessions();
      } catch (error) {
        this.toasts.error(error.message, "Could not create a session");
      }
    })();
  }

  async deleteSession(id) {
    try {
      await this.api.deleteSession(this.app, this.user, id);
    } catch (error) {
      this.toasts.error(error.message, "Could not delete the session");
      return;
    }
    titles.remove(this.key(id));
    if (id === this.sessionId) this.go(this.app, null);
    this.refreshSessions();
  }

  changeUser(user) {
    this.user = user;
    localStorage.setItem(USER_KEY, user);
    this.header.showUser(user);
    this.sessionId = null;
    this.conversation = null;
    if (this.app) {
      this.refreshSessions();
      this.go(this.app, null);
    }
  }

  signOut() {
    this.api.forgetToken();
    location.reload();
  }

  toggleInspector() {
    if (matchMedia("(max-width: 1100px)").matches) {
      this.layout.classList.toggle("inspector-open"); // a drawer, not a remembered layout
      return;
    }
    const hidden = this.layout.classList.toggle("no-inspector");
    localStorage.setItem("rondo.inspector", hidden ? "hidden" : "shown");
  }

  // -- runs ----------------------------------------------------------------------------------

  /** Send a message of `text` and `files` (attachments.js) in the open session, or a new one. */
  async send(text, files = []) {
    await this.opening;
    if (!this.app || this.live.has(this.key())) return;
    const conversation = this.conversation || new Conversation();
    conversation.addUser(text, "", files);
    if (!this.sessionId) {
      try {
        const session = await this.api.createSession(this.app, this.user);
        this.sessionId = session.id;
        this.conversation = conversation;
        location.hash = routeOf(this.app, session.id); // route() sees it is already shown
        this.inspector.showSession(session, `rondo.timeline:${this.key()}`);
        this.refreshSessions();
      } catch (error) {
        conversation.addError(`Could not create a session: ${error.message}`);
        return;
      }
    }
    titles.set(this.key(), text || files.map((f) => f.name).join(", "));
    this.setChatTitle(titles.get(this.key()));
    const { app, user, sessionId: session } = this;
    const key = this.key(session);
    let parts;
    try {
      parts = [...(text ? [{ text }] : []), ...(await inlineParts(files))];
    } catch (error) {
      conversation.addError(`Not sent: ${error.message}`);
      return;
    }
    await this.runs.idle(key); // a Stop still being carried out
    await this.stream(conversation, session, sayNotSent((signal) => this.runs.start({ app, user, session, parts, key, signal })));
  }

  async decide(card, decision, note) {
    const body = { decision };
    if (card.pending.kind === "long_running" && decision === "approve") {
      try {
        body.result = JSON.parse(note);
      } catch {
        // A remote agent's question (A2A input-required) is answered in words, as
        // `PendingCall.respond("…")` does; any other result must be JSON.
        if (card.name === "a2a_input_required" && note.trim()) body.result = { text: note.trim() };
      }
      if (body.result === undefined) {
        this.toasts.error(`Approving ${card.name} delivers its result: type it as JSON first, e.g. {"status": "done"}.`, "Not sent");
        return;
      }
    } else if (note && decision === "reject") body.comment = note;
    else if (note && decision === "skip") body.observation = note;
    const { app, user, sessionId: session } = this;
    const callId = card.pending.callId;
    const conversation = this.conversation;
    if (this.mic.isLive(app, user, session)) {
      // The call waits inside the live call: the decision goes there, the tool's result
      // comes back over the call's WebSocket.
      try {
        await this.api.decideLive({ app, user, session, callId, decision: body });
        conversation.settle(card, decision, body);
      } catch (error) {
        this.toasts.error(String(error.message || error), "Not sent");
      }
      return;
    }
    const accepted = await this.stream(conversation, session, (signal) => this.api.decide({ app, user, session, callId, decision: body, signal }));
    if (accepted) conversation.settle(card, decision, body);
  }

  /**
   * Stream one run into `conversation`; the inspector and the session list follow it.
   * Resolves to whether the server accepted the run (it sent at least one event).
   */
  async stream(conversation, session, open) {
    const key = this.key(session);
    if (this.live.has(key)) return false;
    const controller = new AbortController();
    this.live.set(key, { conversation, controller });
    this.composer.setRunning(true);
    let ended = false;
    let accepted = false;
    try {
      for await (const ev of open(controller.signal)) {
        accepted = true;
        conversation.apply(ev);
        this.recordLifecycle(key, ev);
        if (ev.type === "run_end" || ev.type === "error") ended = true;
      }
      if (ended) this.runs.forget(key);
      if (controller.signal.aborted) conversation.interrupt("Stopped. The run was cancelled.");
      else if (!ended) conversation.interrupt("The stream closed before the run ended (the server stopped, or the connection dropped).");
    } catch (error) {
      conversation.interrupt(error.name === "AbortError" ? "Stopped. The run was cancelled." : error.message);
    } finally {
      conversation.running = false;
      this.live.delete(key);
      if (key === this.key()) {
        this.composer.setRunning(false);
        this.refreshDetails();
      }
      this.refreshSessions();
    }
    return accepted;
  }

  stop() {
    const key = this.key();
    this.live.get(key)?.controller.abort();
    // The run outlives its stream: cancel it on the server too.
    this.runs.stop({ key, app: this.app, user: this.user, session: this.sessionId }).catch((error) => this.toasts.error(error.message, "Could not stop the run"));
  }

  recordLifecycle(key, ev) {
    // Another session's run: its timeline is rebuilt from its records when it is opened.
    if (key === this.key()) this.inspector.pushLifecycle(ev);
  }

  async refreshDetails() {
    if (!this.sessionId) return;
    const key = this.key();
    try {
      const [session, pending] = await Promise.all([this.api.getSession(this.app, this.user, this.sessionId), this.loadPending(this.sessionId)]);
      if (key === this.key()) {
        const rebuilt = this.live.has(key) ? null : timelineOf(session, pending);
        this.inspector.showSession(session, `rondo.timeline:${key}`, rebuilt);
        if (this.conversation && !this.live.has(key)) adoptRecordedDurations(this.conversation, session.events);
      }
    } catch (error) {
      this.toasts.error(error.message, "Could not refresh the session");
    }
    this.refreshArtifacts();
    this.refreshTrace();
  }

  /** The State tab's edit: a state delta through the PATCH session route, then the new state. */
  async saveState(delta) {
    const key = this.key();
    const session = await this.api.updateSession(this.app, this.user, this.sessionId, delta);
    if (key === this.key()) this.inspector.showSession(session, `rondo.timeline:${key}`);
  }

  async refreshTrace() {
    const key = this.key();
    try {
      const spans = (await this.api.sessionTrace(this.app, this.sessionId)) || [];
      if (key === this.key()) this.inspector.showTrace(spans);
    } catch {
      // An older server without the trace routes: the Trace tab stays empty.
    }
  }

  async refreshArtifacts() {
    const key = this.key();
    try {
      const names = (await this.api.listArtifacts(this.app, this.user, this.sessionId)) || [];
      if (key === this.key()) this.inspector.showArtifacts(names);
    } catch (error) {
      this.toasts.error(error.message, "Could not list the artifacts");
    }
  }

  async loadArtifact(name, version) {
    const versions = (await this.api.artifactVersions(this.app, this.user, this.sessionId, name)) || [];
    const part = await this.api.artifact(this.app, this.user, this.sessionId, name, version);
    return { versions: versions.length ? versions : [version ?? 0], part };
  }

  showFatal(error) {
    this.setChatTitle("Not connected");
    this.chat.show(null, [h("h2", {}, "The server could not be reached"), h("p", {}, error.message), h("button", { class: "btn", type: "button", onClick: () => location.reload() }, "Try again")]);
  }
}

/** A session's timeline: the lifecycle events rebuilt from its stored records. */
function timelineOf(session, pending, usage) {
  return lifecycleFromRecords(session.events, pending, usage).filter((ev) => ev.type !== "user_message");
}

function noApps() {
  return [
    h("h2", {}, "No apps found"),
    h("p", {}, "AGENTS_DIR holds one folder per app, each with an agent.py (or __init__.py) that defines root_agent."),
  ];
}

const app = new App(document.getElementById("app"));
window.rondo = app; // for the browser console: rondo.conversation, rondo.api …
app.start();
