// One-line summaries of a tool call's arguments for the trace and the panel.
// The arguments are model output: possibly invalid JSON, huge, or multi-line, with escape
// sequences or bidi overrides: everything shown is escaped (./display) first.

import { escapeControl } from "./display";

/** Keys that say what a call is about, shown first and unlabelled. */
const PRIMARY_KEYS = ["command", "path", "file_path", "pattern", "query", "url"];
/** Keys whose value is bulk text: shown as a size, never inline. */
const BULK_KEYS = new Set(["content", "old_text", "new_text", "old_string", "new_string", "text", "patch", "stdin"]);

export const DEFAULT_SUMMARY_LENGTH = 100;

/** Shown where a multi-line value (a script given to bash) breaks its lines. */
export const LINE_BREAK_MARK = "⏎";

/** Collapse all whitespace (newlines included) so the result stays on one line. */
export function oneLine(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}

/** One line for a value whose lines matter (a script given to bash): breaks get a visible mark. */
export function markedLines(text: string): string {
  return oneLine(text.trim().replace(/[ \t]*(\r?\n)+[ \t]*/g, ` ${LINE_BREAK_MARK} `));
}

export function truncate(text: string, max: number): string {
  if (max <= 1) return text.length > max ? "…".slice(0, max) : text;
  const chars = Array.from(text); // never split a surrogate pair
  return chars.length > max ? chars.slice(0, max - 1).join("") + "…" : text;
}

function valueText(value: unknown): string {
  if (typeof value === "string") return value;
  if (value === null || typeof value === "number" || typeof value === "boolean") {
    return String(value);
  }
  return JSON.stringify(value) ?? String(value);
}

/** The value as shown: escaped, its line breaks left for oneLine / markedLines. */
function describeValue(value: unknown): string {
  return escapeControl(valueText(value), { keepNewlines: true });
}

function sizeOf(value: unknown): string {
  const text = valueText(value);
  const lines = text === "" ? 0 : text.split("\n").length;
  return lines > 1 ? `${lines} lines` : `${Array.from(text).length} chars`;
}

/**
 * `bash {"command": "ls -la"}` -> `ls -la`; `read_file {"path": "a.py", "offset": 10}`
 * -> `a.py offset=10`; `write_file {"path": "a.py", "content": "..."}` -> `a.py content=3 lines`.
 * Invalid JSON is shown as its (collapsed, truncated) text.
 */
export function summarizeArguments(
  argumentsJson: string,
  maxLength: number = DEFAULT_SUMMARY_LENGTH,
  summaryKey?: string,
): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(argumentsJson);
  } catch {
    return truncate(oneLine(escapeControl(argumentsJson, { keepNewlines: true })), maxLength);
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
    return truncate(oneLine(describeValue(parsed)), maxLength);
  }
  const entries = Object.entries(parsed as Record<string, unknown>);
  const parts: string[] = [];
  // The tool's own summary argument (agent/toolActivity's summaryKey) leads: a tool this
  // client has never heard of (an MCP server's) is shown by what its definition names.
  const primary = summaryKey ? [summaryKey, ...PRIMARY_KEYS.filter((k) => k !== summaryKey)] : PRIMARY_KEYS;
  for (const key of primary) {
    const found = entries.find(([k]) => k === key);
    if (found !== undefined) parts.push(markedLines(describeValue(found[1])));
  }
  for (const [key, value] of entries) {
    if (primary.includes(key)) continue;
    const name = escapeControl(key);
    parts.push(BULK_KEYS.has(key) ? `${name}=${sizeOf(value)}` : `${name}=${oneLine(describeValue(value))}`);
  }
  return truncate(parts.join(" "), maxLength);
}

/**
 * What a tool row's one-line header says of the call: only the argument the call is about
 * (the command, the path; summaryKey first), else the whole summary; the rest is in the row's
 * body. `bash {"command": "make", "escalation": "network", ...}` -> `make`.
 */
export function headSummary(argumentsJson: string, maxLength = 120, summaryKey?: string): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(argumentsJson);
  } catch {
    parsed = undefined;
  }
  if (parsed !== null && typeof parsed === "object" && !Array.isArray(parsed)) {
    const record = parsed as Record<string, unknown>;
    const keys = summaryKey ? [summaryKey, ...PRIMARY_KEYS] : PRIMARY_KEYS;
    const key = keys.find((k) => Object.hasOwn(record, k));
    if (key !== undefined) return truncate(markedLines(describeValue(record[key])), maxLength);
  }
  return summarizeArguments(argumentsJson, maxLength, summaryKey);
}

/** First non-blank line of a tool's output, for failure lines. */
export function firstLine(output: string | undefined, maxLength = 160): string {
  if (!output) return "";
  const line = output.split(/\r?\n/).find((l) => l.trim() !== "") ?? "";
  return truncate(escapeControl(line.trim()), maxLength);
}

export function formatDuration(ms: number | undefined): string {
  if (ms === undefined || !Number.isFinite(ms) || ms < 0) return "";
  if (ms < 1000) return `${Math.round(ms)}ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)}s`;
  const total = Math.round(ms / 1000);
  const minutes = Math.floor(total / 60);
  const seconds = total % 60;
  return `${minutes}m${String(seconds).padStart(2, "0")}s`;
}
