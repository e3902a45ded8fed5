// The message box: Enter sends, Shift+Enter starts a new line; while a run streams, the send
// button becomes Stop.

import { h, icon } from "./dom.js";

export class Composer {
  /** `onSend(text)` starts a run; `onStop()` aborts the current one; `extra` are more
   * buttons beside Send (the live microphone). */
  constructor({ onSend, onStop, extra = [] }) {
    this.onSend = onSend;
    this.onStop = onStop;
    this.input = h("textarea", { class: "composer-input", rows: 1, placeholder: "Message the agent…", "aria-label": "Message" });
    this.button = h("button", { class: "btn btn-primary composer-send", type: "submit" });
    this.hint = h("div", { class: "composer-hint" }, "Enter to send · Shift+Enter for a new line");
    this.form = h("form", { class: "composer" }, h("div", { class: "composer-box" }, this.input, ...extra, this.button), this.hint);
    this.el = this.form;
    this.running = false;
    this.input.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        this.submit();
      }
    });
    this.input.addEventListener("input", () => this.autosize());
    this.form.addEventListener("submit", (event) => {
      event.preventDefault();
      if (this.running) this.onStop();
      else this.submit();
    });
    this.setRunning(false);
  }

  submit() {
    const text = this.input.value.trim();
    if (!text || this.running) return;
    this.input.value = "";
    this.autosize();
    this.onSend(text);
  }

  setRunning(running) {
    this.running = running;
    this.button.replaceChildren(icon(running ? "stop" : "send", 16), running ? "Stop" : "Send");
    this.button.classList.toggle("is-stop", running);
    this.button.setAttribute("aria-label", running ? "Stop the run" : "Send");
  }

  setPlaceholder(text) {
    this.input.placeholder = text;
  }

  focus() {
    this.input.focus();
  }

  autosize() {
    this.input.style.height = "auto";
    this.input.style.height = `${Math.min(this.input.scrollHeight, 240)}px`;
  }
}
