// The chat view's message protocol, extension <-> webview (README: "The chat view's messages").
// Shared by both bundles; no vscode or DOM import. The extension renders HTML parts, the page
// puts them in place by `data-id`; every click on an element with `data-action` comes back as
// an "action" with the element's `data-*` values, so a feature adds a button without touching
// the page's script.

import type { CommandChoice } from "../slash-commands";

/** An instruction file in force, as its chip shows it (strings escaped by the extension). */
export interface InstructionChip {
  /** As the prompt's heading names it ("AGENTS.md", "sub/AGENTS.md"). */
  name: string;
  /** What a click opens (the extension opens only a URI it sent). */
  uri: string;
  /** Only its first part reaches the model (instructionsMaxBytes). */
  cut: boolean;
  /** The chip's tooltip. */
  title: string;
}

/** A workspace file `@` offers. */
export interface FileChoice {
  /** Relative to the conversation's folder, escaped for display. */
  path: string;
  uri: string;
}

/** Extension -> webview. */
export type ToView =
  /**
   * The whole conversation (first show, reopen, new conversation); `key` names it (its
   * session), so the page can put the reader back where they were in it.
   */
  | { type: "reset"; html: string; title?: string; key?: string }
  /**
   * Put `html` (one element with `data-id` = `id`) in place of the element with that id;
   * if there is none, insert it before the element `before`, else append it to `parent`
   * (default: the conversation). Open `<details>` inside stay open.
   */
  | { type: "upsert"; id: string; html: string; parent?: string; before?: string }
  | { type: "remove"; id: string }
  /**
   * A streaming text grew: insert `append` (its blocks done since the last update) before the
   * element `id` (the block being written) and replace that element's content by `html`.
   */
  | { type: "stream"; id: string; append: string; html: string }
  /** Set the class of the element with that id (an entry's state: working, done, ...). */
  | { type: "setClass"; id: string; className: string }
  /** Whether an ask runs (Send becomes Stop), and the status line above the input. */
  | { type: "busy"; busy: boolean; status?: string }
  /**
   * A page of a tool call's output: put `text` in the element `id` (in place of what it
   * shows, or after it), and `barHtml` in place of the element `bar`.
   */
  | { type: "outputPage"; id: string; text: string; replace: boolean; bar: string; barHtml: string }
  /** An ask was sent (from the input, Retry, a command): scroll to it and follow its answer. */
  | { type: "follow" }
  /** Focus the input; `text`, if given, replaces the draft. */
  | { type: "focusInput"; text?: string }
  /** The draft kept by the extension (after a reload); the page's own, if any, wins. */
  | { type: "draft"; text: string }
  /** Earlier prompts of this workspace, oldest first, for Up/Down recall. */
  | { type: "prompts"; prompts: string[] }
  /**
   * The chip of the file you are looking at (none: no chip): `label` "app.py · lines 3-9",
   * `attached` whether it goes with the next ask (✕ leaves it out, ＋ puts it in); the page
   * sends `key` back with the ask when it shows it attached.
   */
  | { type: "activeFile"; key?: string; label?: string; title?: string; attached?: boolean }
  /** What "Ask About Selection" attached to the next prompt ("selection: src/app.py, lines 3-9"); none: cleared. */
  | { type: "pinned"; label?: string }
  /** The instruction files in force (chips above the input) and the skills listed (one chip). */
  | { type: "project"; instructions: InstructionChip[]; skills?: { label: string; title: string } }
  /** What `/` offers: the built-ins and the prompt files. */
  | { type: "commands"; commands: CommandChoice[] }
  /** The answer to a findFiles of the same `id`. */
  | { type: "files"; id: number; files: FileChoice[] }
  /** Whether `@` offers files (the server takes editor context). */
  | { type: "fileMentions"; enabled: boolean };

/** Webview -> extension. */
export type FromView =
  | { type: "ready" }
  /**
   * `documents`: the URIs of the files picked with `@` (context.documents); `activeFile`: the
   * key of the active file's chip, when it was shown attached (absent: no file goes).
   */
  | { type: "send"; prompt: string; activeFile?: string; documents?: string[] }
  /** A built-in command (`/compact`, `/undo 3`): the extension runs it, nothing is sent. */
  | { type: "builtin"; name: string; args: string }
  /** `/` typed: send the commands again (prompt files may have changed). */
  | { type: "listCommands" }
  /** `@query` typed: the folder's files matching it, answered by a "files" of the same id. */
  | { type: "findFiles"; id: number; query: string }
  | { type: "stop" }
  /** The input's text as the user left it (kept across closing the view and reloads). */
  | { type: "draft"; text: string }
  | { type: "action"; action: string; args: Record<string, string> }
  /** A render time measured by the page (benchmarks, debugging). */
  | { type: "timing"; what: string; ms: number };

export function isFromView(value: unknown): value is FromView {
  if (typeof value !== "object" || value === null) return false;
  const type = (value as { type?: unknown }).type;
  return typeof type === "string";
}
