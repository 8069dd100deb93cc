// The chat view's HTML, one function per part (entry, item, tail) so an update re-renders only
// the part it changed. Pure string building: unit-tested without VS Code. Every part carries
// `data-id`, which the view's script uses to replace it in place.

import { escapeControl } from "../display";
import { formatDuration } from "../summary";
import type { Button, CardItem, Conversation, Entry, Footer, Item, NoteItem, TextItem, ToolItem } from "./model";
import { escapeHtml, type PathExists, renderMarkdown, renderPlainText, type StreamRender } from "./markdown";
import { renderEditPreview } from "./edit-render";
import { tailOf } from "./tool-output";

export interface RenderOptions {
  /** The server keeps each call's full output (`agent/toolOutput`): offer to open it. */
  toolOutput: boolean;
  exists?: PathExists;
}

export const partId = {
  entry: (entry: Entry) => entry.id,
  items: (entry: Entry) => `${entry.id}/items`,
  item: (entry: Entry, item: Item) => `${entry.id}/${item.kind}/${item.id}`,
  tail: (entry: Entry) => `${entry.id}/tail`,
  /** A tool row's output text and the bar under it ("Show all", "Show more"). */
  outputText: (entry: Entry, item: Item) => `${entry.id}/${item.kind}/${item.id}/output`,
  outputBar: (entry: Entry, item: Item) => `${entry.id}/${item.kind}/${item.id}/bar`,
  /** The block of a streaming text still being written (its done blocks come before it). */
  open: (entry: Entry, item: Item) => `${entry.id}/${item.kind}/${item.id}/open`,
};

/**
 * A row that expands on click (a tool call, reasoning). Not `<details>`: Chromium's work per
 * inserted or replaced element grows with the number of `<details>` in the page (each keeps
 * its closed content display-locked), so the 600th tool row cost twice the 30th; a class the
 * page toggles costs the same at any size.
 */
function disclosure(cls: string, id: string, head: string, body: string, between = "", title?: string): string {
  return (
    `<div class="${cls} disclosure"${partAttrs(id)}>` +
    `<div class="disclosure-head" data-toggle role="button" tabindex="0" aria-expanded="false"${attrs({ title })}>${head}</div>` +
    `${between}<div class="disclosure-body">${body}</div></div>`
  );
}

function attrs(values: Record<string, string | undefined>): string {
  return Object.entries(values)
    .filter((kv): kv is [string, string] => kv[1] !== undefined)
    .map(([k, v]) => ` ${k}="${escapeHtml(v)}"`)
    .join("");
}

/** A part's attributes: `data-id` names it, and the same as `id` lets the page find it at once. */
export function partAttrs(id: string): string {
  return attrs({ id: `part:${id}`, "data-id": id });
}

export function renderButton(button: Button, extraClass = ""): string {
  const data: Record<string, string | undefined> = { "data-action": button.action };
  for (const [k, v] of Object.entries(button.args ?? {})) data[`data-${k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`] = v;
  const cls = ["button", button.primary ? "primary" : "secondary", extraClass].filter((c) => c).join(" ");
  return `<button class="${cls}"${attrs(data)}>${escapeHtml(button.title)}</button>`;
}

const CALL_MARK: Record<ToolItem["state"], string> = { running: "…", waiting: "?", ok: "✓", failed: "✗" };
const CALL_WORD: Record<ToolItem["state"], string> = {
  running: "running",
  waiting: "waiting for your permission",
  ok: "ok",
  failed: "failed",
};

/** The server's preview ends with this marker when it cut the output. */
const CUT_MARK = /\n… \[(\d+) more characters\]$/;

export function cutCount(output: string | undefined): number | undefined {
  const m = output === undefined ? null : CUT_MARK.exec(output);
  return m ? Number(m[1]) : undefined;
}

/** Model text in HTML, with every control and bidi character spelled out (../display). */
function shownHtml(text: string): string {
  return escapeHtml(escapeControl(text, { keepNewlines: true }));
}

/** The arguments as the model wrote them: one row per field, multi-line values keep their lines. */
export function renderArguments(argumentsJson: string): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(argumentsJson);
  } catch {
    return `<pre class="arg-value">${shownHtml(argumentsJson)}</pre>`;
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
    return `<pre class="arg-value">${shownHtml(JSON.stringify(parsed, null, 2))}</pre>`;
  }
  const rows = Object.entries(parsed as Record<string, unknown>).map(([key, value]) => {
    const text = typeof value === "string" ? value : JSON.stringify(value, null, 2);
    return `<div class="arg"><span class="arg-key">${shownHtml(key)}</span><pre class="arg-value">${shownHtml(text)}</pre></div>`;
  });
  return rows.length ? rows.join("") : `<pre class="arg-value">{}</pre>`;
}

/**
 * The server's words (server/agent/activity.py), escaped there and on one line; escaped
 * again here, which changes nothing in what the server escaped (../display).
 */
function said(text: string | undefined): string {
  return escapeControl(text ?? "");
}

export function renderToolItem(entry: Entry, item: ToolItem, options: RenderOptions): string {
  // One line: the tool, what the call is about, its status. The words are the server's:
  // only the layout is made here (a row saved before the server sent them shows the name).
  const done = item.state === "running" && item.progress ? ` · ${said(item.progress)}` : "";
  const status = `${CALL_WORD[item.state]}${done}${item.durationText ? ` · ${said(item.durationText)}` : ""}`;
  const error =
    item.state === "failed" && item.outputHead
      ? `<div class="call-error">${renderPlainText(said(item.outputHead))}</div>`
      : "";
  const finished = item.state === "ok" || item.state === "failed";
  const output = item.output === undefined ? `<div class="muted">${finished ? "No output." : "Running…"}</div>` : renderOutput(entry, item, options);
  const ids = { callId: item.id, entryId: entry.id };
  const buttons = [
    ...(item.output !== undefined && item.output !== "" ? [renderButton({ title: "Copy output", action: "copyToolOutput", args: ids })] : []),
    ...(finished && options.toolOutput ? [renderButton({ title: "Open full output", action: "openToolOutput", args: ids })] : []),
  ];
  const open = buttons.length ? `<div class="call-actions buttons">${buttons.join("")}</div>` : "";
  return disclosure(
    `call ${item.state}`,
    partId.item(entry, item),
    `<span class="mark">${CALL_MARK[item.state]}</span> ` +
      // The server's name for people ("get_current_time — time (MCP server)"); the registry
      // name stays in the tooltip.
      (item.displayName
        ? `<code class="tool" title="${escapeHtml(escapeControl(item.name))}">${escapeHtml(escapeControl(item.displayName))}</code> `
        : `<code class="tool">${escapeHtml(escapeControl(item.name))}</code> `) +
      `<span class="args">${escapeHtml(said(item.subject))}</span> ` +
      `<span class="status">${escapeHtml(status)}</span>`,
    `<div class="call-body"><div class="label">Arguments</div>${renderArguments(item.arguments)}` +
      `<div class="label">Output</div>${output}${open}</div>`,
    error + renderEditPreview(entry, item),
    item.title === undefined ? undefined : said(item.title),
  );
}

/**
 * A call's output as a terminal shows it: its last lines (TAIL_LINES), unwrapped, with a bar
 * saying how many came before and "Show all" (the extension pages the whole output in from
 * agent/toolOutput). Only a cut preview without its tail fetched (an older server, a reopened
 * conversation) shows its head, and says so.
 */
function renderOutput(entry: Entry, item: ToolItem, options: RenderOptions): string {
  const text = item.output ?? "";
  const cut = cutCount(text);
  const ids = { callId: item.id, entryId: entry.id };
  const pre = (shown: string, tail: boolean) =>
    `<pre class="output${tail ? " from-end" : ""}"${partAttrs(partId.outputText(entry, item))}>${escapeHtml(shown)}</pre>`;
  if (item.full === undefined && cut !== undefined) {
    const more = options.toolOutput ? renderButton({ title: "Show all", action: "showAllOutput", args: ids }) : "";
    return (
      pre(text.replace(CUT_MARK, ""), false) +
      outputBar(entry, item, `The first part only: ${cut.toLocaleString("en-US")} more characters.`, more, "cut-note")
    );
  }
  const tail = item.full ?? tailOf(text);
  const note = tail.hiddenLines > 0 ? `The last ${plural(tail.totalLines - tail.hiddenLines, "line")} of ${tail.totalLines.toLocaleString("en-US")}.` : "";
  const more = tail.hiddenLines > 0 ? renderButton({ title: "Show all", action: "showAllOutput", args: ids }) : "";
  return pre(tail.text, true) + (note ? outputBar(entry, item, note, more) : "");
}

/** The bar under a call's output: what is shown of it, and the button for more. */
export function outputBar(entry: Entry, item: Item, note: string, button: string, cls = ""): string {
  return `<div class="output-bar ${cls}"${partAttrs(partId.outputBar(entry, item))}><span>${escapeHtml(note)}</span>${button}</div>`;
}

function plural(n: number, word: string): string {
  return `${n.toLocaleString("en-US")} ${word}${n === 1 ? "" : "s"}`;
}

export function renderTextItem(entry: Entry, item: TextItem, options: RenderOptions): string {
  return textItemHtml(entry, item, renderMarkdown(item.text, options.exists));
}

function textItemHtml(entry: Entry, item: TextItem, html: string): string {
  if (item.channel === "reasoning") {
    return disclosure("reasoning", partId.item(entry, item), "Reasoning", `<div class="markdown-body">${html}</div>`);
  }
  return `<div class="answer markdown-body"${partAttrs(partId.item(entry, item))}>${html}</div>`;
}

/**
 * A text item while it streams (MarkdownStream): its done blocks, then the block being written
 * in a part of its own, which later deltas replace (the page appends the blocks done meanwhile
 * before it). The full render (renderTextItem) replaces this when the ask ends.
 */
export function renderStreamingTextItem(entry: Entry, item: TextItem, rendered: StreamRender): string {
  const done = rendered.done === "" ? "" : `<div class="md-done">${rendered.done}</div>`;
  return textItemHtml(entry, item, `${done}<div class="md-open"${partAttrs(partId.open(entry, item))}>${rendered.open}</div>`);
}

export function renderCardItem(entry: Entry, item: CardItem): string {
  return (
    `<div class="card ${item.tone ?? "info"}" role="group" aria-label="${escapeHtml(item.title)}"${partAttrs(partId.item(entry, item))}>` +
    `<div class="card-title">${escapeHtml(item.title)}</div>` +
    (item.code === undefined ? "" : `<pre class="arg-value card-code"><code>${escapeHtml(item.code)}</code></pre>`) +
    (item.body === "" ? "" : `<div class="card-body">${renderPlainText(item.body)}</div>`) +
    (item.buttons.length === 0 ? "" : `<div class="buttons">${item.buttons.map((b) => renderButton(b)).join("")}</div>`) +
    `</div>`
  );
}

export function renderNoteItem(entry: Entry, item: NoteItem): string {
  return `<div class="note"${partAttrs(partId.item(entry, item))}>${escapeHtml(item.icon ?? "⇣")} ${escapeHtml(item.text)}</div>`;
}

export function renderItem(entry: Entry, item: Item, options: RenderOptions): string {
  switch (item.kind) {
    case "note":
      return renderNoteItem(entry, item);
    case "tool":
      return renderToolItem(entry, item, options);
    case "text":
      return renderTextItem(entry, item, options);
    case "card":
      return renderCardItem(entry, item);
  }
}

/**
 * What a stop reason asks of the user in this editor's menus: the server words the stop
 * (its stopNote) but cannot name VS Code's settings.
 */
const STOP_ACTIONS: Record<string, string> = {
  max_turns: "Raise agentLsp.maxTurns in Settings to let it go further.",
};

/** Why the ask stopped without an answer; an entry saved before the server sent its words
 * shows the bare stop reason. */
function stopNote(entry: Entry): string | undefined {
  if (!entry.stopReason || entry.stopReason === "end_turn") return undefined;
  const note = said(entry.stopNote ?? `stopped: ${entry.stopReason}`);
  const action = STOP_ACTIONS[entry.stopReason];
  return action ? `${note}. ${action}` : note;
}

export function formatFooter(footer: Footer): string {
  const parts: string[] = [];
  if (footer.model) parts.push(footer.model);
  const elapsed = formatDuration(footer.elapsedMs);
  if (elapsed) parts.push(elapsed);
  const tokens = footer.usage?.total_tokens;
  if (tokens !== undefined && tokens > 0) parts.push(`${tokens.toLocaleString("en-US")} tokens`);
  const context = footer.usage?.contextTokens;
  const window = footer.usage?.contextWindow;
  if (context !== undefined && window !== undefined && window > 0) {
    parts.push(`context ${context.toLocaleString("en-US")} of ${window.toLocaleString("en-US")} tokens`);
  }
  return parts.join(" · ");
}

export function renderTail(entry: Entry): string {
  const parts: string[] = [];
  switch (entry.state) {
    case "working":
      parts.push(`<div class="working-status"><span class="spinner"></span> ${escapeHtml(entry.status ?? "Working…")}</div>`);
      break;
    case "cancelled":
      parts.push(`<div class="outcome cancelled">Cancelled.</div>`);
      break;
    case "error":
      parts.push(`<div class="outcome error">${renderPlainText(entry.error?.message ?? "The ask failed.")}</div>`);
      break;
    default:
      break;
  }
  const note = stopNote(entry);
  if (note) parts.push(`<div class="stop-note">${escapeHtml(note)}</div>`);
  const buttons = [...(entry.state === "error" ? entry.error?.buttons ?? [] : []), ...entry.actions];
  const changes = entry.changes ? `<span class="changes">${escapeHtml(entry.changes)}</span>` : "";
  if (buttons.length || changes) parts.push(`<div class="buttons">${changes}${buttons.map((b) => renderButton(b)).join("")}</div>`);
  const footer = entry.footer ? formatFooter(entry.footer) : "";
  if (footer) parts.push(`<div class="footer">${escapeHtml(footer)}</div>`);
  return `<div class="tail"${partAttrs(partId.tail(entry))}>${parts.join("")}</div>`;
}

export function entryClass(entry: Entry): string {
  return `entry ${entry.state}${entry.undone ? " undone" : ""}`;
}

export function renderEntry(entry: Entry, options: RenderOptions): string {
  return (
    `<section class="${entryClass(entry)}"${partAttrs(partId.entry(entry))}>` +
    `<div class="prompt">${entry.undone ? `<div class="undone-label">Undone</div>` : ""}<div class="prompt-text">${escapeHtml(entry.prompt)}</div>` +
    (entry.attached ? `<div class="attached">${escapeHtml(entry.attached)}</div>` : "") +
    `</div>` +
    `<div class="items"${partAttrs(partId.items(entry))}>${entry.items.map((i) => renderItem(entry, i, options)).join("")}</div>` +
    renderTail(entry) +
    `</section>`
  );
}

export const EMPTY_HTML =
  `<div class="empty"><p>Ask the agent about this workspace: type below and press <b>Enter</b>.</p>` +
  `<p class="muted">Shift+Enter adds a line; ↑ recalls earlier prompts; Escape stops a running ask.</p></div>`;

/** The whole conversation (first show, reopen, new conversation). */
export function renderConversation(conversation: Conversation, options: RenderOptions): string {
  const tone = conversation.noticeTone === "info" ? " info" : "";
  const notice = conversation.notice ? `<div class="notice${tone}" role="status"${partAttrs("notice")}>${renderPlainText(conversation.notice)}</div>` : "";
  if (conversation.entries.length === 0) return notice + EMPTY_HTML;
  return notice + conversation.entries.map((e) => renderEntry(e, options)).join("");
}
