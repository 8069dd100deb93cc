// What the chat input is completing: a `/command` (only at the very start of the prompt) or an
// `@file` (at the start or after a space), and the input's text once a choice is picked.
// Pure, so the rules are unit-tested; the page's picker (picker.ts) draws the choices.

export type Trigger =
  /** `/` at the start: `query` is what follows it, up to the caret. */
  | { kind: "command"; start: number; query: string }
  /** `@` at the start or after whitespace: `start` is the `@`'s offset. */
  | { kind: "file"; start: number; query: string };

/** What the text before the caret is completing, if anything (no selection). */
export function completionAt(text: string, start: number, end: number): Trigger | undefined {
  if (start !== end) return undefined;
  const before = text.slice(0, start);
  const command = /^\/([A-Za-z0-9_.-]*)$/.exec(before);
  if (command) return { kind: "command", start: 0, query: command[1] ?? "" };
  const mention = /(^|\s)@([^\s@]*)$/.exec(before);
  if (mention) {
    const query = mention[2] ?? "";
    return { kind: "file", start: start - query.length - 1, query };
  }
  return undefined;
}

/** The same trigger (kind and position): used to keep a dismissed picker closed while typing on. */
export function triggerKey(trigger: Trigger): string {
  return `${trigger.kind}:${trigger.start}`;
}

export interface Edited {
  text: string;
  caret: number;
}

/** A prompt file picked: the first word becomes `/name ` for the user to add arguments. */
export function insertCommand(text: string, caret: number, name: string): Edited {
  const rest = text.slice(caret).replace(/^[^\s]*\s?/, "");
  const head = `/${name} `;
  return { text: head + rest, caret: head.length };
}

/** A file picked: its `@query` is taken out of the prompt (the file becomes a chip). */
export function removeMention(text: string, trigger: Trigger, caret: number): Edited {
  let before = text.slice(0, trigger.start);
  let after = text.slice(caret);
  // One space where the mention was, none at the start or end of the prompt.
  if (before === "" || /\s$/.test(before)) after = after.replace(/^[ \t]+/, "");
  if (after === "") before = before.replace(/[ \t]+$/, "");
  return { text: before + after, caret: before.length };
}

/** The next highlighted row for ↑/↓ (wrapping), in a list of `count` rows. */
export function moveSelection(index: number, count: number, delta: number): number {
  if (count <= 0) return 0;
  return (((index + delta) % count) + count) % count;
}
