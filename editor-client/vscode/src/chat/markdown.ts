// Answers as HTML: Markdown (markdown-it, raw HTML escaped), code blocks highlighted by
// highlight.js into class names the view colours from the theme, and `path:line` references
// in plain text and inline code turned into links when the file exists in the workspace.
// Answers are untrusted model output: nothing here lets HTML or script of theirs through.

import hljs from "highlight.js/lib/core";
import bash from "highlight.js/lib/languages/bash";
import c from "highlight.js/lib/languages/c";
import cpp from "highlight.js/lib/languages/cpp";
import csharp from "highlight.js/lib/languages/csharp";
import css from "highlight.js/lib/languages/css";
import diff from "highlight.js/lib/languages/diff";
import dockerfile from "highlight.js/lib/languages/dockerfile";
import go from "highlight.js/lib/languages/go";
import ini from "highlight.js/lib/languages/ini";
import java from "highlight.js/lib/languages/java";
import javascript from "highlight.js/lib/languages/javascript";
import json from "highlight.js/lib/languages/json";
import kotlin from "highlight.js/lib/languages/kotlin";
import lua from "highlight.js/lib/languages/lua";
import makefile from "highlight.js/lib/languages/makefile";
import markdown from "highlight.js/lib/languages/markdown";
import php from "highlight.js/lib/languages/php";
import plaintext from "highlight.js/lib/languages/plaintext";
import powershell from "highlight.js/lib/languages/powershell";
import python from "highlight.js/lib/languages/python";
import ruby from "highlight.js/lib/languages/ruby";
import rust from "highlight.js/lib/languages/rust";
import scss from "highlight.js/lib/languages/scss";
import shell from "highlight.js/lib/languages/shell";
import sql from "highlight.js/lib/languages/sql";
import swift from "highlight.js/lib/languages/swift";
import typescript from "highlight.js/lib/languages/typescript";
import xml from "highlight.js/lib/languages/xml";
import yaml from "highlight.js/lib/languages/yaml";
import MarkdownIt, { type StateCore, type Token } from "markdown-it";

const LANGUAGES = {
  bash, c, cpp, csharp, css, diff, dockerfile, go, ini, java, javascript, json, kotlin, lua,
  makefile, markdown, php, plaintext, powershell, python, ruby, rust, scss, shell, sql, swift,
  typescript, xml, yaml,
};
for (const [name, language] of Object.entries(LANGUAGES)) hljs.registerLanguage(name, language);
hljs.registerAliases(["toml"], { languageName: "ini" });
hljs.registerAliases(["sh", "zsh", "console"], { languageName: "bash" });

export function escapeHtml(text: string): string {
  return text
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&#39;");
}

/** Whether a workspace-relative (or absolute) path names an existing file. */
export type PathExists = (path: string) => boolean;

interface Env {
  [key: PropertyKey]: unknown;
  exists?: PathExists;
}

/** One code block: highlighted, with Copy and Insert buttons the view wires up. */
export function renderCodeBlock(code: string, language: string): string {
  const lang = language.trim().split(/\s+/)[0]?.toLowerCase() ?? "";
  let body: string;
  if (lang !== "" && hljs.getLanguage(lang)) {
    body = hljs.highlight(code, { language: lang, ignoreIllegals: true }).value;
  } else {
    body = escapeHtml(code);
  }
  const label = lang === "" ? "" : `<span class="code-lang">${escapeHtml(lang)}</span>`;
  return (
    `<div class="code-block">` +
    `<div class="code-bar">${label}` +
    `<button class="code-button" data-action="copyCode" title="Copy the code">Copy</button>` +
    `<button class="code-button" data-action="insertCode" title="Insert the code at the cursor of the last active editor">Insert at Cursor</button>` +
    `</div>` +
    `<pre><code class="hljs${lang ? ` language-${escapeHtml(lang)}` : ""}">${body}</code></pre>` +
    `</div>`
  );
}

// A file reference: a path with a directory or an extension, then `:line` or `:line:col`.
// Not preceded by a word character, slash or dot (part of a URL or a longer word).
const PATH_LINE = /(?<![\w/.:-])((?:\.{1,2}\/|\/)?(?:[\w@.+-]+\/)*[\w@+-][\w@.+-]*\.[\w]+|(?:\.{1,2}\/|\/)?(?:[\w@.+-]+\/)+[\w@.+-]+):(\d+)(?::(\d+))?(?![\w/])/g;
// In inline code the whole span is the reference; the line is optional there.
const WHOLE_PATH = /^((?:\.{1,2}\/|\/)?(?:[\w@.+-]+\/)*[\w@.+-]+)(?::(\d+)(?::(\d+))?)?$/;

export interface PathRef {
  start: number;
  end: number;
  path: string;
  line: number;
  column?: number;
}

/** `path:line` references in plain text whose path exists. */
export function findPathRefs(text: string, exists: PathExists): PathRef[] {
  const refs: PathRef[] = [];
  for (const m of text.matchAll(PATH_LINE)) {
    const path = m[1] ?? "";
    if (path === "" || !exists(path)) continue;
    const ref: PathRef = { start: m.index, end: m.index + m[0].length, path, line: Number(m[2]) };
    if (m[3] !== undefined) ref.column = Number(m[3]);
    refs.push(ref);
  }
  return refs;
}

function refHref(path: string, line?: string | number, column?: string | number): string {
  return `${path}${line !== undefined ? `:${line}` : ""}${column !== undefined ? `:${column}` : ""}`;
}

/** Split text tokens at `path:line` references into link tokens (outside existing links). */
function linkPathsRule(state: StateCore): void {
  const exists = (state.env as Env).exists;
  if (!exists) return;
  for (const block of state.tokens) {
    if (block.type !== "inline" || !block.children) continue;
    const out: Token[] = [];
    let linkDepth = 0;
    for (const token of block.children) {
      if (token.type === "link_open") linkDepth++;
      if (token.type === "link_close") linkDepth--;
      if (token.type === "code_inline" && linkDepth === 0) {
        const m = WHOLE_PATH.exec(token.content.trim());
        const path = m?.[1];
        if (m && path && (m[2] !== undefined || path.includes("/") || path.includes(".")) && exists(path)) {
          const open = new state.Token("link_open", "a", 1);
          open.attrs = [["href", refHref(path, m[2], m[3])], ["class", "path-link"]];
          out.push(open, token, new state.Token("link_close", "a", -1));
          continue;
        }
      }
      if (token.type !== "text" || linkDepth > 0) {
        out.push(token);
        continue;
      }
      const refs = findPathRefs(token.content, exists);
      if (refs.length === 0) {
        out.push(token);
        continue;
      }
      let at = 0;
      for (const ref of refs) {
        if (ref.start > at) out.push(textToken(state, token.content.slice(at, ref.start)));
        const open = new state.Token("link_open", "a", 1);
        open.attrs = [["href", refHref(ref.path, ref.line, ref.column)], ["class", "path-link"]];
        out.push(open, textToken(state, token.content.slice(ref.start, ref.end)), new state.Token("link_close", "a", -1));
        at = ref.end;
      }
      if (at < token.content.length) out.push(textToken(state, token.content.slice(at)));
    }
    block.children = out;
  }
}

function textToken(state: StateCore, content: string): Token {
  const token = new state.Token("text", "", 0);
  token.content = content;
  return token;
}

const md = new MarkdownIt({
  html: false,
  linkify: true,
  typographer: false,
  highlight: (code, language) => renderCodeBlock(code, language),
});
// markdown-it refuses file: links by default; answers may cite files that way. Script and
// data URLs stay refused.
md.validateLink = (url: string) => !/^\s*(javascript|vbscript|data):/i.test(url);
md.core.ruler.push("path_links", (state) => {
  linkPathsRule(state);
  return true;
});
// A highlight() result that starts with <pre is used as is; ours starts with the bar's <div>.
md.renderer.rules.fence = (tokens, index) => {
  const token = tokens[index];
  if (!token) return "";
  return renderCodeBlock(token.content, token.info);
};
md.renderer.rules.code_block = (tokens, index) => renderCodeBlock(tokens[index]?.content ?? "", "");

export function renderMarkdown(text: string, exists?: PathExists): string {
  const env: Env = {};
  if (exists) env.exists = exists;
  return md.render(text, env);
}

/** Plain text (errors, notices) escaped, with its URLs clickable. */
export function renderPlainText(text: string): string {
  const parts: string[] = [];
  let at = 0;
  for (const m of text.matchAll(/\bhttps?:\/\/[^\s<>"'`]+[^\s<>"'`.,;:!?)\]]/g)) {
    parts.push(escapeHtml(text.slice(at, m.index)));
    parts.push(`<a href="${escapeHtml(m[0])}">${escapeHtml(m[0])}</a>`);
    at = m.index + m[0].length;
  }
  parts.push(escapeHtml(text.slice(at)));
  return parts.join("");
}

// Top-level blocks after which text that follows cannot change them: a closed fence, a
// heading, a rule. Other blocks (paragraphs, lists, quotes, tables) take lazy continuation
// lines, so they are done only once a blank line follows.
const CLOSED_BLOCKS = new Set(["fence", "heading_open", "hr"]);

export interface StreamRender {
  /** HTML of the blocks that became done with this update (to append). */
  appended: string;
  /** HTML of every done block so far. */
  done: string;
  /** HTML of the block still being written (re-rendered each update). */
  open: string;
  /** The text did not extend the previous one: `done` was rendered anew. */
  restarted: boolean;
}

/**
 * The Markdown of a text that grows at its end (a streamed answer), block by block: done
 * top-level blocks are rendered once and kept; only the block still being written is parsed
 * and rendered again, so an update costs the same however long the answer is. Reference-style
 * link definitions reach only the blocks after them here; the full render when the ask ends
 * (renderMarkdown) has them everywhere.
 */
export class MarkdownStream {
  /** The text of the open part (after the done blocks), and the length of the whole text. */
  private rest = "";
  private length = 0;
  private done = "";

  /** Render `text` from the start (a new text, or one that was replaced). */
  update(text: string, exists?: PathExists): StreamRender {
    this.rest = text;
    this.length = text.length;
    this.done = "";
    return { ...this.render(exists), appended: this.done, restarted: true };
  }

  /**
   * `text` is the text before plus `delta`: only the open part is looked at (never the whole
   * text, which would also copy a long string per delta). Anything else starts over.
   */
  append(text: string, delta: string, exists?: PathExists): StreamRender {
    if (text.length !== this.length + delta.length) return this.update(text, exists);
    this.rest += delta;
    this.length = text.length;
    return this.render(exists);
  }

  private render(exists: PathExists | undefined): StreamRender {
    const rest = this.rest;
    const env: Env = {};
    if (exists) env.exists = exists;
    const tokens = md.parse(rest, env);
    const lines = lineStarts(rest);
    // Where the last block that is certainly done ends: the start of a later top-level block
    // after a blank line, or after a block that cannot continue.
    let cutToken = -1;
    let cutLine = 0;
    let previous: Token | undefined;
    for (let i = 0; i < tokens.length; i++) {
      const token = tokens[i] as Token;
      if (token.level !== 0 || token.nesting === -1 || !token.map) continue;
      const line = token.map[0];
      if (previous && (CLOSED_BLOCKS.has(previous.type) || blankLineBefore(rest, lines, line))) {
        cutToken = i;
        cutLine = line;
      }
      previous = token;
    }
    let appended = "";
    let openTokens = tokens;
    if (cutToken > 0) {
      appended = md.renderer.render(tokens.slice(0, cutToken), md.options, env);
      openTokens = tokens.slice(cutToken);
      this.rest = rest.slice(lines[cutLine] ?? rest.length);
      this.done += appended;
    }
    const open = md.renderer.render(openTokens, md.options, env);
    return { appended, done: this.done, open, restarted: false };
  }
}

/** Where each line of `text` starts. */
function lineStarts(text: string): number[] {
  const starts = [0];
  for (let at = text.indexOf("\n"); at >= 0; at = text.indexOf("\n", at + 1)) starts.push(at + 1);
  return starts;
}

/** Whether the line before `line` is blank. */
function blankLineBefore(text: string, starts: readonly number[], line: number): boolean {
  if (line === 0) return false;
  const start = starts[line - 1] ?? text.length;
  const end = (starts[line] ?? text.length + 1) - 1;
  return text.slice(start, end).trim() === "";
}
