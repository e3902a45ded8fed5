// @ts-check
// Files in messages (issue 22 item 5). In the composer: a file picker (the paperclip), a drop
// anywhere on the chat and a paste into the message box; each chosen file waits in a tray as
// a thumbnail (images) or a chip (other files), each with a remove button, until the message
// is sent. The message then carries them as inline data; the run route saves them as the
// session's artifacts (`runConfig.saveInputBlobsAsArtifacts`) and the stored message refers
// to them, so the conversation shows them again after a reload (their bytes read from the
// artifact). The server, not this page, decides what is too large (413) or of a type the
// app's model cannot take (415): its message is shown as it is.

import { ApiError } from "./api.js";
import { h, icon } from "./dom.js";

/**
 * A file waiting in the composer or shown in a message. `src`: what an `<img>` shows (a blob
 * or data URL); `file`: the chosen file; `data`: its bytes as base64, once read;
 * `artifact`: where a stored message's file is kept.
 * @typedef {{name: string, mimeType: string, size?: number, src?: string, file?: File,
 *   data?: string, artifact?: {name: string, version: number}}} ShownFile
 */

/**
 * A data URL of base64 `data`. The server's JSON spells bytes in the URL-safe alphabet
 * (pydantic's, as ADK's), which a data URL does not take: it is turned into the standard one.
 * @param {string} mimeType @param {string} data
 */
export function dataUrl(mimeType, data) {
  return `data:${mimeType};base64,${standardBase64(data)}`;
}

/** @param {string} data base64 in either alphabet */
function standardBase64(data) {
  return String(data || "").replace(/-/g, "+").replace(/_/g, "/");
}

/** "9 bytes", "12 KB", "3.4 MB". @param {number} n */
export function formatBytes(n) {
  if (n < 1000) return `${n} byte${n === 1 ? "" : "s"}`;
  if (n < 1_000_000) return `${Math.round(n / 1000)} KB`;
  return `${(n / 1_000_000).toFixed(1)} MB`;
}

/** A file's type as the server is told it: the browser's, else "application/octet-stream". */
function mimeOf(/** @type {File} */ file) {
  return file.type || "application/octet-stream";
}

/** A file's bytes as base64 (a data URL read by the browser, without its header). */
function base64Of(/** @type {File} */ file) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => {
      const url = String(reader.result || "");
      resolve(url.slice(url.indexOf(",") + 1));
    };
    reader.onerror = () => reject(new Error(`Could not read ${file.name}: ${reader.error?.message || "unreadable"}`));
    reader.readAsDataURL(file);
  });
}

/**
 * The message parts of `files` (ADK's camelCase `inlineData`, named by `displayName`).
 * @param {ShownFile[]} files
 */
export async function inlineParts(files) {
  const parts = [];
  for (const shown of files) {
    const data = shown.file ? await base64Of(shown.file) : shown.data;
    if (!data) continue;
    parts.push({ inlineData: { mimeType: shown.mimeType, data, displayName: shown.name } });
  }
  return parts;
}

/** `artifact://NAME?version=N` → {name, version}; null for any other URI. @param {string} uri */
function artifactOf(uri) {
  const match = /^artifact:\/\/([^?]+)\?version=(\d+)$/.exec(uri || "");
  return match ? { name: match[1], version: Number(match[2]) } : null;
}

/**
 * The files of a stored user message (its records' parts): inline data as sent (ADK's own
 * routes keep it), or references to the artifacts they were saved as.
 * @param {any[]} parts
 * @returns {ShownFile[]}
 */
export function filesOfParts(parts) {
  /** @type {ShownFile[]} */
  const files = [];
  for (const part of parts || []) {
    const inline = part.inlineData || part.inline_data;
    const ref = part.fileData || part.file_data;
    if (inline) {
      const mimeType = inline.mimeType || inline.mime_type || "application/octet-stream";
      const name = inline.displayName || inline.display_name || "file";
      files.push({ name, mimeType, size: Math.floor((String(inline.data || "").length * 3) / 4), src: dataUrl(mimeType, inline.data) });
    } else if (ref) {
      const uri = ref.fileUri || ref.file_uri || "";
      const artifact = artifactOf(uri);
      const name = ref.displayName || ref.display_name || artifact?.name || uri;
      files.push({ name, mimeType: ref.mimeType || ref.mime_type || "application/octet-stream", ...(artifact ? { artifact } : {}) });
    }
  }
  return files;
}

/**
 * A file as a message shows it: an image as a thumbnail (a stored one's bytes loaded by
 * `load`), anything else as a chip with its name and type.
 * @param {ShownFile} file
 * @param {((file: ShownFile) => Promise<string | null>) | null} load the image's URL, for a stored file
 * @param {HTMLElement | null} remove a remove button (the composer's tray)
 */
export function fileView(file, load, remove = null) {
  const label = `${file.name} · ${file.mimeType}${file.size !== undefined ? ` · ${formatBytes(file.size)}` : ""}`;
  if (file.mimeType.startsWith("image/")) {
    const img = h("img", { class: "file-thumb-img", alt: file.name, src: file.src || null });
    if (!file.src && load) {
      load(file).then((src) => {
        if (src) img.setAttribute("src", src);
      }, () => {});
    }
    return h("figure", { class: "file-thumb", title: label, dataset: { file: file.name } }, img, remove);
  }
  return h(
    "span",
    { class: "file-chip", title: label, dataset: { file: file.name } },
    icon("file", 14),
    h("span", { class: "file-chip-name" }, file.name),
    h("span", { class: "file-chip-type" }, file.mimeType),
    remove,
  );
}

/** The files of a message, as a row under its text. @param {ShownFile[]} files @param {any} load */
export function fileRow(files, load) {
  return files.length ? h("div", { class: "msg-files" }, files.map((f) => fileView(f, load))) : null;
}

/**
 * The composer's files: the picker button, the tray, and drop and paste. `onChange()` is
 * called whenever the tray changes (the composer enables Send for a message of files only).
 */
export class Attachments {
  /** @param {{onChange?: () => void}} [options] */
  constructor({ onChange = () => {} } = {}) {
    this.onChange = onChange;
    /** @type {ShownFile[]} */
    this.files = [];
    this.picker = h("input", { type: "file", multiple: true, hidden: true, "aria-label": "Choose files to attach" });
    this.picker.addEventListener("change", () => {
      const input = /** @type {HTMLInputElement} */ (this.picker);
      this.add(input.files);
      input.value = ""; // the same file may be chosen again
    });
    this.button = h(
      "button",
      { class: "btn btn-ghost composer-attach", type: "button", title: "Attach files (or drop them here, or paste)", "aria-label": "Attach files" },
      icon("clip", 16),
    );
    this.button.addEventListener("click", () => this.picker.click());
    this.tray = h("div", { class: "composer-files", hidden: true, "aria-label": "Attached files" });
  }

  /** Files dropped on `target` or pasted into `input` join the tray. @param {HTMLElement} target @param {HTMLElement} input */
  listen(target, input) {
    let depth = 0; // dragenter/leave fire for every child crossed
    const carriesFiles = (/** @type {DragEvent} */ event) => Array.from(event.dataTransfer?.types || []).includes("Files");
    target.addEventListener("dragenter", (event) => {
      if (!carriesFiles(event)) return;
      event.preventDefault();
      depth += 1;
      target.classList.add("is-dropping");
    });
    target.addEventListener("dragover", (event) => {
      if (!carriesFiles(event)) return;
      event.preventDefault(); // allows the drop
      if (event.dataTransfer) event.dataTransfer.dropEffect = "copy";
    });
    target.addEventListener("dragleave", () => {
      depth = Math.max(0, depth - 1);
      if (!depth) target.classList.remove("is-dropping");
    });
    target.addEventListener("drop", (event) => {
      depth = 0;
      target.classList.remove("is-dropping");
      if (!event.dataTransfer?.files.length) return;
      event.preventDefault(); // the browser would open the file instead
      this.add(event.dataTransfer.files);
    });
    input.addEventListener("paste", (event) => {
      const files = event.clipboardData?.files;
      if (!files?.length) return; // text pastes as text
      event.preventDefault();
      this.add(files);
    });
  }

  /** @param {FileList | File[] | null | undefined} list */
  add(list) {
    for (const file of Array.from(list || [])) {
      const mimeType = mimeOf(file);
      const src = mimeType.startsWith("image/") ? URL.createObjectURL(file) : undefined;
      this.files.push({ name: file.name || "pasted", mimeType, size: file.size, src, file });
    }
    this.render();
  }

  /** @param {ShownFile} shown */
  remove(shown) {
    this.files = this.files.filter((f) => f !== shown);
    if (shown.src) URL.revokeObjectURL(shown.src);
    this.render();
  }

  /** Empty the tray and hand its files over (to the message, which keeps their thumbnails). */
  take() {
    const files = this.files;
    this.files = [];
    this.render();
    return files;
  }

  render() {
    this.tray.replaceChildren(
      ...this.files.map((shown) => {
        const remove = h("button", { class: "file-remove", type: "button", title: `Remove ${shown.name}`, "aria-label": `Remove ${shown.name}` }, icon("x", 12));
        remove.addEventListener("click", () => this.remove(shown));
        return fileView(shown, null, remove);
      }),
    );
    this.tray.hidden = this.files.length === 0;
    this.onChange();
  }
}

/**
 * A loader of stored messages' images: the artifact's bytes as a data URL.
 * @param {(name: string, version: number) => Promise<any>} artifact the artifact route's part
 * @returns {(file: ShownFile) => Promise<string | null>}
 */
export function storedImages(artifact) {
  return async (file) => {
    if (!file.artifact) return null;
    const part = await artifact(file.artifact.name, file.artifact.version);
    const data = part?.inlineData || part?.inline_data;
    return data?.data ? dataUrl(data.mimeType || data.mime_type || file.mimeType, data.data) : null;
  };
}

/**
 * A message's files made sendable again (Retry, Edit): a stored file's bytes are read from its
 * artifact now, before a rewind takes the artifact away with the message.
 * @param {ShownFile[]} files
 * @param {(name: string, version: number) => Promise<any>} artifact the artifact route's part
 * @returns {Promise<ShownFile[]>}
 */
export async function resendable(files, artifact) {
  /** @type {ShownFile[]} */
  const out = [];
  for (const shown of files || []) {
    if (shown.file || shown.data) out.push(shown);
    else if (shown.src?.startsWith("data:")) out.push({ ...shown, data: shown.src.slice(shown.src.indexOf(",") + 1) });
    else if (shown.artifact) {
      const part = await artifact(shown.artifact.name, shown.artifact.version);
      const inline = part?.inlineData || part?.inline_data;
      if (!inline?.data) throw new Error(`${shown.name} is no longer in the session's artifacts.`);
      const data = standardBase64(inline.data);
      out.push({ ...shown, data, src: shown.src || dataUrl(shown.mimeType, data) });
    }
  }
  return out;
}

/**
 * `open` (a run's stream) with a refusal of the message — too large (413), of a type the
 * app's model does not take (415) — saying the message was not sent, then the server's words.
 * @param {(signal: AbortSignal) => AsyncIterable<any>} open
 */
export function sayNotSent(open) {
  return async function* (/** @type {AbortSignal} */ signal) {
    try {
      yield* open(signal);
    } catch (error) {
      if (error instanceof ApiError && (error.status === 413 || error.status === 415)) {
        throw new ApiError(error.status, `Not sent: ${error.message}`, error.detail);
      }
      throw error;
    }
  };
}
