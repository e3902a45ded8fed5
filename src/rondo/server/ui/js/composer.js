// The message box: Enter sends, Shift+Enter starts a new line; while a run streams, the send
// button becomes Stop. Files attached (attachments.js) wait in a tray above the text and go
// with the message; a message may be files only.

import { h, icon } from "./dom.js";

export class Composer {
  /** `onSend(text, files)` starts a run; `onStop()` aborts the current one; `extra` are more
   * buttons beside Send (the live microphone); `attachments` the files' tray and picker. */
  constructor({ onSend, onStop, extra = [], attachments = null }) {
    this.onSend = onSend;
    this.onStop = onStop;
    this.attachments = attachments;
    this.input = h("textarea", { class: "composer-input", rows: 1, placeholder: "Message the agent…", "aria-label": "Message" });
    this.button = h("button", { class: "btn btn-primary composer-send", type: "submit" });
    this.hint = h("div", { class: "composer-hint" }, "Enter to send · Shift+Enter for a new line · drop or paste files");
    const files = attachments ? [attachments.tray, attachments.picker] : [];
    const attach = attachments ? [attachments.button] : [];
    this.form = h("form", { class: "composer" }, h("div", { class: "composer-box" }, ...files, this.input, ...attach, ...extra, this.button), this.hint);
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
    const waiting = this.attachments?.files.length || 0;
    if ((!text && !waiting) || this.running) return;
    this.input.value = "";
    this.autosize();
    this.onSend(text, this.attachments ? this.attachments.take() : []);
  }

  setRunning(running) {
    this.running = running;
    this.button.replaceChildren(icon(running ? "stop" : "send", 16), running ? "Stop" : "Send");
    this.button.classList.toggle("is-stop", running);
    this.button.setAttribute("aria-label", running ? "Stop the run" : "Send");
  }

  /** Off while no app is on screen: a message typed then would have nowhere to go, and the
   * box would have been emptied for nothing. */
  setEnabled(enabled) {
    this.input.disabled = !enabled;
    this.button.disabled = !enabled;
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
