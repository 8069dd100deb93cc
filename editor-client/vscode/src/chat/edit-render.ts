// What an edit or a write does, in its tool row without expanding it: edit_file as a unified
// diff (removed and added lines coloured; the file name opens VS Code's diff editor),
// write_file as its size and first lines. Pure string building, unit-tested.

import { escapeControl } from "../display";
import { escapeHtml } from "./markdown";
import type { Entry, ToolItem } from "./model";

/** Diff lines shown in the row; the rest is in the diff editor. */
export const DIFF_LINES = 20;
/** A write's first lines shown. */
export const WRITE_LINES = 8;

export interface DiffLine {
  mark: " " | "-" | "+";
  text: string;
}

function splitLines(text: string): string[] {
  const lines = text.split("\n");
  if (lines.length > 1 && lines[lines.length - 1] === "") lines.pop();
  return lines;
}

/**
 * The replacement as unified diff lines: the lines both texts start and end with as context,
 * the old middle removed, the new middle added.
 */
export function lineDiff(oldText: string, newText: string): DiffLine[] {
  const a = oldText === "" ? [] : splitLines(oldText);
  const b = newText === "" ? [] : splitLines(newText);
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let end = 0;
  while (end < a.length - start && end < b.length - start && a[a.length - 1 - end] === b[b.length - 1 - end]) end++;
  return [
    ...a.slice(0, start).map((text) => ({ mark: " " as const, text })),
    ...a.slice(start, a.length - end).map((text) => ({ mark: "-" as const, text })),
    ...b.slice(start, b.length - end).map((text) => ({ mark: "+" as const, text })),
    ...a.slice(a.length - end).map((text) => ({ mark: " " as const, text })),
  ];
}

function args(item: ToolItem): Record<string, unknown> | undefined {
  try {
    const parsed: unknown = JSON.parse(item.arguments);
    return parsed !== null && typeof parsed === "object" && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

const shown = (text: string): string => escapeHtml(escapeControl(text, { keepNewlines: true }));

function plural(n: number, word: string): string {
  return `${n.toLocaleString("en-US")} ${word}${n === 1 ? "" : "s"}`;
}

/** The file name, a link that opens the change in VS Code's diff editor. */
function fileLink(entry: Entry, item: ToolItem, path: string): string {
  return (
    `<a class="edit-file" role="link" href="#" data-action="openEditDiff" data-call-id="${escapeHtml(item.id)}" data-entry-id="${escapeHtml(entry.id)}"` +
    ` title="Open this change in the diff editor">${shown(path)}</a>`
  );
}

/** The row's edit preview, or "" for any other call (and for a failed one: nothing changed). */
export function renderEditPreview(entry: Entry, item: ToolItem): string {
  if (item.state === "failed") return "";
  const a = args(item);
  const path = a?.["path"];
  if (typeof path !== "string") return "";
  if (item.name === "edit_file" && typeof a?.["old_text"] === "string" && typeof a["new_text"] === "string") {
    const lines = lineDiff(a["old_text"], a["new_text"]);
    const every = a["replace_all"] === true ? " (every occurrence)" : "";
    const added = lines.filter((l) => l.mark === "+").length;
    const removed = lines.filter((l) => l.mark === "-").length;
    const body = lines
      .slice(0, DIFF_LINES)
      .map((l) => `<span class="diff-line ${l.mark === "+" ? "add" : l.mark === "-" ? "del" : "ctx"}">${l.mark}${shown(l.text)}</span>`)
      .join(""); // block lines: a newline between them would be an empty line in the <pre>
    const more = lines.length > DIFF_LINES ? `<div class="edit-more">… ${plural(lines.length - DIFF_LINES, "more line")}: open the file's diff.</div>` : "";
    return (
      `<div class="edit-preview"><div class="edit-head">${fileLink(entry, item, path)} <span class="edit-count">+${added} −${removed}${every}</span></div>` +
      `<pre class="diff">${body}</pre>${more}</div>`
    );
  }
  if (item.name === "write_file" && typeof a?.["content"] === "string") {
    const content = a["content"];
    const lines = content === "" ? [] : splitLines(content);
    const bytes = new TextEncoder().encode(content).length;
    const first = lines.slice(0, WRITE_LINES).map((l) => `<span class="diff-line add">+${shown(l)}</span>`).join("");
    const more = lines.length > WRITE_LINES ? `<div class="edit-more">… ${plural(lines.length - WRITE_LINES, "more line")}</div>` : "";
    return (
      `<div class="edit-preview"><div class="edit-head">${fileLink(entry, item, path)} <span class="edit-count">${plural(lines.length, "line")}, ${plural(bytes, "byte")}</span></div>` +
      (first ? `<pre class="diff">${first}</pre>` : "") +
      more +
      `</div>`
    );
  }
  return "";
}
