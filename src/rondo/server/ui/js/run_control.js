// @ts-check
// Runs that outlive the page (issue 21): a run is started with `onDisconnect: "continue"`,
// so a reload does not stop it; the run id and the id of the last frame read are kept in
// sessionStorage (with the lifecycle events already shown), and the reloaded page rejoins
// `…/runs/{runId}/stream?after=<last id>` (the route's `Last-Event-ID`) for the rest. Stop
// cancels the run on the server (`…/runs/{runId}/cancel`); Edit, Retry and Fork from here
// rewind or fork the session (`…/rewind`, `…/fork`).

import { ApiError } from "./api.js";
import { resendable } from "./attachments.js";
import { readSse } from "./sse.js";

const STORE = "rondo.liveRun:";
const SAVE_EVERY_MS = 300;

/**
 * @typedef {{runId: string, lastEventId: string, seen: any[]}} LiveRun
 * @typedef {{app: string, user: string, session: string}} Where
 */

/** One lifecycle event from an SSE frame (an `error` frame becomes `{type: "error"}`). */
function eventOf(frame) {
  try {
    const data = JSON.parse(frame.data);
    if (frame.event === "error" && data && typeof data === "object" && !data.type) return { ...data, type: "error" };
    return data;
  } catch {
    return { type: "error", error: `The server sent a stream frame that is not JSON: ${frame.data.slice(0, 200)}` };
  }
}

export class RunControl {
  /** @param {any} api the page's `Api` */
  constructor(api) {
    this.api = api;
    /** @type {Map<string, LiveRun>} */
    this.live = new Map();
    /** @type {Map<string, Promise<void>>} */
    this.stopping = new Map();
    /** @type {Map<string, number>} */
    this.timers = new Map();
    // A reload or a closed tab: keep what was read, for the next page to rejoin after it.
    window.addEventListener("pagehide", () => {
      for (const key of this.live.keys()) this.save(key);
    });
  }

  /** @param {Where} where */
  path({ app, user, session }, tail = "") {
    return `${this.api.sessionPath(app, user, session)}${tail}`;
  }

  // -- streaming ------------------------------------------------------------------------------

  /** Start a run of the message `parts` (text, files as inline data); yields its lifecycle events. */
  start({ app, user, session, parts, key, signal }) {
    const body = {
      appName: app,
      userId: user,
      sessionId: session,
      newMessage: { role: "user", parts },
      streaming: true,
      onDisconnect: "continue", // a reload rejoins; Stop cancels on the server
      // A message's files are kept as the session's artifacts (the stored message refers to
      // them), and each run gives the model the files of the history from there (issue 22).
      runConfig: { saveInputBlobsAsArtifacts: true },
    };
    this.live.set(key, { runId: "", lastEventId: "", seen: [] });
    return this.follow(key, this.api.fetch("POST", "/run_lifecycle", body, { accept: "text/event-stream", signal }), signal);
  }

  /**
   * Open the rest of a run after a reload: `null` when this server cannot stream it (it
   * ended long ago, or runs on another replica, which keeps no lifecycle events).
   * @param {Where & {key: string, resume: LiveRun}} options
   */
  async rejoin({ key, resume, ...where }) {
    const after = resume.lastEventId ? `&after=${encodeURIComponent(resume.lastEventId)}` : "";
    const url = this.path(where, `/runs/${encodeURIComponent(resume.runId)}/stream?format=lifecycle${after}`);
    const controller = new AbortController();
    try {
      const response = await this.api.fetch("GET", url, undefined, { accept: "text/event-stream", signal: controller.signal });
      this.live.set(key, { ...resume, seen: [...resume.seen] });
      return { controller, open: (/** @type {AbortSignal} */ signal) => this.follow(key, Promise.resolve(response), signal) };
    } catch (error) {
      if (error instanceof ApiError && (error.status === 404 || error.status === 409)) {
        this.forget(key);
        return null;
      }
      throw error;
    }
  }

  /** @param {string} key @param {Promise<Response>} responding @param {AbortSignal} signal */
  async *follow(key, responding, signal) {
    const response = await responding;
    if (!response.body) throw new ApiError(response.status, "The server sent no stream.");
    const run = this.live.get(key) || { runId: "", lastEventId: "", seen: [] };
    this.live.set(key, run);
    for await (const frame of readSse(response.body, signal)) {
      const ev = eventOf(frame);
      if (frame.id) run.lastEventId = frame.id;
      if (!run.runId && ev && ev.run_id) run.runId = ev.run_id;
      run.seen.push(ev);
      this.saveSoon(key);
      yield ev;
    }
  }

  /** The run to rejoin on opening a session: the one this tab was reading, else a run the
   * server still runs (started in another tab); `null` when none. @param {Where & {key: string}} options */
  async resumable({ key, ...where }) {
    try {
      const kept = JSON.parse(sessionStorage.getItem(STORE + key) || "null");
      if (kept && kept.runId) return /** @type {LiveRun} */ (kept);
    } catch {
      // unreadable: ask the server
    }
    try {
      const runs = (await this.api.json("GET", this.path(where, "/runs"))) || [];
      const running = runs.find((run) => run.status === "running");
      return running ? { runId: running.runId, lastEventId: "", seen: [] } : null;
    } catch {
      return null;
    }
  }

  saveSoon(key) {
    if (this.timers.has(key)) return;
    this.timers.set(key, window.setTimeout(() => {
      this.timers.delete(key);
      this.save(key);
    }, SAVE_EVERY_MS));
  }

  save(key) {
    const run = this.live.get(key);
    if (!run || !run.runId) return;
    try {
      sessionStorage.setItem(STORE + key, JSON.stringify(run));
    } catch {
      // storage full: a reload then replays the whole run from the server
      sessionStorage.setItem(STORE + key, JSON.stringify({ ...run, lastEventId: "", seen: [] }));
    }
  }

  /** The run ended (or cannot be rejoined): nothing to resume. */
  forget(key) {
    const timer = this.timers.get(key);
    if (timer !== undefined) window.clearTimeout(timer);
    this.timers.delete(key);
    this.live.delete(key);
    sessionStorage.removeItem(STORE + key);
  }

  // -- stop -----------------------------------------------------------------------------------

  /** Cancel the session's run on the server (the stream was aborted already). @param {Where & {key: string}} options */
  stop({ key, ...where }) {
    const runId = this.live.get(key)?.runId;
    const done = (async () => {
      let id = runId;
      if (!id) {
        const runs = (await this.api.json("GET", this.path(where, "/runs")).catch(() => [])) || [];
        id = runs.find((run) => run.status === "running")?.runId;
      }
      if (!id) return;
      try {
        await this.api.json("POST", this.path(where, `/runs/${encodeURIComponent(id)}/cancel`));
      } catch (error) {
        if (!(error instanceof ApiError && error.status === 409)) throw error; // 409: it had ended
      }
    })().finally(() => {
      this.forget(key);
      this.stopping.delete(key);
    });
    this.stopping.set(key, done);
    return done;
  }

  /** Resolves once a stop of the session's run has been carried out. */
  async idle(key) {
    await this.stopping.get(key)?.catch(() => {});
  }

  // -- rewind and fork ------------------------------------------------------------------------

  /** @param {Where} where @param {string} invocationId */
  rewind(where, invocationId) {
    return this.api.json("POST", this.path(where, "/rewind"), { invocationId });
  }

  /** @param {Where} where @param {string | undefined} invocationId */
  fork(where, invocationId) {
    return this.api.json("POST", this.path(where, "/fork"), invocationId ? { invocationId } : {});
  }
}

/**
 * The buttons under a message: "Edit" on the user's (rewind to before it, then send the
 * edited text), "Retry" and "Fork from here" on an answer (rewind to before the message it
 * answers and send that again; a new session holding the history up to this answer).
 * `app` is the page's App (main.js); the invocation ids come from the conversation items.
 */
export class MessageActions {
  constructor(app) {
    this.app = app;
  }

  /** @returns {{label: string, run: () => void}[]} */
  for(item) {
    if (item.kind === "user") return [{ label: "Edit", run: () => this.edit(item) }];
    if (item.kind === "agent") {
      return [
        { label: "Retry", run: () => this.retry(item) },
        { label: "Fork from here", run: () => this.forkFrom(item) },
      ];
    }
    return [];
  }

  where() {
    const app = this.app;
    return { app: app.app, user: app.user, session: app.sessionId };
  }

  busy() {
    const app = this.app;
    if (!app.sessionId || app.live.has(app.key())) {
      app.toasts.error("Wait until the run ends (or stop it) first.", "The agent is still answering");
      return true;
    }
    return false;
  }

  /** The conversation items around `item`: the user message it answers, the next one. */
  neighbours(item) {
    const items = this.app.conversation?.items || [];
    const at = items.indexOf(item);
    const before = items.slice(0, at).reverse().find((i) => i.kind === "user" && i.invocationId);
    const after = items.slice(at + 1).find((i) => i.kind === "user" && i.invocationId);
    return { before, after };
  }

  /** Rewind to before `invocationId`, then send `text` and `files` (a message's attachments) again. */
  async resend(invocationId, text, files = []) {
    const app = this.app;
    let again;
    try {
      again = await resendable(files, (name, version) => app.api.artifact(app.app, app.user, app.sessionId, name, version));
    } catch (error) {
      app.toasts.error(error.message, "Could not read the message's files");
      return;
    }
    try {
      await app.runs.rewind(this.where(), invocationId);
    } catch (error) {
      app.toasts.error(error.message, "Could not rewind the session");
      return;
    }
    app.conversation = null;
    await app.openSession(app.sessionId);
    await app.send(text, again);
  }

  async edit(item) {
    if (this.busy() || !item.invocationId) return;
    const text = window.prompt("Edit your message; the conversation goes back to before it.", item.text);
    if (text === null || (!text.trim() && !item.files?.length)) return;
    await this.resend(item.invocationId, text.trim(), item.files);
  }

  async retry(item) {
    const { before } = this.neighbours(item);
    if (this.busy() || !before) return;
    await this.resend(before.invocationId, before.text, before.files);
  }

  async forkFrom(item) {
    if (this.busy()) return;
    const { after } = this.neighbours(item);
    const app = this.app;
    try {
      const session = await app.runs.fork(this.where(), after?.invocationId);
      app.refreshSessions();
      app.go(app.app, session.id);
    } catch (error) {
      app.toasts.error(error.message, "Could not fork the session");
    }
  }
}
