// The UI's only way to the server: the public routes any client uses (ADK's REST surface plus
// rondo's /run_lifecycle and pending-call routes). Errors become ApiError with the server's
// `detail` as a readable message; a 401 asks for a bearer token once and retries.

import { readSse } from "./sse.js";

const TOKEN_KEY = "rondo.token";

/**
 * A `JSON.parse` reviver: span and trace ids are 64- and 128-bit integers, which a JS number
 * rounds — an integer past 2^53 is kept as the exact digits the server sent (where the browser
 * gives revivers the source text).
 */
function exactIntegers(key, value, context) {
  if (typeof value === "number" && !Number.isSafeInteger(value) && Number.isInteger(value) && context && context.source) {
    return context.source;
  }
  return value;
}

/** An HTTP or network failure, with a message a person can act on. */
export class ApiError extends Error {
  constructor(status, message, detail) {
    super(message);
    this.name = "ApiError";
    this.status = status;
    this.detail = detail;
  }
}

/** FastAPI's `detail` (a string, or a list of validation errors) as one readable line. */
export function describeDetail(detail) {
  if (detail === null || detail === undefined) return "";
  if (typeof detail === "string") return detail;
  if (Array.isArray(detail)) {
    return detail
      .map((item) => {
        if (typeof item !== "object" || item === null) return String(item);
        const where = (item.loc || []).filter((part) => part !== "body").join(".");
        return where ? `${where}: ${item.msg}` : item.msg || JSON.stringify(item);
      })
      .join("; ");
  }
  return typeof detail === "object" && detail.message ? detail.message : JSON.stringify(detail);
}

const enc = encodeURIComponent;

export class Api {
  /** `askToken(message)` resolves to a bearer token typed by the user (see main.js). */
  constructor({ base = "", askToken }) {
    this.base = base;
    this.askToken = askToken;
    this.token = localStorage.getItem(TOKEN_KEY) || "";
    this._asking = null;
  }

  get hasToken() {
    return Boolean(this.token);
  }

  forgetToken() {
    this.token = "";
    localStorage.removeItem(TOKEN_KEY);
  }

  sessionPath(app, user, id = "") {
    const root = `/apps/${enc(app)}/users/${enc(user)}/sessions`;
    return id ? `${root}/${enc(id)}` : root;
  }

  // -- plain JSON routes ---------------------------------------------------------------------

  listApps() {
    return this.json("GET", "/list-apps");
  }
  version() {
    return this.json("GET", "/version");
  }
  listSessions(app, user) {
    return this.json("GET", this.sessionPath(app, user));
  }
  createSession(app, user) {
    return this.json("POST", this.sessionPath(app, user), {});
  }
  getSession(app, user, id) {
    return this.json("GET", this.sessionPath(app, user, id));
  }
  /** The session's spans in google-adk's trace shape (`[]` when the server keeps none). */
  sessionTrace(app, id) {
    return this.json("GET", `/dev/apps/${enc(app)}/debug/trace/session/${enc(id)}`);
  }
  /** Apply a state delta without a run (the PATCH session route); answers the session. */
  updateSession(app, user, id, stateDelta) {
    return this.json("PATCH", this.sessionPath(app, user, id), { stateDelta });
  }
  deleteSession(app, user, id) {
    return this.json("DELETE", this.sessionPath(app, user, id));
  }
  pending(app, user, id) {
    return this.json("GET", `${this.sessionPath(app, user, id)}/pending`);
  }

  /** Tokens and price per invocation, from the stored records (the ADK events carry no price). */
  usage(app, user, id) {
    return this.json("GET", `${this.sessionPath(app, user, id)}/usage`);
  }
  listArtifacts(app, user, id) {
    return this.json("GET", `${this.sessionPath(app, user, id)}/artifacts`);
  }
  artifactVersions(app, user, id, name) {
    return this.json("GET", `${this.sessionPath(app, user, id)}/artifacts/${enc(name)}/versions`);
  }
  artifact(app, user, id, name, version) {
    const path = `${this.sessionPath(app, user, id)}/artifacts/${enc(name)}`;
    return this.json("GET", version === undefined ? path : `${path}/versions/${enc(version)}`);
  }

  // -- streamed runs -------------------------------------------------------------------------

  /** Decide a pending call; the resumed run streams like /run_lifecycle. */
  decide({ app, user, session, callId, decision, signal }) {
    const path = `${this.sessionPath(app, user, session)}/pending/${enc(callId)}`;
    return this.stream(path, decision, signal);
  }

  /** Decide a call that waits inside a live call: the server answers 202 and the call goes
   * on over its WebSocket. */
  decideLive({ app, user, session, callId, decision }) {
    return this.json("POST", `${this.sessionPath(app, user, session)}/pending/${enc(callId)}`, decision);
  }

  async *stream(path, body, signal) {
    const response = await this.fetch("POST", path, body, {
      accept: "text/event-stream",
      signal,
    });
    if (!response.body) throw new ApiError(response.status, "The server sent no stream.");
    for await (const frame of readSse(response.body, signal)) {
      yield parseFrameData(frame);
    }
  }

  // -- transport -----------------------------------------------------------------------------

  async json(method, path, body) {
    const response = await this.fetch(method, path, body, { accept: "application/json" });
    const text = await response.text();
    if (!text) return null;
    try {
      return JSON.parse(text, exactIntegers);
    } catch {
      throw new ApiError(response.status, `The server answered ${path} with something other than JSON.`);
    }
  }

  /**
   * @param {string} method
   * @param {string} path
   * @param {unknown} [body]
   * @param {{accept?: string, signal?: AbortSignal}} [options]
   */
  async fetch(method, path, body, { accept, signal } = {}) {
    for (let attempt = 0; ; attempt += 1) {
      const headers = { Accept: accept || "application/json" };
      if (body !== undefined) headers["Content-Type"] = "application/json";
      if (this.token) headers.Authorization = `Bearer ${this.token}`;
      let response;
      try {
        response = await fetch(this.base + path, {
          method,
          headers,
          body: body === undefined ? undefined : JSON.stringify(body),
          signal,
        });
      } catch (error) {
        if (error.name === "AbortError") throw error;
        throw new ApiError(0, "Cannot reach the rondo server. Is `rondo web` still running?");
      }
      if (response.status === 401 && attempt < 3) {
        await this.authenticate(attempt === 0 && !this.token ? "" : "That token was not accepted.");
        continue;
      }
      if (!response.ok) {
        const error = await errorOf(response);
        if (response.status === 403 && this.token) {
          error.message += " (The user id in the top bar must be the one your token belongs to.)";
        }
        throw error;
      }
      return response;
    }
  }

  /** Ask for a token once, however many requests are waiting for it. */
  authenticate(message) {
    if (!this._asking) {
      this._asking = this.askToken(message).then((token) => {
        this.token = token;
        localStorage.setItem(TOKEN_KEY, token);
        this._asking = null;
      });
    }
    return this._asking;
  }
}

function parseFrameData(frame) {
  let data;
  try {
    data = JSON.parse(frame.data);
  } catch {
    return { type: "error", error: `The server sent a stream frame that is not JSON: ${frame.data.slice(0, 200)}` };
  }
  if (frame.event === "error" && data && typeof data === "object" && !data.type) {
    return { ...data, type: "error" };
  }
  return data;
}

async function errorOf(response) {
  let detail = null;
  const text = await response.text().catch(() => "");
  try {
    detail = JSON.parse(text).detail;
  } catch {
    detail = null;
  }
  const described = describeDetail(detail);
  const status = `${response.status} ${response.statusText || ""}`.trim();
  const message = described || `The server answered ${status}.`;
  return new ApiError(response.status, message, detail);
}
