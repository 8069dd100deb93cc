// The chat view's page script (bundled to dist/webview.js). It puts the HTML parts the
// extension renders in place by `data-id`, keeps the reader's scroll position, runs the input
// (Enter sends, Shift+Enter breaks the line, Up/Down recall, Escape stops; `/` and `@` open a
// picker, input-completion.ts) and turns clicks on `data-action` elements into actions for the
// extension. It never evaluates anything from an
// answer, and the page's CSP admits no other script.

import type { FileChoice, FromView, ToView } from "../chat/messages";
import { parseBuiltin } from "../slash-commands";
import { MentionChips, renderProject } from "./chips";
import { DraftSync, restoredDraft } from "./draft";
import { InputCompletion } from "./input-completion";
import { busyNote, caretLines, inputAction } from "./keys";
import { PromptHistory } from "./prompt-history";
import { afterChange, isAtBottom, type Place, rememberPlace, type SavedPlaces } from "./scroll";

interface VsCodeApi {
  postMessage(message: FromView): void;
  getState(): unknown;
  setState(state: unknown): void;
}
declare function acquireVsCodeApi(): VsCodeApi;

interface PageState {
  draft?: string;
  prompts?: string[];
  /** The files picked with `@` for the next ask. */
  mentions?: FileChoice[];
  /** Where the reader left conversations they had scrolled up in (scroll.ts). */
  places?: SavedPlaces;
}

const vscode = acquireVsCodeApi();
const saved = (vscode.getState() ?? {}) as PageState;

const root = document.getElementById("conversation") as HTMLElement;
const jump = document.getElementById("jump") as HTMLButtonElement;
const input = document.getElementById("input") as HTMLTextAreaElement;
const send = document.getElementById("send") as HTMLButtonElement;
const status = document.getElementById("status") as HTMLElement;
const attach = document.getElementById("attach") as HTMLElement;
const pinned = document.getElementById("pinned") as HTMLElement;
const project = document.getElementById("project") as HTMLElement;

const history = new PromptHistory(saved.prompts ?? []);
let busy = false;
/** The key of the active file's chip while it is shown attached: what the next ask sends. */
let activeFile: string | undefined;
/** Whether to follow new output: the reader was at the bottom when they last scrolled. */
let stick = true;

/** Render times of the last updates (read by bench/view-render.mjs). */
const timings: { what: string; ms: number }[] = [];
(window as unknown as { agentLspTimings: typeof timings }).agentLspTimings = timings;
/** The places kept and the conversation shown (read by the E2E tests when one fails). */
(window as unknown as { agentLspPlaces: () => unknown }).agentLspPlaces = () => ({ shownKey, places });

/** The conversation shown (its session), and where readers left the ones they scrolled in. */
let shownKey: string | undefined;
let places: SavedPlaces = saved.places ?? {};

function save(): void {
  const state: PageState = { draft: input.value, prompts: [...history.all], mentions: [...mentions.all], places };
  vscode.setState(state);
}

const mentions = new MentionChips(document.getElementById("mentions") as HTMLElement, saved.mentions ?? [], () => save());
const completion = new InputCompletion(input, document.getElementById("picker") as HTMLElement, mentions, {
  post: (message) => vscode.postMessage(message),
  edited: () => {
    autosize();
    draftChanged();
  },
  runBuiltin: (name, args) => runBuiltin(name, args),
});

/** A part by its id (an `id` attribute: a hash lookup, not a walk of the conversation). */
function byId(id: string): Element | null {
  return document.getElementById(`part:${id}`);
}

function fromHtml(html: string): Element | null {
  const template = document.createElement("template");
  template.innerHTML = html;
  return template.content.firstElementChild;
}

/** Replace `old` by `next`, keeping the rows the reader opened open. */
function replace(old: Element, next: Element): void {
  const open = new Set<string>();
  if (old.matches(".disclosure.open[data-id]")) open.add((old as HTMLElement).dataset.id ?? "");
  for (const d of old.querySelectorAll<HTMLElement>(".disclosure.open[data-id]")) open.add(d.dataset.id ?? "");
  if (open.size > 0) {
    if (next.matches(".disclosure[data-id]") && open.has((next as HTMLElement).dataset.id ?? "")) setOpen(next, true);
    for (const d of next.querySelectorAll<HTMLElement>(".disclosure[data-id]")) if (open.has(d.dataset.id ?? "")) setOpen(d, true);
  }
  old.replaceWith(next);
  for (const pre of next.querySelectorAll<HTMLElement>(".open pre.output.from-end")) pre.scrollTop = pre.scrollHeight;
}

/** Expand or collapse a row (a tool call, reasoning). */
function setOpen(row: Element, open: boolean): void {
  row.classList.toggle("open", open);
  row.querySelector(":scope > .disclosure-head")?.setAttribute("aria-expanded", String(open));
  // An output's tail opens at its last line, as a terminal shows it.
  if (open) for (const pre of row.querySelectorAll<HTMLElement>("pre.output.from-end")) pre.scrollTop = pre.scrollHeight;
}

// Entries live in chunks of CHUNK: a change inside one lays out that chunk's entries and the
// chunks, not every entry of a long conversation (so an update costs the same at 200).
const CHUNK = 16;
const DONE_CHUNK = 16;

function lastChunk(): Element {
  const last = root.lastElementChild;
  if (last?.classList.contains("chunk") && last.childElementCount < CHUNK) return last;
  const chunk = document.createElement("div");
  chunk.className = "chunk";
  root.appendChild(chunk);
  return chunk;
}

function chunkEntries(): void {
  for (const entry of Array.from(root.querySelectorAll(":scope > section.entry"))) lastChunk().appendChild(entry);
}

function apply(message: ToView): void {
  switch (message.type) {
    case "reset":
      root.innerHTML = message.html;
      chunkEntries();
      shownKey = message.key;
      break;
    case "upsert": {
      const next = fromHtml(message.html);
      if (!next) return;
      const old = byId(message.id);
      if (old) {
        replace(old, next);
        return;
      }
      const before = message.before ? byId(message.before) : null;
      if (before?.parentElement) {
        before.parentElement.insertBefore(next, before);
        return;
      }
      const parent = message.parent ? byId(message.parent) : null;
      if (parent) parent.appendChild(next);
      else {
        root.querySelector(":scope > .empty")?.remove();
        if (next.matches("section.entry")) lastChunk().appendChild(next);
        else root.appendChild(next);
      }
      break;
    }
    case "remove":
      byId(message.id)?.remove();
      break;
    case "stream": {
      const open = byId(message.id);
      if (!open) return;
      if (message.append) {
        // Done blocks go into chunks of DONE_CHUNK, so a delta lays out a few chunks and the
        // open block, not every paragraph of a long answer.
        let done = open.previousElementSibling;
        if (!done?.classList.contains("md-done") || done.childElementCount >= DONE_CHUNK) {
          done = document.createElement("div");
          done.className = "md-done";
          open.before(done);
        }
        done.insertAdjacentHTML("beforeend", message.append);
      }
      open.innerHTML = message.html;
      break;
    }
    case "setClass": {
      const element = byId(message.id);
      if (element) element.className = message.className;
      break;
    }
    case "outputPage": {
      const text = byId(message.id);
      if (text) {
        if (message.replace) text.textContent = message.text;
        else text.append(`\n${message.text}`);
        text.classList.remove("from-end");
      }
      const bar = byId(message.bar);
      const next = fromHtml(message.barHtml);
      if (bar && next) bar.replaceWith(next);
      break;
    }
    case "follow":
      follow();
      break;
    case "busy":
      setBusy(message.busy, message.status);
      break;
    case "focusInput":
      if (message.text !== undefined) {
        input.value = message.text;
        autosize();
        save();
      }
      input.focus();
      input.setSelectionRange(input.value.length, input.value.length);
      break;
    case "draft": {
      const text = restoredDraft(input.value, message.text);
      if (text !== undefined) {
        input.value = text;
        autosize();
        save();
      }
      break;
    }
    case "prompts":
      history.replace(message.prompts);
      save();
      break;
    case "activeFile": {
      attach.replaceChildren();
      activeFile = message.key !== undefined && message.attached ? message.key : undefined;
      if (message.key !== undefined && message.label !== undefined) {
        const chip = document.createElement("span");
        chip.className = message.attached ? "chip active-file" : "chip active-file off";
        chip.title = message.attached ? `Goes with the next ask: ${message.title ?? message.label}` : `Not sent: ${message.title ?? message.label}`;
        const name = document.createElement("span");
        name.textContent = message.label;
        const toggle = document.createElement("button");
        toggle.dataset.action = "toggleActiveFile";
        toggle.dataset.key = message.key;
        toggle.textContent = message.attached ? "✕" : "＋";
        toggle.title = message.attached ? `Don't attach ${message.label}` : `Attach ${message.label}`;
        toggle.setAttribute("aria-label", toggle.title);
        if (message.attached) chip.append(name, toggle);
        else chip.append(toggle, name);
        // Its row says what it is: beside "Instructions: AGENTS.md", an open AGENTS.md is a
        // file sent with the ask, not a second instruction chip.
        const label = document.createElement("span");
        label.className = "chips-label";
        label.textContent = message.attached ? "With the ask:" : "Not sent:";
        attach.append(label, chip);
      }
      attach.hidden = attach.childElementCount === 0;
      break;
    }
    case "project":
      renderProject(project, message.instructions, message.skills);
      break;
    case "commands":
      completion.setCommands(message.commands);
      break;
    case "files":
      completion.setFiles(message.id, message.files);
      break;
    case "fileMentions":
      completion.setFilesEnabled(message.enabled);
      break;
    case "pinned": {
      pinned.innerHTML = "";
      if (message.label) {
        const chip = document.createElement("span");
        chip.className = "pinned";
        const remove = document.createElement("button");
        remove.textContent = "✕";
        remove.title = "Don't attach it";
        remove.dataset.action = "unpin";
        chip.append(`Attached: ${message.label}`, remove);
        pinned.append(chip);
      }
      pinned.hidden = !message.label;
      break;
    }
  }
}

const CONTENT_CHANGES = new Set(["reset", "upsert", "remove", "stream"]);

window.addEventListener("message", (event: MessageEvent) => {
  const message = event.data as ToView | undefined;
  if (!message || typeof message.type !== "string") return;
  if (!CONTENT_CHANGES.has(message.type)) {
    apply(message);
    return;
  }
  const started = performance.now();
  const wasAtBottom = message.type === "reset" || stick;
  apply(message);
  const next = afterChange(wasAtBottom, root);
  if (next.scrollTo !== undefined) root.scrollTop = next.scrollTo;
  jump.hidden = !next.offerJump;
  if (message.type === "reset") {
    // At its end, unless the reader had scrolled up in this conversation: back there, once
    // its entries are laid out (till then they have a placeholder height: see settle()).
    const place = shownKey === undefined ? undefined : places[shownKey];
    stick = place === undefined;
    if (place !== undefined) restorePlace(place);
    settle();
  }
  timings.push({ what: message.type, ms: performance.now() - started });
  if (timings.length > 1000) timings.splice(0, timings.length - 1000);
});

root.addEventListener("scroll", () => {
  if (restoring) return;
  stick = isAtBottom(root);
  jump.hidden = stick;
  // Where the reader is, for when this conversation is shown again; at its end (following a
  // running ask, the usual case) there is nothing to keep and nothing is written.
  if (shownKey === undefined || (stick && places[shownKey] === undefined)) return;
  places = rememberPlace(places, shownKey, stick ? undefined : placeNow());
  save();
});

/** Set while a reopened conversation goes back to where the reader was (scroll events ignored). */
let restoring = false;

function restorePlace(place: Place): void {
  restoring = true;
  requestAnimationFrame(() =>
    requestAnimationFrame(() => {
      restoring = false;
      const entry = root.querySelectorAll<HTMLElement>("section.entry")[place.entry];
      if (entry) root.scrollTop += entry.getBoundingClientRect().top - root.getBoundingClientRect().top + place.offset;
      else stick = true;
      settle();
    }),
  );
}

/** The entry at the top of the view and how far into it the reader is. */
function placeNow(): Place | undefined {
  const box = root.getBoundingClientRect();
  const entry = document.elementFromPoint(box.left + box.width / 2, box.top + 2)?.closest<HTMLElement>("section.entry");
  if (!entry) return undefined;
  const index = Array.prototype.indexOf.call(root.querySelectorAll("section.entry"), entry);
  return index < 0 ? undefined : { entry: index, offset: box.top - entry.getBoundingClientRect().top };
}

/**
 * Chunks out of sight have a placeholder height (content-visibility), so the end measured
 * before they are laid out is not the end: a conversation drawn whole (reopened, reloaded)
 * landed mid-way. While the reader follows, every change of the content's size scrolls to
 * the end again; otherwise "Jump to latest" shows whenever the end is out of sight.
 */
function settle(): void {
  if (stick) root.scrollTop = root.scrollHeight;
  jump.hidden = stick || isAtBottom(root);
}
const resized = new ResizeObserver(() => settle());
function observeChunks(): void {
  for (const chunk of root.children) resized.observe(chunk);
}
new MutationObserver(() => observeChunks()).observe(root, { childList: true });
resized.observe(root);

/** The reader sent a prompt (or Retry): show it and follow its answer until they scroll away. */
function follow(): void {
  stick = true;
  settle();
}
// A reader starting to scroll up is not followed, even before the first scroll event lands
// (an update in between would otherwise pull them back to the bottom).
root.addEventListener("wheel", (event) => {
  if (event.deltaY < 0) stick = false;
}, { passive: true });
root.addEventListener("keydown", (event) => {
  if (["ArrowUp", "PageUp", "Home"].includes(event.key)) stick = false;
});

jump.addEventListener("click", () => {
  root.scrollTop = root.scrollHeight;
  stick = true;
  jump.hidden = true;
});

// -- clicks: links and buttons -----------------------------------------------------------------

function codeOf(element: Element): string {
  return element.closest(".code-block")?.querySelector("pre code")?.textContent ?? "";
}

/** A copy button says it copied, for a moment. */
function copied(button: HTMLElement): void {
  const label = button.dataset.label ?? button.textContent ?? "";
  button.dataset.label = label;
  button.textContent = "Copied ✓";
  setTimeout(() => {
    if (button.isConnected) button.textContent = label;
  }, 1500);
}

document.addEventListener("click", (event) => {
  const target = event.target instanceof Element ? event.target : null;
  if (!target) return;
  const actor = target.closest<HTMLElement>("[data-action]");
  if (actor) {
    event.preventDefault();
    const args: Record<string, string> = {};
    for (const [k, v] of Object.entries(actor.dataset)) if (k !== "action" && v !== undefined) args[k] = v;
    const action = actor.dataset.action ?? "";
    if (action === "copyCode" || action === "insertCode") args.text = codeOf(actor);
    if (action === "copyCode" || action === "copyToolOutput") copied(actor);
    if (action === "stop") {
      vscode.postMessage({ type: "stop" });
      return;
    }
    vscode.postMessage({ type: "action", action, args });
    return;
  }
  const link = target.closest("a");
  if (link) {
    event.preventDefault();
    const href = link.getAttribute("href");
    if (href) vscode.postMessage({ type: "action", action: "openLink", args: { href } });
    return;
  }
  const head = target.closest("[data-toggle]");
  if (head?.parentElement && !String(window.getSelection() ?? "")) setOpen(head.parentElement, !head.parentElement.classList.contains("open"));
});

// A row's head is a button for the keyboard too.
document.addEventListener("keydown", (event) => {
  const head = event.target instanceof Element ? event.target.closest("[data-toggle]") : null;
  if (!head?.parentElement || (event.key !== "Enter" && event.key !== " ")) return;
  event.preventDefault();
  setOpen(head.parentElement, !head.parentElement.classList.contains("open"));
});

// -- the input ---------------------------------------------------------------------------------

function autosize(): void {
  input.style.height = "auto";
  const max = Math.max(80, Math.floor(window.innerHeight * 0.4));
  input.style.height = `${Math.min(input.scrollHeight, max)}px`;
}

const draft = new DraftSync((text) => vscode.postMessage({ type: "draft", text }));
function draftChanged(): void {
  save();
  draft.changed(input.value);
}
// Closing the view (or hiding it) right after typing still keeps what was typed.
document.addEventListener("visibilitychange", () => {
  if (document.visibilityState === "hidden") draft.flush();
});
window.addEventListener("pagehide", () => draft.flush());

function setBusy(value: boolean, text?: string): void {
  busy = value;
  send.textContent = busy ? "Stop" : "Send";
  send.title = busy ? "Stop the running ask (Escape)" : "Send (Enter)";
  send.classList.toggle("stop", busy);
  document.body.classList.toggle("busy", busy);
  status.textContent = text ?? "";
  status.hidden = !text;
}


function clearInput(): void {
  input.value = "";
  autosize();
  save();
  draft.changed("");
  draft.flush();
}

/** `/compact`, `/new`, `/checkpoints`, `/undo [id]`: the extension's own actions, never sent. */
function runBuiltin(name: string, args: string): void {
  vscode.postMessage({ type: "builtin", name, args });
  clearInput();
}

function submit(): void {
  const prompt = input.value;
  if (prompt.trim() === "") return;
  const builtin = parseBuiltin(prompt);
  if (builtin) {
    runBuiltin(builtin.name, builtin.args);
    return;
  }
  if (busy) {
    // Said, not silently ignored (a card waiting for an answer is the usual reason).
    status.textContent = busyNote(document.querySelector(".entry.working .card.warning") !== null);
    status.hidden = false;
    return;
  }
  history.add(prompt);
  const message: FromView & { type: "send" } = { type: "send", prompt };
  if (activeFile !== undefined) message.activeFile = activeFile;
  if (mentions.all.length) message.documents = mentions.all.map((m) => m.uri);
  follow();
  vscode.postMessage(message);
  mentions.clear();
  clearInput();
}

function onSendButton(): void {
  if (busy) vscode.postMessage({ type: "stop" });
  else submit();
  input.focus();
}

send.addEventListener("click", (event) => {
  event.preventDefault();
  onSendButton();
});

input.addEventListener("keydown", (event) => {
  if (completion.handleKey(event)) {
    event.preventDefault();
    return;
  }
  const caret = caretLines(input.value, input.selectionStart, input.selectionEnd);
  const action = inputAction(event, caret, busy);
  if (action === "default") return;
  event.preventDefault();
  if (action === "send") submit();
  else if (action === "stop") vscode.postMessage({ type: "stop" });
  else {
    const text = action === "recallUp" ? history.up(input.value) : history.down();
    if (text === undefined) return;
    input.value = text;
    autosize();
    save();
    const end = action === "recallUp" ? 0 : text.length;
    input.setSelectionRange(end, end);
  }
});

input.addEventListener("input", () => {
  history.edited();
  autosize();
  draftChanged();
  completion.update();
});

window.addEventListener("resize", autosize);

chunkEntries();
observeChunks();
input.value = saved.draft ?? "";
autosize();
settle();
vscode.postMessage({ type: "ready" });
