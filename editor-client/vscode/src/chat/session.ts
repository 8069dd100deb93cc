// One chat: the conversation shown, the server session behind it, and the ask running in it.
// No vscode import: the extension hands in a connection and a sink, the tests a fake of each.
//
// Rules the issue asks for, kept here in one place:
// - a conversation is pinned to its session and folder: follow-ups name both, whatever editor
//   is focused meanwhile (multi-root windows);
// - one ask at a time: send() refuses a second one while the first runs;
// - New Conversation (or reopening another) during an ask: the old ask's late result, progress
//   and activity are ignored (a generation counter and the session id filter them);
// - the status line comes from `agent/askProgress`'s structured fields, never from text.

import { compactionSummary } from "../compaction";
import { escapeControl } from "../display";
import { describeAskError, type ErrorReport } from "../errors";
import {
  type AnswerDelta,
  type AskContext,
  type AskParams,
  type AskProgress,
  type AskResult,
  type CompactionNotice,
  type CompactResult,
  Methods,
  type NewSessionResult,
  type SessionHistoryResult,
  type ToolActivity,
} from "../protocol";
import {
  applyActivity,
  applyDelta,
  applyFailure,
  applyNote,
  applyProgress,
  applyResult,
  applyTurnTexts,
  type Button,
  type Change,
  type Conversation,
  type Entry,
  type ErrorView,
  entriesFromHistory,
  freshId,
  lastAskMessages,
  newEntry,
} from "./model";

export interface Connection {
  request<R>(method: string, params: unknown, signal?: AbortSignal): Promise<R>;
  /** Whether the server advertised `method` (initialize's experimental.agent lists). */
  supports(method: string): boolean;
}

export interface ChatSink {
  /** The whole conversation changed (new, reopened). */
  reset(conversation: Conversation): void;
  changed(changes: Change[]): void;
  busy(busy: boolean, status?: string): void;
}

export interface SendOptions {
  /** The folder (URI) to start a new conversation in; a pinned one wins. */
  folder?: string | undefined;
  context?: AskContext | undefined;
  /** What the view shows under the prompt for `context` ("selection: src/app.py, lines 3-9"). */
  attached?: string | undefined;
  /** The configured model, for the footer when the result does not name one. */
  model?: string | undefined;
  /** Progress token for window/workDoneProgress. */
  workDoneToken?: string | undefined;
}

export type SendOutcome =
  | { kind: "answered"; entry: Entry; result: AskResult }
  | { kind: "failed"; entry: Entry; report: ErrorReport }
  | { kind: "busy" }
  /** The conversation was replaced while the ask ran: its outcome is not shown. */
  | { kind: "superseded" };

export type CompactOutcome =
  | { kind: "compacted"; result: CompactResult; summary: string }
  | { kind: "failed"; report: ErrorReport }
  /** An ask runs (the server would refuse: -32004), or there is no conversation yet. */
  | { kind: "busy" }
  | { kind: "empty" }
  | { kind: "unsupported" };

export type DeleteOutcome =
  /** Deleted; `current`: it was the conversation on screen (a new one is shown now). */
  | { kind: "deleted"; current: boolean }
  /** An ask runs in the conversation on screen: not deleted. */
  | { kind: "busy" };

/** The modal question before a conversation is deleted: it names the conversation. */
export function deleteQuestion(title: string | undefined): { name: string; message: string; detail: string } {
  const name = title?.trim() ? `"${escapeControl(title.trim())}"` : "(untitled)";
  return {
    name,
    message: `Delete the conversation ${name} for good?`,
    detail:
      "Its saved files and its checkpoints are deleted: it can no longer be reopened, and its asks can no longer be undone. Files it changed stay as they are.",
  };
}

interface Running {
  entry: Entry;
  abort: AbortController;
  generation: number;
  sessionId: string | undefined;
  promise: Promise<SendOutcome>;
  /** Text streamed (agent/answerDelta): the in-between turns' texts need no history request. */
  streamed: boolean;
}

/** What Retry sends with an entry's prompt again: the editor context the ask had, not today's. */
export function retryContext(entry: Entry): { context?: AskContext; label?: string } {
  const again: { context?: AskContext; label?: string } = {};
  if (entry.context) again.context = entry.context;
  if (entry.attached) again.label = entry.attached;
  return again;
}

export function errorView(report: ErrorReport, entry: Entry): ErrorView {
  const buttons: Button[] = report.actions.map((a, i) => {
    const button: Button = { title: a.title, action: a.action, args: { entryId: entry.id } };
    if (i === 0) button.primary = true;
    return button;
  });
  return { message: report.message, buttons };
}

function unknownSession(error: unknown): boolean {
  const e = error as { code?: unknown; data?: { field?: unknown } } | undefined;
  return e?.code === -32602 && e.data?.field === "sessionId";
}

export class ChatSession {
  conversation: Conversation = { entries: [] };
  private running: Running | undefined;
  private generation = 0;
  /** agent/compact in flight: the server would refuse an ask meanwhile (-32004). */
  private compacting = false;
  private readonly now: () => number;

  constructor(
    private readonly connection: Connection,
    private readonly sink: ChatSink,
    options: { now?: () => number } = {},
  ) {
    this.now = options.now ?? Date.now;
  }

  get busy(): boolean {
    return this.running !== undefined;
  }

  get runningEntry(): Entry | undefined {
    return this.running?.entry;
  }

  /** The ask in flight, to wait for (a busy notification lasts exactly as long). */
  get runningAsk(): Promise<SendOutcome> | undefined {
    return this.running?.promise;
  }

  get sessionId(): string | undefined {
    return this.conversation.sessionId;
  }

  entry(id: string): Entry | undefined {
    return this.conversation.entries.find((e) => e.id === id);
  }

  /** Start an ask; resolves when it ends (or at once when another one runs). */
  send(prompt: string, options: SendOptions = {}): Promise<SendOutcome> {
    if (this.running || this.compacting) return Promise.resolve({ kind: "busy" });
    const entry = newEntry(prompt);
    if (options.attached) entry.attached = options.attached;
    if (options.context) entry.context = options.context;
    const hadNotice = this.conversation.notice !== undefined;
    this.conversation.notice = undefined;
    this.conversation.entries.push(entry);
    const running: Running = {
      entry,
      abort: new AbortController(),
      generation: this.generation,
      sessionId: this.conversation.sessionId,
      promise: Promise.resolve({ kind: "busy" }),
      streamed: false,
    };
    this.running = running;
    if (hadNotice) this.sink.reset(this.conversation);
    else this.sink.changed([{ part: "entry", entry }]);
    this.sink.busy(true, "Working…");
    running.promise = this.run(running, prompt, options);
    return running.promise;
  }

  private current(running: Running): boolean {
    return this.running === running && running.generation === this.generation;
  }

  private async run(running: Running, prompt: string, options: SendOptions): Promise<SendOutcome> {
    const { entry } = running;
    const startedAt = this.now();
    try {
      await this.ensureSession(running, options.folder);
      if (!this.current(running)) return { kind: "superseded" };
      const params: AskParams = { prompt };
      if (this.conversation.sessionId) params.sessionId = this.conversation.sessionId;
      if (this.conversation.folder) params.workspaceFolder = this.conversation.folder;
      else if (options.folder) params.workspaceFolder = options.folder;
      if (options.workDoneToken) params.workDoneToken = options.workDoneToken;
      if (options.context) params.context = options.context;
      if (this.conversation.disabledTools?.length) params.disabledTools = [...this.conversation.disabledTools];
      const result = await this.connection.request<AskResult>(Methods.ask, params, running.abort.signal);
      if (!this.current(running)) return { kind: "superseded" };
      this.conversation.sessionId = result.sessionId;
      running.sessionId = result.sessionId;
      if (!this.conversation.folder && params.workspaceFolder) this.conversation.folder = params.workspaceFolder;
      const changes = applyResult(entry, result, this.now() - startedAt, options.model);
      this.sink.changed(changes);
      this.finish(running);
      void this.addTurnTexts(running, result.sessionId);
      return { kind: "answered", entry, result };
    } catch (error) {
      if (!this.current(running)) return { kind: "superseded" };
      let report = describeAskError(error);
      if (unknownSession(error)) {
        // The server no longer has it (its files were removed): the next ask starts anew.
        this.conversation.sessionId = undefined;
        this.conversation.folder = undefined;
        report = {
          ...report,
          message: "The server no longer has this conversation. Retry to send the prompt as a new conversation.",
          actions: [{ title: "Retry", action: "retry" }],
        };
      }
      const changes = report.cancelled
        ? applyFailure(entry, "cancelled")
        : applyFailure(entry, "error", errorView(report, entry));
      this.sink.changed(changes);
      this.finish(running);
      return { kind: "failed", entry, report };
    }
  }

  private finish(running: Running): void {
    if (this.running === running) this.running = undefined;
    this.sink.busy(false);
  }

  /** A new conversation gets its session (and so its id and folder) before the first ask. */
  private async ensureSession(running: Running, folder: string | undefined): Promise<void> {
    if (this.conversation.sessionId || !this.connection.supports(Methods.newSession)) return;
    const result = await this.connection.request<NewSessionResult>(
      Methods.newSession,
      folder ? { workspaceFolder: folder } : {},
      running.abort.signal,
    );
    if (!this.current(running)) return;
    this.conversation.sessionId = result.sessionId;
    this.conversation.folder = result.workspaceFolder;
    running.sessionId = result.sessionId;
  }

  /** The text the model wrote in turns that also called tools, from the session's history. */
  private async addTurnTexts(running: Running, sessionId: string): Promise<void> {
    if (!this.connection.supports(Methods.sessionHistory) || running.streamed) return;
    if (!running.entry.items.some((i) => i.kind === "tool")) return;
    try {
      const history = await this.connection.request<SessionHistoryResult>(Methods.sessionHistory, { sessionId });
      if (this.conversation.sessionId !== sessionId || !this.conversation.entries.includes(running.entry)) return;
      const changes = applyTurnTexts(running.entry, lastAskMessages(history.entries ?? []));
      if (changes.length) this.sink.changed(changes);
    } catch {
      // Only the in-between text is missing; the answer is shown.
    }
  }

  stop(): boolean {
    if (!this.running) return false;
    this.running.abort.abort();
    return true;
  }

  /** The activity of another session (an old ask, another client) is not this conversation's. */
  private accepts(sessionId: string): Running | undefined {
    const running = this.running;
    if (!running || running.generation !== this.generation) return undefined;
    if (running.sessionId === undefined) {
      // A server without agent/newSession names the session first in the ask's own events.
      running.sessionId = sessionId;
      this.conversation.sessionId ??= sessionId;
    }
    return running.sessionId === sessionId ? running : undefined;
  }

  onActivity(activity: ToolActivity): void {
    const running = this.accepts(activity.sessionId);
    if (running) this.sink.changed(applyActivity(running.entry, activity));
  }

  onProgress(progress: AskProgress): void {
    const running = this.accepts(progress.sessionId);
    if (!running) return;
    const changes = applyProgress(running.entry, progress);
    if (changes.length) {
      this.sink.changed(changes);
      this.sink.busy(true, running.entry.status);
    }
  }

  onDelta(delta: AnswerDelta): void {
    const running = this.accepts(delta.sessionId);
    if (!running) return;
    running.streamed = true;
    const changes = applyDelta(running.entry, delta);
    if (changes.length) this.sink.changed(changes);
  }

  /** The running ask compacted its conversation: a one-line note where it happened. */
  onCompaction(notice: CompactionNotice): void {
    const running = this.accepts(notice.sessionId);
    if (running) this.sink.changed(applyNote(running.entry, freshId("n"), compactionSummary(notice)));
  }

  /**
   * Compact the conversation now (agent/compact). The result is a note under the last ask, and
   * that ask's footer shows the context as it is now.
   */
  async compact(): Promise<CompactOutcome> {
    if (!this.connection.supports(Methods.compact)) return { kind: "unsupported" };
    if (this.running) return { kind: "busy" };
    const sessionId = this.conversation.sessionId;
    const entry = this.conversation.entries[this.conversation.entries.length - 1];
    if (!sessionId || !entry) return { kind: "empty" };
    const generation = this.generation;
    const noteId = freshId("n");
    this.sink.changed(applyNote(entry, noteId, "compacting the conversation…"));
    const stillShown = () => this.generation === generation && this.conversation.entries.includes(entry);
    this.compacting = true;
    try {
      const result = await this.connection.request<CompactResult>(Methods.compact, { sessionId });
      const summary = compactionSummary(result);
      if (stillShown()) {
        const changes = applyNote(entry, noteId, summary);
        if (entry.footer) {
          entry.footer.usage = { ...entry.footer.usage, contextTokens: result.tokensAfter, contextWindow: result.contextWindow };
          changes.push({ part: "tail", entry });
        }
        this.sink.changed(changes);
      }
      return { kind: "compacted", result, summary };
    } catch (error) {
      const report = describeAskError(error);
      if (stillShown()) this.sink.changed(applyNote(entry, noteId, `compaction failed: ${report.message}`));
      return { kind: "failed", report };
    } finally {
      this.compacting = false;
    }
  }

  /**
   * Start over (New Conversation) or show another one (reopen): a running ask is cancelled
   * and whatever it still sends is ignored. Returns the conversation that was shown.
   */
  replace(conversation: Conversation): Conversation {
    const old = this.conversation;
    this.generation += 1;
    if (this.running) {
      this.running.abort.abort();
      this.running = undefined;
      this.sink.busy(false);
    }
    this.conversation = conversation;
    this.sink.reset(conversation);
    return old;
  }

  /**
   * Delete a saved conversation for good (agent/endSession: its files and its checkpoints),
   * once the user confirmed. The one on screen deleted, the view starts a new one; one with
   * an ask running is not deleted (stop the ask first).
   */
  async deleteSession(sessionId: string): Promise<DeleteOutcome> {
    const current = this.conversation.sessionId === sessionId;
    if (current && (this.running || this.compacting)) return { kind: "busy" };
    await this.connection.request(Methods.endSession, { sessionId });
    const shown = this.conversation.sessionId === sessionId;
    if (shown) this.replace({ entries: [] });
    return { kind: "deleted", current: shown };
  }

  /** A past conversation from the server's history (no local copy of it). */
  static fromHistory(history: SessionHistoryResult, title?: string): Conversation {
    const conversation: Conversation = {
      sessionId: history.sessionId,
      entries: entriesFromHistory(history.entries ?? []),
    };
    if (history.workspaceFolder) conversation.folder = history.workspaceFolder;
    if (title) conversation.title = title;
    return conversation;
  }

  /** The server restarted: its sessions are gone unless it persisted them. */
  serverLost(notice: string): void {
    if (this.running) {
      const running = this.running;
      this.running = undefined;
      running.entry.interrupted = true; // the server has it, listed interrupted (missingEntries)
      this.sink.changed(
        applyFailure(running.entry, "error", { message: "The agent-lsp server stopped during this ask.", buttons: [] }),
      );
      this.sink.busy(false);
    }
    // A server that keeps sessions (agent/sessions) continues this one; otherwise it is gone.
    if (!this.connection.supports(Methods.sessions)) {
      this.conversation.sessionId = undefined;
      this.conversation.notice = notice;
    }
    this.sink.reset(this.conversation);
  }
}
