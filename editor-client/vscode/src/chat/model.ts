// What the chat view shows, as plain data, and the changes the server's messages make to it.
// Each change names the parts it touched (an entry, one of its items, its tail), so the view
// re-renders only those: a selection elsewhere survives and the cost per update stays flat.

import { escapeControl } from "../display";
import type {
  AnswerDelta,
  AskContext,
  AskProgress,
  AskResult,
  HistoryEntry,
  ToolActivity,
  ToolCallRecord,
  Usage,
} from "../protocol";

export type EntryState = "working" | "done" | "cancelled" | "error";
export type CallState = "running" | "waiting" | "ok" | "failed";

/** A button in the view; clicking it sends `action` with `args` to the extension. */
export interface Button {
  title: string;
  action: string;
  args?: Record<string, string>;
  /** Shown as the primary button. */
  primary?: boolean;
}

export interface ToolItem {
  kind: "tool";
  id: string;
  name: string;
  /** The arguments as the model wrote them (JSON text, possibly invalid). */
  arguments: string;
  /** The server's name for it for people (agent/toolActivity's displayName), else `name`. */
  displayName?: string;
  state: CallState;
  turn?: number;
  // The server's words (server/agent/activity.py), escaped and on one line: shown as they are.
  // Rows saved before the server sent them have none: they show the tool's name only.
  /** The call's one line, "bash pytest -q" (the row's tooltip). */
  title?: string;
  /** What it acts on, "pytest -q": the row (and its output tab) shows it after the tool's name. */
  subject?: string;
  /** How long it took, "12 ms; 8.0 s waiting for permission". */
  durationText?: string;
  /** Its output's first line (a failed call's row shows it). */
  outputHead?: string;
  output?: string;
  /** How far a running call is, agent/askProgress's text: "bash 3/10 indexing". */
  progress?: string;
  /** The end of the whole output (agent/toolOutput), when the preview was cut: shown instead. */
  full?: { text: string; hiddenLines: number; totalLines: number };
}

export interface TextItem {
  kind: "text";
  id: string;
  text: string;
  turn?: number;
  channel: "answer" | "reasoning";
}

/** A box with a message and buttons, for what later features put into the conversation
 * (a permission request, a rewind confirmation): no change to the view needed. */
export interface CardItem {
  kind: "card";
  id: string;
  title: string;
  body: string;
  /** Shown verbatim in a code block above the body (a permission request's command). */
  code?: string;
  tone?: "info" | "warning" | "error";
  buttons: Button[];
}

/**
 * A one-line note in the conversation (a compaction: "compacted: 30,512 → 9,880 tokens ...";
 * the MCP servers an ask goes without).
 */
export interface NoteItem {
  kind: "note";
  id: string;
  text: string;
  /** What leads the line; default "⇣" (a compaction). */
  icon?: string;
}

export type Item = ToolItem | TextItem | CardItem | NoteItem;

export interface ErrorView {
  message: string;
  buttons: Button[];
}

export interface Footer {
  model?: string;
  elapsedMs?: number;
  usage?: Usage;
  turns?: number;
}

export interface Entry {
  id: string;
  prompt: string;
  /** What went with the prompt as editor context ("selection: src/app.py, lines 3-9"). */
  attached?: string;
  /** That context as sent (`agent/ask`'s `context`): Retry sends it again. */
  context?: AskContext;
  state: EntryState;
  items: Item[];
  /** What the ask is doing now ("waiting for the model"), while working. */
  status?: string;
  stopReason?: string;
  /** Why it stopped without an answer, as the server words it (agent/ask's stopNote). */
  stopNote?: string;
  error?: ErrorView;
  footer?: Footer;
  /** Undone ("Undo this ask"): the server forgot it; the view keeps it struck through. */
  undone?: boolean;
  /** What the ask changed ("2 files changed"), when it changed files. */
  changes?: string;
  /** Buttons under the answer (Retry, and later Show changes / Undo this ask). */
  actions: Button[];
  /**
   * The server stopped during this ask: unlike an ask that failed here, the server has it
   * (its saved conversation lists it interrupted), so a reload takes the server's copy.
   */
  interrupted?: boolean;
}

export interface Conversation {
  sessionId?: string | undefined;
  /** The folder the session acts in (URI), pinned by the first ask. */
  folder?: string | undefined;
  title?: string | undefined;
  /** Shown above the entries, e.g. "The server restarted; this is a new conversation." */
  notice?: string | undefined;
  /** "info" for news that is not an error (an undo's outcome); default error. */
  noticeTone?: "info" | "error" | undefined;
  /** The tools the user turned off for this conversation (Agent: Configure Tools…), sent with each ask. */
  disabledTools?: string[] | undefined;
  entries: Entry[];
}

/** The parts of the view an update touched. */
export type Change =
  | { part: "entry"; entry: Entry }
  | {
      part: "item";
      entry: Entry;
      item: Item;
      before?: Item | undefined;
      /** The item is a text and this was appended to it (a delta): nothing before it changed. */
      appended?: string;
    }
  | { part: "tail"; entry: Entry }
  | { part: "removed"; entry: Entry; item: Item };

let counter = 0;
// Per extension host: entries kept from before a window reload keep their ids, so new ones
// must not reuse them.
const RUN = Math.floor(Math.random() * 36 ** 4).toString(36).padStart(4, "0");
/** Ids unique across extension hosts (entries from history get fresh ones too). */
export function freshId(prefix: string): string {
  counter += 1;
  return `${prefix}${RUN}${counter.toString(36)}`;
}

export function newEntry(prompt: string): Entry {
  return { id: freshId("e"), prompt, state: "working", items: [], actions: [] };
}

const PHASE_TEXT: Record<string, string> = {
  model: "waiting for the model",
  writing: "writing",
  tools: "running tools",
  permission: "waiting for your permission",
  compacting: "compacting the conversation",
  done: "finishing",
};

/** The status line for a progress notification: from its structured phase, not its text;
 * a phase this client does not know (phases may be added) shows the server's message. */
export function phaseText(progress: Pick<AskProgress, "phase" | "turn"> & { message?: string }): string {
  const known = PHASE_TEXT[progress.phase];
  if (known === undefined && typeof progress.message === "string" && progress.message) {
    return escapeControl(progress.message);
  }
  const what = known ?? "working";
  return progress.turn > 0 ? `turn ${progress.turn}: ${what}` : what;
}

/** How many `starting` progress updates each running entry had (not saved with it). */
const startingSeen = new WeakMap<Entry, number>();

export function applyProgress(entry: Entry, progress: AskProgress): Change[] {
  const changes: Change[] = [];
  if (progress.phase === "starting" && typeof progress.message === "string" && progress.message) {
    // The first says which MCP servers the ask waits for (the status line is enough); the
    // second names those it goes without: it stays in the entry, as Neovim and Emacs keep it.
    const seen = (startingSeen.get(entry) ?? 0) + 1;
    startingSeen.set(entry, seen);
    if (seen > 1) changes.push(...applyNote(entry, `${entry.id}-mcp-missing`, escapeControl(progress.message), "⚠"));
  }
  if (typeof progress.callId === "string" && typeof progress.progress === "number" && progress.text) {
    const item = toolItem(entry, progress.callId);
    if (item !== undefined && item.state === "running") {
      item.progress = progress.text;
      changes.push({ part: "item", entry, item });
    }
  }
  const status = phaseText(progress);
  if (entry.status !== status) {
    entry.status = status;
    changes.push({ part: "tail", entry });
  }
  return changes;
}

function toolItem(entry: Entry, callId: string): ToolItem | undefined {
  for (const item of entry.items) if (item.kind === "tool" && item.id === callId) return item;
  return undefined;
}

export function applyActivity(entry: Entry, activity: ToolActivity): Change[] {
  let item = toolItem(entry, activity.callId);
  if (item === undefined) {
    item = { kind: "tool", id: activity.callId, name: activity.name, arguments: activity.arguments ?? "", state: "running" };
    if (typeof activity.turn === "number") item.turn = activity.turn;
    entry.items.push(item);
  }
  if (typeof activity.displayName === "string" && activity.displayName !== "") item.displayName = activity.displayName;
  words(item, activity);
  switch (activity.status) {
    case "started":
      item.state = "running";
      break;
    case "waiting":
      item.state = "waiting";
      break;
    case "completed":
      item.state = "ok";
      break;
    default:
      item.state = "failed";
  }
  if (activity.output !== undefined) item.output = activity.output;
  return [{ part: "item", entry, item }];
}

/** The server's words for a call (agent/toolActivity, a result's or the history's calls). */
function words(
  item: ToolItem,
  sent: { title?: string | undefined; subject?: string | undefined; durationText?: string | null | undefined; outputHead?: string | null | undefined },
): void {
  if (sent.title) item.title = sent.title;
  if (sent.subject) item.subject = sent.subject;
  if (sent.durationText) item.durationText = sent.durationText;
  if (sent.outputHead) item.outputHead = sent.outputHead;
}

/**
 * Streamed text: appended to the text of that turn and channel, in order; a new turn
 * or channel (or a tool row in between) starts a new text item. Only that item is redrawn.
 */
export function applyDelta(entry: Entry, delta: AnswerDelta): Change[] {
  if (typeof delta.delta !== "string" || delta.delta === "") return [];
  const channel = delta.channel === "reasoning" ? "reasoning" : "answer";
  const last = entry.items[entry.items.length - 1];
  if (last && last.kind === "text" && last.turn === delta.turn && last.channel === channel) {
    last.text += delta.delta;
    return [{ part: "item", entry, item: last, appended: delta.delta }];
  }
  const item: TextItem = { kind: "text", id: freshId("t"), text: delta.delta, turn: delta.turn, channel };
  entry.items.push(item);
  return [{ part: "item", entry, item }];
}

/** Put a card into the entry, or replace the card with the same id. */
export function applyCard(entry: Entry, card: CardItem): Change[] {
  const index = entry.items.findIndex((i) => i.kind === "card" && i.id === card.id);
  if (index >= 0) entry.items[index] = card;
  else entry.items.push(card);
  return [{ part: "item", entry, item: card }];
}

/** Put a note into the entry, or replace the note with the same id. */
export function applyNote(entry: Entry, id: string, text: string, icon?: string): Change[] {
  const note: NoteItem = { kind: "note", id, text };
  if (icon !== undefined) note.icon = icon;
  const index = entry.items.findIndex((i) => i.kind === "note" && i.id === id);
  if (index >= 0) entry.items[index] = note;
  else entry.items.push(note);
  return [{ part: "item", entry, item: note }];
}

export function removeItem(entry: Entry, id: string): Item | undefined {
  const index = entry.items.findIndex((i) => i.id === id);
  if (index < 0) return undefined;
  return entry.items.splice(index, 1)[0];
}

/** Tool rows from a result, for calls whose activity the client did not see. */
function recordItem(record: ToolCallRecord): ToolItem {
  const item: ToolItem = {
    kind: "tool",
    id: record.id,
    name: record.name,
    arguments: record.arguments,
    state: record.ok ? "ok" : "failed",
  };
  words(item, record);
  if (record.output !== undefined) item.output = record.output;
  return item;
}

/**
 * The ask answered: settle the rows, add the final answer unless it streamed already, and
 * put the footer on. `elapsedMs` is measured by the client.
 */
export function applyResult(entry: Entry, result: AskResult, elapsedMs: number, model?: string): Change[] {
  const changes: Change[] = [];
  for (const record of result.toolCalls ?? []) {
    const item = toolItem(entry, record.id);
    if (item === undefined) {
      const added = recordItem(record);
      entry.items.push(added);
      changes.push({ part: "item", entry, item: added });
    } else if (item.state === "running" || item.state === "waiting" || item.output === undefined) {
      Object.assign(item, recordItem(record));
      changes.push({ part: "item", entry, item });
    }
  }
  // The streamed text of the last turn is the answer; where they differ the result wins.
  const answers = entry.items.filter((i): i is TextItem => i.kind === "text" && i.channel === "answer");
  const last = answers[answers.length - 1];
  const lastIsFinal =
    last !== undefined &&
    entry.items.indexOf(last) > lastToolIndex(entry) &&
    (result.turns === undefined || last.turn === undefined || last.turn === result.turns);
  if (lastIsFinal && result.answer === "" && last.text.trim() === "") {
    // An "empty" stop: only whitespace streamed.
    removeItem(entry, last.id);
    changes.push({ part: "removed", entry, item: last });
  } else if (result.answer !== "" && !(lastIsFinal && last.text === result.answer)) {
    if (lastIsFinal) {
      last.text = result.answer;
      changes.push({ part: "item", entry, item: last });
    } else {
      const item: TextItem = { kind: "text", id: freshId("t"), text: result.answer, channel: "answer" };
      if (result.turns !== undefined) item.turn = result.turns;
      entry.items.push(item);
      changes.push({ part: "item", entry, item });
    }
  }
  entry.state = "done";
  delete entry.status;
  entry.stopReason = result.stopReason;
  if (result.stopNote) entry.stopNote = result.stopNote;
  const footer: Footer = { elapsedMs };
  const shownModel = result.model ?? model;
  if (shownModel) footer.model = shownModel;
  if (result.usage) footer.usage = result.usage;
  if (result.turns !== undefined) footer.turns = result.turns;
  entry.footer = footer;
  changes.push({ part: "tail", entry });
  return changes;
}

function lastToolIndex(entry: Entry): number {
  let index = -1;
  entry.items.forEach((item, i) => {
    if (item.kind === "tool") index = i;
  });
  return index;
}

/** The ask ended without an answer (cancelled or failed): running rows stop too. */
/** A permission card once answered or withdrawn: one line, what was asked and what came of it. */
export function answeredCard(id: string, title: string, label: string | undefined): CardItem {
  const said = label === undefined ? "Not answered (withdrawn or dismissed)." : `You chose: ${label}.`;
  return { kind: "card", id, title: `${title} — ${said}`, body: "", tone: "info", buttons: [] };
}

export function applyFailure(entry: Entry, outcome: "cancelled" | "error", error?: ErrorView): Change[] {
  const changes: Change[] = [];
  for (const item of entry.items) {
    if (item.kind === "tool" && (item.state === "running" || item.state === "waiting")) {
      item.state = "failed";
      if (item.output === undefined && outcome === "cancelled") item.output = item.outputHead = "Error: cancelled";
      changes.push({ part: "item", entry, item });
    }
  }
  entry.state = outcome;
  delete entry.status;
  if (error) entry.error = error;
  changes.push({ part: "tail", entry });
  return changes;
}

/**
 * The assistant's text of turns that also called tools, from the session's history, put in
 * front of the tool rows of its turn (the result carries only the final answer). Only the
 * entries after the entry's prompt are read.
 */
export function applyTurnTexts(entry: Entry, history: readonly HistoryEntry[]): Change[] {
  const changes: Change[] = [];
  const known = new Set(entry.items.filter((i) => i.kind === "text").map((i) => (i as TextItem).text));
  for (const turn of history) {
    if (turn.role !== "assistant" || !turn.toolCalls?.length) continue;
    const text = turn.content ?? "";
    if (text.trim() === "" || known.has(text)) continue;
    const first = turn.toolCalls[0];
    const before = first ? toolItem(entry, first.id) : undefined;
    if (before === undefined) continue; // not this entry's turn
    const item: TextItem = { kind: "text", id: freshId("t"), text, channel: "answer" };
    if (before.turn !== undefined) item.turn = before.turn;
    entry.items.splice(entry.items.indexOf(before), 0, item);
    changes.push({ part: "item", entry, item, before });
  }
  return changes;
}

/** The history of the last ask: the entries after its prompt. */
export function lastAskMessages(history: readonly HistoryEntry[]): HistoryEntry[] {
  let start = history.length;
  for (let i = history.length - 1; i >= 0; i--) {
    if (history[i]?.role === "user") {
      start = i + 1;
      break;
    }
  }
  return history.slice(start);
}

/** A reopened conversation: one entry per prompt, text and tool rows in order. */
export function entriesFromHistory(history: readonly HistoryEntry[]): Entry[] {
  const entries: Entry[] = [];
  let entry: Entry | undefined;
  let turn = 0;
  for (const message of history) {
    if (message.role === "user") {
      entry = newEntry(message.content ?? "");
      entry.state = "done";
      entries.push(entry);
      turn = 0;
      continue;
    }
    if (entry === undefined || message.role !== "assistant") continue;
    turn += 1;
    const text = message.content ?? "";
    if (text.trim() !== "") entry.items.push({ kind: "text", id: freshId("t"), text, turn, channel: "answer" });
    for (const call of message.toolCalls ?? []) {
      const item: ToolItem = {
        kind: "tool",
        id: call.id,
        name: call.name,
        arguments: call.arguments,
        state: call.ok ? "ok" : "failed",
        turn,
        output: call.output,
      };
      // Named and worded as live activity (an MCP tool: "get_current_time — time (MCP server)").
      if (typeof call.displayName === "string" && call.displayName !== "") item.displayName = call.displayName;
      words(item, call);
      entry.items.push(item);
    }
  }
  return entries;
}

/**
 * What the server has that the local copy does not show: its entries after the last one the
 * copy shows (asks that failed here are only local), and, when the copy's last such entry is
 * an ask the server died in (`interrupted`), the server's copy of it to replace the local one
 * (`replace`: its index in the copy) — that ask is the server's too, and adding it again
 * showed it twice.
 */
export function missingEntries(local: Conversation, server: Conversation): { add: Entry[]; replace?: { index: number; entry: Entry } } {
  const prompts = server.entries.map((e) => e.prompt);
  for (let index = local.entries.length - 1; index >= 0; index--) {
    const entry = local.entries[index];
    if (!entry || !(entry.state === "done" || entry.state === "cancelled" || entry.interrupted)) continue;
    const at = prompts.lastIndexOf(entry.prompt);
    if (at < 0) return { add: [] }; // another conversation, or a copy we cannot place
    const add = server.entries.slice(at + 1);
    const own = server.entries[at];
    return entry.interrupted && own ? { add, replace: { index, entry: own } } : { add };
  }
  return { add: server.entries.slice() };
}

/** What is kept of a conversation between window reloads (capped so workspaceState stays small). */
export function compactConversation(conversation: Conversation, maxOutput = 2000): Conversation {
  const entries = conversation.entries.map((entry) => ({
    ...entry,
    state: entry.state === "working" ? ("cancelled" as const) : entry.state,
    items: entry.items
      .filter((i) => i.kind !== "card")
      .map((i) => {
        if (i.kind === "tool") {
          const copy: ToolItem = { ...i, state: i.state === "running" || i.state === "waiting" ? "failed" : i.state };
          if (copy.output !== undefined && copy.output.length > maxOutput) copy.output = copy.output.slice(0, maxOutput);
          return copy;
        }
        return { ...i };
      }),
  }));
  return { ...conversation, entries };
}
