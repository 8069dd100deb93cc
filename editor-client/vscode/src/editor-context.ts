// `agent/ask`'s `context` from what the user is looking at, and the line the view
// shows under the prompt for it. Pure: the extension hands in a snapshot of the active editor.
//
// The server refuses (-32602) a document outside the conversation's folder, which would fail
// the whole ask; so a document elsewhere (another root of a multi-root window, a file outside
// every folder, an untitled buffer) is simply not sent.

import { isAbsolute, relative } from "node:path";
import type { AskContext, Range } from "./protocol";

/** The active text editor as this module needs it. */
export interface EditorSnapshot {
  /** The document's URI as text (what the server gets). */
  uri: string;
  /** Its URI scheme: only `file` documents are sent. */
  scheme: string;
  /** Its path on disk. */
  fsPath: string;
  /** The primary selection (an empty one is the cursor). */
  selection: Range;
}

export interface ContextRequest {
  /** `agentLsp.sendActiveEditor`: the active document goes with every ask. */
  auto: boolean;
  /** The attach choices ticked under the input ("file", "selection"). */
  attach: readonly string[];
}

export interface BuiltContext {
  context?: AskContext;
  /** What the view shows under the prompt ("selection: src/app.py, lines 3-9"). */
  label?: string;
  /** Why an attachment the user asked for was not sent. */
  skipped?: string;
}

export function isEmpty(range: Range): boolean {
  return range.start.line === range.end.line && range.start.character === range.end.character;
}

/** Whether `path` is inside `folder` (or is it): the server resolves the same way. */
export function insideFolder(path: string, folder: string): boolean {
  const rel = relative(folder, path);
  return rel === "" || (!rel.startsWith("..") && !isAbsolute(rel));
}

/** "line 3" / "lines 3-9", 1-based; a selection of whole lines ends at the next line's start. */
export function lineSpan(range: Range): string {
  const first = Math.min(range.start.line, range.end.line) + 1;
  const end = range.start.line <= range.end.line ? range.end : range.start;
  let last = Math.max(range.start.line, range.end.line) + 1;
  if (end.character === 0 && last > first) last -= 1;
  return first === last ? `line ${first}` : `lines ${first}-${last}`;
}

/** The active file's chip above the chat input: the file's name, and the selection's lines. */
export function chipLabel(shownPath: string, snapshot: EditorSnapshot): string {
  const name = shownPath.split("/").pop() ?? shownPath;
  return isEmpty(snapshot.selection) ? name : `${name} · ${lineSpan(snapshot.selection)}`;
}

/** The label of an active-document context, with the path as the user reads it. */
export function contextLabel(document: NonNullable<AskContext["activeDocument"]>, shownPath: string): string {
  return document.selection ? `selection: ${shownPath}, ${lineSpan(document.selection)}` : `file: ${shownPath}`;
}

/**
 * The context of one ask: the active document when `auto` (its selection when it has one), or
 * what the user ticked. `folder` is the path the conversation acts in (undefined: none known,
 * nothing sent); `shownPath` is the document's path as the view shows it.
 */
export function buildContext(
  editor: EditorSnapshot | undefined,
  folder: string | undefined,
  request: ContextRequest,
  shownPath: string,
): BuiltContext {
  const wantsFile = request.auto || request.attach.includes("file");
  const wantsSelection = request.auto || request.attach.includes("selection");
  const explicit = request.attach.length > 0;
  if (!editor || (!wantsFile && !wantsSelection)) {
    return explicit ? { skipped: "no editor is active" } : {};
  }
  if (editor.scheme !== "file" || folder === undefined || !insideFolder(editor.fsPath, folder)) {
    return explicit ? { skipped: `${shownPath} is not in the conversation's folder` } : {};
  }
  const document: NonNullable<AskContext["activeDocument"]> = { uri: editor.uri };
  if (wantsSelection && !isEmpty(editor.selection)) document.selection = editor.selection;
  if (!wantsFile && document.selection === undefined) return { skipped: "the selection is empty" };
  return { context: { activeDocument: document }, label: contextLabel(document, shownPath) };
}

/** A file picked with `@` in the chat input, as this module needs it. */
export interface PickedDocument {
  uri: string;
  scheme: string;
  fsPath: string;
  /** Its path as the view shows it. */
  shown: string;
}

/** At most this many picked files go with an ask (the server names no more). */
export const MAX_PICKED_DOCUMENTS = 20;

/**
 * `built` with the files picked with `@` added as `context.documents` (URIs): only files of
 * the conversation's folder (the server refuses others, failing the ask), each once, at most
 * MAX_PICKED_DOCUMENTS. The label gets `@path` for each ("file: src/app.py; @src/util.py").
 */
export function withDocuments(built: BuiltContext, documents: readonly PickedDocument[], folder: string | undefined): BuiltContext {
  if (documents.length === 0) return built;
  const uris: string[] = [];
  const shown: string[] = [];
  const refused: string[] = [];
  for (const document of documents) {
    if (uris.includes(document.uri)) continue;
    if (document.scheme !== "file" || folder === undefined || !insideFolder(document.fsPath, folder)) {
      refused.push(document.shown);
      continue;
    }
    if (uris.length >= MAX_PICKED_DOCUMENTS) {
      refused.push(document.shown);
      continue;
    }
    uris.push(document.uri);
    shown.push(`@${document.shown}`);
  }
  const result: BuiltContext = { ...built };
  if (uris.length > 0) {
    result.context = { ...(built.context ?? {}), documents: uris };
    result.label = [built.label, shown.join(", ")].filter((l) => l).join("; ");
  }
  if (refused.length > 0) {
    const why = `${refused.join(", ")}: not in the conversation's folder${uris.length >= MAX_PICKED_DOCUMENTS ? ` or more than ${MAX_PICKED_DOCUMENTS} files` : ""}`;
    result.skipped = [built.skipped, why].filter((s) => s).join("; ");
  }
  return result;
}
