// A command's output as a terminal shows it: its tail by default (a test run's summary is on
// its last lines), the whole of it on request in pages, so a 10 MB output never reaches the
// page at once. Pure text work, unit-tested without VS Code.

/** Lines a tool row shows by default: the end of the output. */
export const TAIL_LINES = 40;
/** At most this much of a very long last line set (a minified file on one line). */
export const TAIL_CHARS = 16_000;
/** One "Show all" / "Show more" page. */
export const PAGE_LINES = 2_000;
export const PAGE_CHARS = 200_000;

export interface OutputTail {
  text: string;
  /** Lines before the tail, not shown. */
  hiddenLines: number;
  totalLines: number;
}

/**
 * An output split into lines, once: whoever keeps the text keeps this instead ("Show more"
 * pages the same 10 MB output again and again, and splitting it anew each time cost 5-10 ms
 * a page: bench/results/vscode_tool_output.md).
 */
export interface SplitOutput {
  readonly text: string;
  /** A final newline does not count as an empty last line. */
  readonly lines: readonly string[];
}

export function splitOutput(text: string): SplitOutput {
  const lines = text.split("\n");
  if (lines.length > 1 && lines[lines.length - 1] === "") lines.pop();
  return { text, lines };
}

function split(output: string | SplitOutput): SplitOutput {
  return typeof output === "string" ? splitOutput(output) : output;
}

export function lineCount(text: string): number {
  return text === "" ? 0 : splitOutput(text).lines.length;
}

/** The last `maxLines` lines (and at most `maxChars` characters of them). */
export function tailOf(output: string | SplitOutput, maxLines = TAIL_LINES, maxChars = TAIL_CHARS): OutputTail {
  const { text, lines: all } = split(output);
  let shown = all.slice(-maxLines);
  let tail = shown.join("\n");
  if (tail.length > maxChars) {
    tail = tail.slice(-maxChars);
    shown = tail.split("\n");
  }
  return { text: tail, hiddenLines: all.length - shown.length, totalLines: text === "" ? 0 : all.length };
}

export interface OutputPage {
  text: string;
  /** The line the next page starts at; undefined: this page reaches the end. */
  next?: number;
  totalLines: number;
}

/** Lines `from`… of the output, at most PAGE_LINES lines / PAGE_CHARS characters. */
export function pageOf(output: string | SplitOutput, from: number, maxLines = PAGE_LINES, maxChars = PAGE_CHARS): OutputPage {
  const all = split(output).lines;
  const picked: string[] = [];
  let size = 0;
  let at = Math.max(0, from);
  while (at < all.length && picked.length < maxLines) {
    const line = all[at] ?? "";
    if (picked.length > 0 && size + line.length + 1 > maxChars) break;
    picked.push(line.length > maxChars ? `${line.slice(0, maxChars)}… [${(line.length - maxChars).toLocaleString("en-US")} more characters on this line]` : line);
    size += line.length + 1;
    at++;
  }
  const page: OutputPage = { text: picked.join("\n"), totalLines: all.length };
  if (at < all.length) page.next = at;
  return page;
}
