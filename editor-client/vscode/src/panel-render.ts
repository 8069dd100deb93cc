// The "Agent" panel's HTML: the conversation (prompt, collapsed tool calls, Markdown answer).
// Pure string building so it is unit-tested without VS Code. Answers are untrusted model output:
// markdown-it runs with `html: false` (raw HTML is escaped), links go through resolveLink in
// the extension, and the page's CSP admits only our own nonce'd style and script.

import MarkdownIt from "markdown-it";
import type { ToolCallRecord, Usage } from "./protocol";
import { formatDuration, summarizeArguments } from "./summary";

export type EntryState = "working" | "done" | "cancelled" | "error";
export type CallState = "running" | "ok" | "failed";

export interface ToolCallView {
  id: string;
  name: string;
  arguments: string;
  state: CallState;
  durationMs?: number;
  output?: string;
}

export interface ConversationEntry {
  prompt: string;
  state: EntryState;
  answer?: string;
  error?: string;
  progress?: string;
  stopReason?: string;
  usage?: Usage;
  toolCalls: ToolCallView[];
}

export interface Conversation {
  sessionId?: string | undefined;
  /** Shown above the entries, e.g. "The server restarted; this is a new conversation." */
  notice?: string | undefined;
  entries: ConversationEntry[];
}

export function toolCallViews(records: readonly ToolCallRecord[]): ToolCallView[] {
  return records.map((r) => {
    const view: ToolCallView = {
      id: r.id,
      name: r.name,
      arguments: r.arguments,
      state: r.ok ? "ok" : "failed",
    };
    if (r.durationMs !== undefined) view.durationMs = r.durationMs;
    if (r.output !== undefined) view.output = r.output;
    return view;
  });
}

const md = new MarkdownIt({ html: false, linkify: true, typographer: false });
// markdown-it refuses file: links by default; answers may cite files that way. Script and
// data URLs stay refused.
md.validateLink = (url: string) => !/^\s*(javascript|vbscript|data):/i.test(url);

export function renderMarkdown(text: string): string {
  return md.render(text);
}

export function escapeHtml(text: string): string {
  return text
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&#39;");
}

const CALL_MARK: Record<CallState, string> = { running: "…", ok: "✓", failed: "✗" };
const CALL_WORD: Record<CallState, string> = { running: "running", ok: "ok", failed: "failed" };

function renderToolCall(call: ToolCallView): string {
  const summary = summarizeArguments(call.arguments, 160);
  const duration = formatDuration(call.durationMs);
  const title = call.output ? ` title="${escapeHtml(call.output.slice(0, 500))}"` : "";
  return (
    `<li class="call ${call.state}"${title}>` +
    `<span class="mark">${CALL_MARK[call.state]}</span> ` +
    `<code class="tool">${escapeHtml(call.name)}</code> ` +
    `<span class="args">${escapeHtml(summary)}</span> ` +
    `<span class="status">${CALL_WORD[call.state]}${duration ? " · " + duration : ""}</span>` +
    `</li>`
  );
}

function renderToolCalls(calls: readonly ToolCallView[], key: string): string {
  if (calls.length === 0) return "";
  const failed = calls.filter((c) => c.state === "failed").length;
  const running = calls.filter((c) => c.state === "running").length;
  const notes = [failed ? `${failed} failed` : "", running ? `${running} running` : ""]
    .filter((n) => n !== "")
    .join(", ");
  const label = `${calls.length} tool call${calls.length === 1 ? "" : "s"}${notes ? ` (${notes})` : ""}`;
  return (
    `<details class="tools" data-key="${key}"><summary>${escapeHtml(label)}</summary>` +
    `<ol>${calls.map(renderToolCall).join("")}</ol></details>`
  );
}

function renderMeta(entry: ConversationEntry): string {
  const parts: string[] = [];
  if (entry.stopReason && entry.stopReason !== "end_turn") {
    parts.push(
      entry.stopReason === "max_turns"
        ? "stopped: reached the turn limit (agentLsp.maxTurns)"
        : `stopped: ${entry.stopReason}`,
    );
  }
  if (entry.usage?.total_tokens !== undefined) parts.push(`${entry.usage.total_tokens} tokens`);
  return parts.length ? `<div class="meta">${escapeHtml(parts.join(" · "))}</div>` : "";
}

function renderEntry(entry: ConversationEntry, index: number): string {
  const prompt = `<div class="prompt"><div class="who">You</div><div class="text">${escapeHtml(entry.prompt)}</div></div>`;
  const tools = renderToolCalls(entry.toolCalls, `tools-${index}`);
  let body: string;
  switch (entry.state) {
    case "working":
      body = `<div class="working">Working… ${escapeHtml(entry.progress ?? "")}</div>`;
      break;
    case "cancelled":
      body = `<div class="outcome cancelled">Cancelled.</div>`;
      break;
    case "error":
      body = `<div class="outcome error">Error: ${escapeHtml(entry.error ?? "unknown error")}</div>`;
      break;
    default:
      body = `<div class="answer markdown-body">${renderMarkdown(entry.answer ?? "")}</div>`;
  }
  return `<section class="entry ${entry.state}" data-index="${index}">${prompt}${tools}${body}${renderMeta(entry)}</section>`;
}

/** The inner HTML of `#conversation`, also sent alone to the page for live updates. */
export function renderConversationBody(conversation: Conversation): string {
  const notice = conversation.notice
    ? `<div class="notice">${escapeHtml(conversation.notice)}</div>`
    : "";
  if (conversation.entries.length === 0) {
    return (
      notice +
      `<div class="empty">No conversation yet. Run <b>Agent: Ask</b> (Ctrl+Alt+A) to start one.</div>`
    );
  }
  return notice + conversation.entries.map(renderEntry).join("");
}

export interface PageOptions {
  /** The webview's `cspSource` (for images served from the extension, none today). */
  cspSource: string;
  /** A fresh random nonce per page; only our own <style> and <script> carry it. */
  nonce: string;
}

const STYLE = `
body { font-family: var(--vscode-font-family); font-size: var(--vscode-font-size);
  color: var(--vscode-foreground); background: var(--vscode-editor-background); padding: 0 16px 24px; }
.entry { border-bottom: 1px solid var(--vscode-panel-border, #8884); padding: 12px 0; }
.prompt .who { font-weight: 600; opacity: .7; font-size: .85em; text-transform: uppercase; }
.prompt .text { white-space: pre-wrap; margin: 4px 0 8px; padding: 6px 10px; border-radius: 4px;
  background: var(--vscode-textBlockQuote-background, #8882); }
details.tools { margin: 4px 0 8px; font-size: .92em; }
details.tools summary { cursor: pointer; opacity: .85; }
details.tools ol { margin: 4px 0; padding-left: 22px; }
.call .args { font-family: var(--vscode-editor-font-family); opacity: .85; }
.call .status { opacity: .7; }
.call.ok .mark { color: var(--vscode-testing-iconPassed, #3a3); }
.call.failed .mark, .call.failed .status { color: var(--vscode-errorForeground, #d33); }
.working { opacity: .8; font-style: italic; }
.outcome.cancelled { color: var(--vscode-editorWarning-foreground, #c90); }
.outcome.error, .notice { color: var(--vscode-errorForeground, #d33); }
.notice { margin: 8px 0; }
.meta { font-size: .85em; opacity: .65; margin-top: 6px; }
.empty { opacity: .7; margin-top: 16px; }
.answer pre { background: var(--vscode-textCodeBlock-background, #8882); padding: 8px; overflow-x: auto; }
.answer code { font-family: var(--vscode-editor-font-family); }
.answer a, a { color: var(--vscode-textLink-foreground); cursor: pointer; }
.answer table { border-collapse: collapse; } .answer td, .answer th { border: 1px solid #8886; padding: 2px 6px; }
`;

// Our only script: live updates from the extension and link clicks to it. It never evaluates
// anything from the answer, and the CSP blocks any other script.
const SCRIPT = `
const vscode = acquireVsCodeApi();
const root = document.getElementById('conversation');
function render(html) {
  const open = new Set(Array.from(root.querySelectorAll('details[open]')).map(d => d.dataset.key));
  root.innerHTML = html;
  for (const d of root.querySelectorAll('details')) if (open.has(d.dataset.key)) d.open = true;
  window.scrollTo(0, document.body.scrollHeight);
}
window.addEventListener('message', event => {
  const message = event.data;
  if (message && message.type === 'render' && typeof message.html === 'string') render(message.html);
});
document.addEventListener('click', event => {
  const link = event.target instanceof Element ? event.target.closest('a') : null;
  if (!link) return;
  event.preventDefault();
  const href = link.getAttribute('href');
  if (href) vscode.postMessage({ type: 'openLink', href });
});
window.scrollTo(0, document.body.scrollHeight);
vscode.postMessage({ type: 'ready' });
`;

export function renderPage(conversation: Conversation, options: PageOptions): string {
  const nonce = escapeHtml(options.nonce);
  const csp = [
    "default-src 'none'",
    `img-src ${options.cspSource} data:`,
    `style-src 'nonce-${nonce}'`,
    `script-src 'nonce-${nonce}'`,
  ].join("; ");
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<title>Agent</title>
<style nonce="${nonce}">${STYLE}</style>
</head>
<body>
<main id="conversation">${renderConversationBody(conversation)}</main>
<script nonce="${nonce}">${SCRIPT}</script>
</body>
</html>`;
}
