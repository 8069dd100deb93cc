// What the checkpoint commands show: quick pick items, the undo question, the outcome.
// Pure (no vscode import), so unit tests can check it.

import type { Checkpoint, CheckpointFile, RewindResult } from "./protocol";

const MARKS: Record<string, string> = { added: "A", modified: "M", deleted: "D" };

export interface CheckpointItem {
  label: string;
  description: string;
  detail: string;
  checkpointId: string;
}

/** "M app.py +3 −1" for one changed file. */
export function fileSummary(file: CheckpointFile): string {
  const counts: string[] = [];
  if (typeof file.added === "number" && file.added > 0) counts.push(`+${file.added}`);
  if (typeof file.removed === "number" && file.removed > 0) counts.push(`\u2212${file.removed}`);
  return [MARKS[file.status] ?? "?", file.path, ...counts].join(" ");
}

/** What an answer says of the files its ask changed: "1 file changed", "2 files changed". */
export function changesText(count: number): string {
  return `${count} file${count === 1 ? "" : "s"} changed`;
}

/** Quick pick items, newest ask first (the one usually undone). */
export function checkpointItems(checkpoints: Checkpoint[], now: Date = new Date()): CheckpointItem[] {
  return [...checkpoints].reverse().map((checkpoint) => {
    const files = checkpoint.files.length
      ? checkpoint.files.map(fileSummary).join(" \u00b7 ")
      : "no files changed";
    const state = checkpoint.state === "done" ? "" : ` (${checkpoint.state})`;
    const coverage = checkpoint.coverage === "fileTools" ? " \u00b7 bash changes not recorded" : "";
    return {
      label: `Ask ${checkpoint.id}: ${checkpoint.prompt}`,
      description: `${relativeTime(checkpoint.time, now)}${state}`,
      detail: files + coverage,
      checkpointId: checkpoint.id,
    };
  });
}

function relativeTime(stamp: string, now: Date): string {
  const then = Date.parse(stamp);
  if (Number.isNaN(then)) return stamp;
  const minutes = Math.round((now.getTime() - then) / 60_000);
  if (minutes < 1) return "just now";
  if (minutes < 60) return `${minutes} min ago`;
  const hours = Math.round(minutes / 60);
  if (hours < 24) return `${hours} h ago`;
  return new Date(then).toLocaleString();
}

export interface UndoQuestion {
  message: string;
  detail: string;
  /** Whether there is anything to confirm at all. */
  actionable: boolean;
}

/**
 * The files undoing asks from `checkpointId` on deletes: those the first of these asks to
 * touch them created (they did not exist before it).
 */
export function createdFiles(checkpoints: readonly Checkpoint[], checkpointId: string): Set<string> {
  const from = checkpoints.findIndex((c) => c.id === checkpointId);
  const created = new Set<string>();
  const seen = new Set<string>();
  for (const checkpoint of from < 0 ? [] : checkpoints.slice(from)) {
    for (const file of checkpoint.files) {
      if (seen.has(file.path)) continue;
      seen.add(file.path);
      if (file.status === "added") created.add(file.path);
    }
  }
  return created;
}

/**
 * The modal question for "Undo this ask", from its dry run. `shown` is the ask's number as the
 * chat shows it; `created` the files the undo deletes rather than puts back (createdFiles).
 */
export function undoQuestion(checkpointId: string, dry: RewindResult, created: ReadonlySet<string> = new Set(), shown = checkpointId): UndoQuestion {
  const lines: string[] = [];
  const inEditor = new Set(dry.inEditor);
  const editorNote = (path: string) => (inEditor.has(path) ? " (in its editor, unsaved: Undo works there)" : "");
  const back = dry.restored.filter((p) => !created.has(p));
  const deleted = dry.restored.filter((p) => created.has(p));
  if (back.length) {
    lines.push("Will be put back:");
    for (const path of back) lines.push(`  ${path}${editorNote(path)}`);
  }
  if (deleted.length) {
    if (lines.length) lines.push("");
    lines.push("Will be deleted (the agent created them):");
    for (const path of deleted) lines.push(`  ${path}${editorNote(path)}`);
  }
  if (dry.conflicts.length) {
    if (lines.length) lines.push("");
    lines.push("Kept as they are (changed after the agent):");
    for (const conflict of dry.conflicts) lines.push(`  ${conflict.path}: ${conflict.reason}`);
  }
  if (!lines.length) lines.push("No files to put back.");
  if (dry.conversationTruncated) {
    lines.push("", "The conversation goes back to before this ask: the agent forgets it and every later one.");
  }
  return {
    message: `Undo ask ${shown} and every later one?`,
    detail: lines.join("\n"),
    actionable: dry.restored.length > 0 || dry.conversationTruncated,
  };
}

/** The notification after a rewind (`shown`: the ask's number as the chat shows it). */
export function undoOutcome(shown: string, result: RewindResult, created: ReadonlySet<string> = new Set()): string {
  const deleted = result.restored.filter((p) => created.has(p)).length;
  const restored = result.restored.length - deleted;
  const done = [`${restored} file${restored === 1 ? "" : "s"} put back`, ...(deleted ? [`${deleted} deleted`] : [])];
  let text = `Undid ask ${shown}: ${done.join(", ")}`;
  if (result.inEditor.length) text += ` (${result.inEditor.length} in open editors, unsaved)`;
  if (result.conflicts.length) {
    text += `; kept ${result.conflicts.length} you changed since: ${result.conflicts.map((c) => c.path).join(", ")}`;
  }
  return text + ".";
}
