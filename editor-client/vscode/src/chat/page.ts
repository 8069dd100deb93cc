// The chat view's page: layout, styles (theme colours only, via VS Code's CSS variables) and
// the script tag for dist/webview.js. The CSP admits our nonce'd style and that one script.

import { escapeHtml } from "./markdown";

export interface PageOptions {
  /** The webview's `cspSource`. */
  cspSource: string;
  /** A fresh random nonce per page. */
  nonce: string;
  /** The URI of dist/webview.js as the webview sees it. */
  scriptUri: string;
  /** The conversation's HTML at first paint (renderConversation). */
  body: string;
}

// highlight.js classes -> the theme's colours. VS Code gives webviews no token colours, so
// these come from the debug-hover and symbol-icon colours every theme defines (light, dark
// and high-contrast variants), with the Dark+ values as fallbacks.
const HIGHLIGHT = `
.hljs-keyword, .hljs-literal, .hljs-selector-tag, .hljs-doctag { color: var(--vscode-debugTokenExpression-boolean, #569cd6); }
.hljs-string, .hljs-regexp, .hljs-template-tag, .hljs-char.escape_ { color: var(--vscode-debugTokenExpression-string, #ce9178); }
.hljs-number, .hljs-symbol, .hljs-bullet { color: var(--vscode-debugTokenExpression-number, #b5cea8); }
.hljs-title.function_, .hljs-title.function_.invoke__, .hljs-selector-id { color: var(--vscode-symbolIcon-functionForeground, #dcdcaa); }
.hljs-title, .hljs-title.class_, .hljs-type, .hljs-built_in, .hljs-selector-class { color: var(--vscode-symbolIcon-classForeground, #4ec9b0); }
.hljs-variable, .hljs-attr, .hljs-attribute, .hljs-params, .hljs-property, .hljs-template-variable { color: var(--vscode-symbolIcon-variableForeground, #9cdcfe); }
.hljs-meta, .hljs-meta .hljs-keyword, .hljs-tag, .hljs-name { color: var(--vscode-debugTokenExpression-name, #c586c0); }
.hljs-comment, .hljs-quote { color: var(--vscode-descriptionForeground, #6a9955); font-style: italic; }
.hljs-addition { color: var(--vscode-gitDecoration-addedResourceForeground, #81b88b); }
.hljs-deletion { color: var(--vscode-gitDecoration-deletedResourceForeground, #c74e39); }
.hljs-section, .hljs-strong { font-weight: 600; }
.hljs-emphasis { font-style: italic; }
`;

const STYLE = `
* { box-sizing: border-box; }
html, body { height: 100%; margin: 0; padding: 0; }
body { font-family: var(--vscode-font-family); font-size: var(--vscode-font-size); color: var(--vscode-foreground);
  display: flex; flex-direction: column; overflow: hidden; }
#conversation { flex: 1 1 auto; overflow-y: auto; overflow-x: hidden; padding: 4px 12px 16px; min-height: 0; }
.entry { padding: 10px 0 12px; border-bottom: 1px solid var(--vscode-widget-border, var(--vscode-panel-border, #8884)); }
/* Chunks of entries out of sight are not laid out or painted (the page script makes them). */
.chunk { content-visibility: auto; contain-intrinsic-size: auto 2000px; }
.chunk:last-child .entry:last-child { border-bottom: none; }
.prompt { margin: 2px 0 8px; }
.prompt-text { white-space: pre-wrap; overflow-wrap: anywhere; padding: 6px 10px; border-radius: 4px;
  background: var(--vscode-input-background, #8881); color: var(--vscode-input-foreground, inherit);
  border: 1px solid var(--vscode-input-border, var(--vscode-widget-border, #8886));
  border-left: 3px solid var(--vscode-focusBorder, #0078d4); }
.items > * { margin: 4px 0; }
.markdown-body { overflow-wrap: anywhere; line-height: 1.45; }
.markdown-body > :first-child { margin-top: 0; }
.markdown-body > :last-child { margin-bottom: 0; }
.markdown-body table { display: block; overflow-x: auto; border-collapse: collapse; }
.markdown-body td, .markdown-body th { border: 1px solid var(--vscode-widget-border, #8886); padding: 2px 6px; }
.markdown-body code { font-family: var(--vscode-editor-font-family); font-size: var(--vscode-editor-font-size, inherit); }
.markdown-body :not(pre) > code { padding: 1px 4px; border-radius: 3px; background: var(--vscode-textPreformat-background, #8882); }
.markdown-body blockquote { margin: 6px 0; padding: 2px 10px; border-left: 4px solid var(--vscode-textBlockQuote-border, #8886);
  background: var(--vscode-textBlockQuote-background, transparent); }
a { color: var(--vscode-textLink-foreground); cursor: pointer; text-decoration: none; }
a:hover { text-decoration: underline; color: var(--vscode-textLink-activeForeground, var(--vscode-textLink-foreground)); }
a.path-link code { color: var(--vscode-textLink-foreground); }
.code-block { margin: 8px 0; border: 1px solid var(--vscode-widget-border, #8884); border-radius: 4px;
  background: var(--vscode-textCodeBlock-background, #8881); overflow: hidden; }
.code-bar { display: flex; gap: 6px; align-items: center; padding: 2px 4px 2px 8px; font-size: .85em;
  border-bottom: 1px solid var(--vscode-widget-border, #8883); }
.code-lang { flex: 1; opacity: .7; }
.code-bar .code-button:first-of-type { margin-left: auto; }
.code-button { background: none; border: none; color: var(--vscode-textLink-foreground); cursor: pointer; padding: 2px 6px;
  font: inherit; border-radius: 3px; }
.code-button:hover { background: var(--vscode-toolbar-hoverBackground, #8883); }
.code-block pre { margin: 0; padding: 8px 10px; overflow-x: auto; background: none; }
.code-block pre code, pre code.hljs { display: block; background: none; padding: 0; white-space: pre;
  color: var(--vscode-editor-foreground); font-family: var(--vscode-editor-font-family); font-size: var(--vscode-editor-font-size, inherit); }
.disclosure:not(.open) > .disclosure-body { display: none; }
.disclosure-head { cursor: pointer; }
.disclosure-head:focus-visible { outline: 1px solid var(--vscode-focusBorder, #0078d4); outline-offset: -1px; }
.call { border-radius: 4px; font-size: .95em; }
/* A row's header is one line. In a narrow view the status gives way first (ellipsis, a
   hundred times faster), the command last: "bash make test  failed · 1…", never "bash t.
   failed · 1ms · waited 11.3s". The tool's title never shrinks below its width, up to 40% of
   the row (a long MCP title is cut there): "bash" stays whole, never "b…". */
.call > .disclosure-head { padding: 2px 4px; border-radius: 4px; display: flex; gap: .4em; align-items: baseline;
  white-space: nowrap; overflow: hidden; }
.call > .disclosure-head > * { flex: none; }
.call > .disclosure-head > .args { flex: 0 1 auto; min-width: 0; overflow: hidden; text-overflow: ellipsis; }
.call > .disclosure-head > .tool { flex: none; max-width: 40%; overflow: hidden; text-overflow: ellipsis; }
.call > .disclosure-head > .status { flex: 0 100 auto; min-width: 2em; overflow: hidden; text-overflow: ellipsis; }
.call > .disclosure-head::before { content: "▸"; display: inline-block; width: 1em; opacity: .6; }
.call.open > .disclosure-head::before { content: "▾"; }
.call > .disclosure-head:hover { background: var(--vscode-list-hoverBackground, #8882); }
.call .tool { font-family: var(--vscode-editor-font-family); }
.call .args { font-family: var(--vscode-editor-font-family); opacity: .85; }
.call .status { opacity: .65; font-size: .92em; }
.call.ok .mark { color: var(--vscode-testing-iconPassed, #3a3); }
.call.failed .mark, .call.failed .status, .call-error { color: var(--vscode-errorForeground, #d33); }
.call.running .mark, .call.waiting .mark { color: var(--vscode-progressBar-background, #0078d4); }
.call-error { display: block; margin: 0 0 0 1.6em; font-size: .92em; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
.call-body { margin: 4px 0 8px 1.2em; padding: 6px 8px; border-left: 2px solid var(--vscode-widget-border, #8885); }
.label { font-size: .8em; text-transform: uppercase; letter-spacing: .04em; opacity: .6; margin: 4px 0 2px; }
.arg { margin: 2px 0; }
.arg-key { font-family: var(--vscode-editor-font-family); opacity: .7; font-size: .9em; }
pre.arg-value, pre.output { margin: 2px 0 6px; padding: 6px 8px; border-radius: 3px; white-space: pre-wrap; overflow-wrap: anywhere;
  background: var(--vscode-textCodeBlock-background, #8881); font-family: var(--vscode-editor-font-family);
  font-size: var(--vscode-editor-font-size, inherit); max-height: 24em; overflow-y: auto; }
/* Output as a terminal shows it: lines unwrapped (scroll sideways), the tail in full height. */
pre.output { white-space: pre; overflow-wrap: normal; overflow-x: auto; max-height: 40em; margin-bottom: 2px; }
/* An edit's diff, a write's first lines: in the row, without expanding it. */
.edit-preview { margin: 2px 0 4px 1.6em; }
.edit-head { font-size: .92em; }
.edit-count { color: var(--vscode-descriptionForeground); }
pre.diff { margin: 2px 0; padding: 4px 0; border-radius: 3px; overflow-x: auto; white-space: pre;
  background: var(--vscode-textCodeBlock-background, #8881); font-family: var(--vscode-editor-font-family);
  font-size: var(--vscode-editor-font-size, inherit); }
.diff-line { display: block; padding: 0 8px; }
.diff-line.add { background: var(--vscode-diffEditor-insertedLineBackground, #9bb95533); }
.diff-line.del { background: var(--vscode-diffEditor-removedLineBackground, #ff000033); }
.diff-line.ctx { opacity: .75; }
.edit-more { font-size: .9em; color: var(--vscode-descriptionForeground); }
.output-bar { display: flex; flex-wrap: wrap; gap: 8px; align-items: center; font-size: .9em; color: var(--vscode-descriptionForeground); }
.output-bar.cut-note { color: var(--vscode-editorWarning-foreground, #c90); }
.call-actions { margin-top: 4px; }
.attached { margin: 3px 0 0 2px; font-size: .85em; color: var(--vscode-descriptionForeground); }
.note { font-size: .9em; color: var(--vscode-descriptionForeground); font-style: italic; }
/* The answer being written: a caret after the last text of a running ask. */
.entry.working .items > .answer:last-child > :last-child:not(.md-open)::after,
.entry.working .items > .answer:last-child > .md-open > :last-child::after { content: "▍"; opacity: .6; animation: blink 1s steps(2) infinite; }
@keyframes blink { 50% { opacity: 0; } }
#pinned .pinned { display: inline-flex; gap: 4px; align-items: center; padding: 0 6px; border-radius: 3px;
  background: var(--vscode-badge-background, #8883); color: var(--vscode-badge-foreground, inherit); }
#pinned .pinned button { background: none; border: none; color: inherit; cursor: pointer; padding: 0 2px; font: inherit; }
.reasoning > .disclosure-head { opacity: .7; }
.reasoning > .disclosure-head::before { content: "▸ "; }
.reasoning.open > .disclosure-head::before { content: "▾ "; }
.reasoning .markdown-body { opacity: .8; padding-left: 1em; }
/* The block of a streaming answer still being written. */
.md-open { display: contents; }
.working-status { opacity: .8; font-style: italic; margin-top: 6px; }
.spinner { display: inline-block; width: .8em; height: .8em; border: 2px solid currentColor; border-right-color: transparent;
  border-radius: 50%; animation: spin 1s linear infinite; vertical-align: -1px; }
@keyframes spin { to { transform: rotate(360deg); } }
.outcome { margin-top: 6px; overflow-wrap: anywhere; white-space: pre-wrap; }
.outcome.cancelled { color: var(--vscode-editorWarning-foreground, #c90); }
.outcome.error, .notice { color: var(--vscode-errorForeground, #d33); }
.stop-note { margin-top: 6px; color: var(--vscode-editorWarning-foreground, #c90); }
.notice { margin: 8px 0; }
.notice.info { color: var(--vscode-foreground); border-left: 3px solid var(--vscode-notificationsInfoIcon-foreground, #3794ff); padding-left: 8px; }
/* An undone ask: still readable, struck through, marked. */
.entry.undone .prompt-text, .entry.undone .items { text-decoration: line-through; opacity: .55; }
.entry.undone .tail { opacity: .55; }
.undone-label { display: inline-block; font-size: .8em; padding: 0 6px; margin-bottom: 3px; border-radius: 3px;
  background: var(--vscode-badge-background, #8883); color: var(--vscode-badge-foreground, inherit); }
.footer { margin-top: 6px; font-size: .85em; color: var(--vscode-descriptionForeground); opacity: .85; }
.buttons { display: flex; flex-wrap: wrap; gap: 6px; margin-top: 6px; }
.button { font: inherit; padding: 3px 10px; border-radius: 2px; cursor: pointer; border: 1px solid var(--vscode-button-border, transparent); }
.button.primary { background: var(--vscode-button-background); color: var(--vscode-button-foreground); }
.button.primary:hover { background: var(--vscode-button-hoverBackground); }
.button.secondary { background: var(--vscode-button-secondaryBackground, #8883); color: var(--vscode-button-secondaryForeground, inherit); }
.button.secondary:hover { background: var(--vscode-button-secondaryHoverBackground, #8885); }
.card { margin: 6px 0; padding: 8px 10px; border-radius: 4px; border: 1px solid var(--vscode-widget-border, #8886);
  background: var(--vscode-editorWidget-background, #8881); }
.card.warning { border-color: var(--vscode-editorWarning-foreground, #c90); }
.card.error { border-color: var(--vscode-errorForeground, #d33); }
.buttons .changes { align-self: center; opacity: .8; }
.card-title { font-weight: 600; margin-bottom: 4px; }
.card-code code { font-family: var(--vscode-editor-font-family); font-size: var(--vscode-editor-font-size, inherit); }
.button:focus-visible { outline: 1px solid var(--vscode-focusBorder, #0078d4); outline-offset: 1px; }
.card-body { white-space: pre-wrap; overflow-wrap: anywhere; }
.empty { opacity: .85; margin-top: 12px; }
.muted { opacity: .65; }
#jump { position: absolute; right: 16px; bottom: 96px; z-index: 2; font: inherit; padding: 3px 10px; border-radius: 12px; cursor: pointer;
  border: 1px solid var(--vscode-button-border, transparent); background: var(--vscode-button-background); color: var(--vscode-button-foreground);
  box-shadow: 0 1px 4px var(--vscode-widget-shadow, #0004); }
#composer { position: relative; flex: 0 0 auto; padding: 8px 12px 10px; border-top: 1px solid var(--vscode-widget-border, var(--vscode-panel-border, #8884)); }
#status { font-size: .85em; opacity: .8; margin-bottom: 4px; font-style: italic; }
#pinned { font-size: .9em; margin-bottom: 4px; }
#attach { display: flex; gap: 4px; font-size: .85em; margin-bottom: 4px; }
.chip.active-file { display: inline-flex; gap: 2px; align-items: center; }
.chip.active-file button { background: none; border: none; color: inherit; cursor: pointer; padding: 0 2px; font: inherit; }
.chip.active-file.off { opacity: .6; font-style: italic; }
.input-row { display: flex; gap: 6px; align-items: flex-end; }
#input { flex: 1; resize: none; min-height: 2.4em; font: inherit; padding: 5px 8px; border-radius: 2px;
  color: var(--vscode-input-foreground); background: var(--vscode-input-background);
  border: 1px solid var(--vscode-input-border, var(--vscode-widget-border, #8886)); outline: none; }
#input:focus { border-color: var(--vscode-focusBorder); }
#input::placeholder { color: var(--vscode-input-placeholderForeground); }
#send { font: inherit; padding: 5px 12px; border-radius: 2px; cursor: pointer; border: 1px solid var(--vscode-button-border, transparent);
  background: var(--vscode-button-background); color: var(--vscode-button-foreground); }
#send:hover { background: var(--vscode-button-hoverBackground); }
#send.stop { background: var(--vscode-button-secondaryBackground); color: var(--vscode-button-secondaryForeground); }
.chips { display: flex; flex-wrap: wrap; gap: 4px; align-items: center; font-size: .85em; margin-bottom: 4px; }
.chips-label { opacity: .7; }
.chip { display: inline-flex; gap: 4px; align-items: center; padding: 0 6px; border-radius: 3px; font: inherit; max-width: 100%;
  overflow: hidden; text-overflow: ellipsis; white-space: nowrap; border: 1px solid var(--vscode-widget-border, #8884);
  background: var(--vscode-badge-background, #8883); color: var(--vscode-badge-foreground, inherit); }
button.chip { cursor: pointer; }
button.chip:hover { background: var(--vscode-toolbar-hoverBackground, #8885); }
.chip.cut { border-color: var(--vscode-editorWarning-foreground, #c90); }
.chip.skills { opacity: .85; }
.chip.mention button { background: none; border: none; color: inherit; cursor: pointer; padding: 0 2px; font: inherit; }
#picker { position: absolute; left: 12px; right: 12px; bottom: 100%; z-index: 3; max-height: 40vh; overflow-y: auto;
  padding: 2px 0; border-radius: 3px; border: 1px solid var(--vscode-editorSuggestWidget-border, var(--vscode-widget-border, #8886));
  background: var(--vscode-editorSuggestWidget-background, var(--vscode-editorWidget-background, #252526));
  color: var(--vscode-editorSuggestWidget-foreground, inherit); box-shadow: 0 2px 8px var(--vscode-widget-shadow, #0006); }
.pick { padding: 3px 8px; cursor: pointer; overflow-wrap: anywhere; }
.pick.active { background: var(--vscode-editorSuggestWidget-selectedBackground, var(--vscode-list-activeSelectionBackground, #04395e));
  color: var(--vscode-editorSuggestWidget-selectedForeground, var(--vscode-list-activeSelectionForeground, inherit)); }
.pick-name { font-family: var(--vscode-editor-font-family); }
.pick-hint { margin-left: 6px; opacity: .7; font-style: italic; }
.pick-badge { float: right; margin-left: 8px; font-size: .85em; opacity: .6; }
.pick-detail { font-size: .88em; opacity: .75; }
.pick-empty { padding: 3px 8px; opacity: .7; font-style: italic; }
[hidden] { display: none !important; }
${HIGHLIGHT}
`;

export function renderPage(options: PageOptions): string {
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
<main id="conversation" aria-live="polite">${options.body}</main>
<button id="jump" hidden>↓ Jump to latest</button>
<footer id="composer">
<div id="status" hidden></div>
<div id="project" class="chips" hidden></div>
<div id="pinned" hidden></div>
<div id="mentions" class="chips" hidden></div>
<div id="picker" hidden></div>
<div id="attach" hidden></div>
<div class="input-row">
<textarea id="input" rows="2" placeholder="Ask the agent (Enter to send, Shift+Enter for a new line)" aria-label="Prompt"></textarea>
<button id="send" title="Send (Enter)">Send</button>
</div>
</footer>
<script nonce="${nonce}" src="${escapeHtml(options.scriptUri)}"></script>
</body>
</html>`;
}
