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

import { describeAskError, type ErrorReport } from "../errors";
import {
  type AnswerDelta,
  type AskContext,
  type AskParams,
  type AskProgress,
  type AskResult,
  Methods,
  type NewSessionResult,
  type SessionHistoryResult,
  type ToolActivity,
} from "../protocol";
import {
  applyActivity,
  applyDelta,
  applyFailure,
  applyProgress,
  applyResult,
  applyTurnTexts,
  type Button,
  type Change,
  type Conversation,
  type Entry,
  type ErrorView,
  entriesFromHistory,
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

interface Running {
  entry: Entry;
  abort: AbortController;
  generation: number;
  sessionId: string | undefined;
  promise: Promise<SendOutcome>;
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
    if (this.running) return Promise.resolve({ kind: "busy" });
    const entry = newEntry(prompt);
    const hadNotice = this.conversation.notice !== undefined;
    this.conversation.notice = undefined;
    this.conversation.entries.push(entry);
    const running: Running = {
      entry,
      abort: new AbortController(),
      generation: this.generation,
      sessionId: this.conversation.sessionId,
      promise: Promise.resolve({ kind: "busy" }),
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
    if (!this.connection.supports(Methods.sessionHistory)) return;
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
    if (running) this.sink.changed(applyDelta(running.entry, delta));
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
