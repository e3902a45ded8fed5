// The microphone button: a live call over the `/run_live_lifecycle` WebSocket (ADK's
// `/run_live` input — LiveRequest JSON — with lifecycle events out). It streams the
// microphone as 16 kHz PCM16 `blob` messages and hands each lifecycle event (transcript
// text, tool calls and results) to the conversation, which draws them as for any run.
//
// A browser cannot set an Authorization header on a WebSocket, so the bearer token goes as
// the `rondo.bearer.<token>` subprotocol, which the server echoes back.

import { h, icon } from "./dom.js";

const RATE = 16000;
const CHUNK = 1600; // 100 ms of audio per blob message
const GRACE_MS = 5000; // after Stop, how long the model's answer may take to arrive

/** Float32 samples at `from` Hz → Int16 PCM at 16 kHz (linear interpolation). */
export function toPcm16(samples, from) {
  const ratio = from / RATE;
  const out = new Int16Array(Math.floor(samples.length / ratio));
  for (let i = 0; i < out.length; i++) {
    const at = i * ratio;
    const lo = Math.floor(at);
    const hi = Math.min(lo + 1, samples.length - 1);
    const value = samples[lo] + (samples[hi] - samples[lo]) * (at - lo);
    const clipped = Math.max(-1, Math.min(1, value));
    out[i] = clipped < 0 ? clipped * 0x8000 : clipped * 0x7fff;
  }
  return out;
}

function base64(bytes) {
  let text = "";
  for (let i = 0; i < bytes.length; i += 0x8000) text += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(text);
}

export class LiveMic {
  /**
   * `target()` → `{ app, user, session, token }` or null when no session is open;
   * `onEvent(event)` gets each lifecycle event; `onProblem(text)` what went wrong.
   * @param {{ target: () => any, onEvent: (event: any) => void, onProblem?: (text: string) => void }} options
   */
  constructor({ target, onEvent, onProblem = (_text) => {} }) {
    this.target = target;
    this.onEvent = onEvent;
    this.onProblem = onProblem;
    this.socket = null;
    this.call = null;
    this.where = null;
    this.button = h("button", { class: "btn btn-ghost composer-mic", type: "button", title: "Talk to the agent (live)" });
    this.button.addEventListener("click", () => (this.socket ? this.stop() : this.start()));
    this.el = this.button;
    this._show(false);
  }

  /** Whether a live call is open on this session. */
  isLive(app, user, session) {
    const where = this.call && this.where;
    return Boolean(where && where.app === app && where.user === user && where.session === session);
  }

  _show(live) {
    this.button.replaceChildren(icon(live ? "stop" : "mic", 16), live ? "Stop talking" : "Talk");
    this.button.classList.toggle("is-live", live);
    this.button.setAttribute("aria-label", live ? "Stop talking" : "Talk");
  }

  async start() {
    const where = this.target();
    if (!where) return this.onProblem("Open a session first.");
    const query = new URLSearchParams({ app_name: where.app, user_id: where.user, session_id: where.session });
    query.append("modalities", "AUDIO");
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    const protocols = where.token ? [`rondo.bearer.${where.token}`] : [];
    const socket = new WebSocket(`${scheme}//${location.host}/run_live_lifecycle?${query}`, protocols);
    this.socket = socket;
    this.call = socket; // open until the server closes it (after Stop, the answer still comes)
    this.where = where;
    this._show(true);
    socket.addEventListener("message", (message) => {
      try {
        this.onEvent(JSON.parse(message.data));
      } catch (error) {
        this.onProblem(`Bad live frame: ${error}`);
      }
    });
    socket.addEventListener("close", (event) => {
      if (this.call === socket) this.call = null;
      if (event.code !== 1000 && event.reason) this.onProblem(`Live call closed: ${event.reason}`);
      if (this.socket === socket) this._release();
    });
    await new Promise((resolve, reject) => {
      socket.addEventListener("open", resolve, { once: true });
      socket.addEventListener("error", () => reject(new Error("the live connection failed")), { once: true });
    }).catch((error) => {
      this.onProblem(String(error.message || error));
      this._release();
    });
    if (this.socket !== socket) return;
    try {
      await this._capture(socket);
    } catch (error) {
      this.onProblem(`Microphone unavailable: ${error.message || error}`);
      this.stop();
    }
  }

  async _capture(socket) {
    this.stream = await navigator.mediaDevices.getUserMedia({ audio: { channelCount: 1, echoCancellation: true } });
    this.audio = new AudioContext();
    const source = this.audio.createMediaStreamSource(this.stream);
    // ScriptProcessor: no extra worklet file to serve; the chunks are small and infrequent.
    const processor = this.audio.createScriptProcessor(4096, 1, 1);
    let pending = new Int16Array(0);
    processor.onaudioprocess = (event) => {
      if (socket.readyState !== WebSocket.OPEN) return;
      const pcm = toPcm16(event.inputBuffer.getChannelData(0), this.audio.sampleRate);
      const joined = new Int16Array(pending.length + pcm.length);
      joined.set(pending);
      joined.set(pcm, pending.length);
      let at = 0;
      for (; at + CHUNK <= joined.length; at += CHUNK) {
        const bytes = new Uint8Array(joined.buffer, at * 2, CHUNK * 2);
        socket.send(JSON.stringify({ blob: { mimeType: `audio/pcm;rate=${RATE}`, data: base64(bytes) } }));
      }
      pending = joined.slice(at);
    };
    source.connect(processor);
    processor.connect(this.audio.destination);
    this.processor = processor;
  }

  /** Stop the microphone and tell the model the audio has ended (it answers what it heard);
   * the call itself ends `GRACE_MS` later, once the answer has had time to stream in. */
  stop() {
    const socket = this.socket;
    this._releaseAudio();
    if (socket && socket.readyState === WebSocket.OPEN) {
      socket.send(JSON.stringify({ audioStreamEnd: true }));
      setTimeout(() => {
        if (socket.readyState !== WebSocket.OPEN) return;
        socket.send(JSON.stringify({ close: true }));
        socket.close(1000, "the user stopped talking");
      }, GRACE_MS);
    }
    this.socket = null;
    this._show(false);
  }

  _release() {
    this._releaseAudio();
    this.socket = null;
    this._show(false);
  }

  _releaseAudio() {
    this.processor?.disconnect();
    this.stream?.getTracks().forEach((track) => track.stop());
    this.audio?.close().catch(() => {});
    this.processor = this.stream = this.audio = null;
  }
}
