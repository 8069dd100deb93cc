// The chat in VS Code: the view, the session behind it, what the view's buttons do, the
// conversation history, the read-only "full output" documents. extension.ts owns the server
// process and hands this a connection; features of later issues hook in through
// registerAction / addCard / addEntryAction / onDidFinishAsk.

import { existsSync } from "node:fs";
import { isAbsolute, join, relative } from "node:path";
import * as vscode from "vscode";
import { type BuiltContext, buildContext, contextLabel, type EditorSnapshot, isEmpty, lineSpan, type PickedDocument, withDocuments } from "../editor-context";
import { describeAskError, type ErrorReport, toastActions } from "../errors";
import { joinWorkspacePath, resolveLink } from "../links";
import type { PermissionCard, PermissionRequest } from "../permissions";
import {
  type AnswerDelta,
  type AskContext,
  type AskProgress,
  type CompactionNotice,
  Methods,
  type SessionHistoryResult,
  type SessionsResult,
  type ToolActivity,
  type ToolOutputResult,
  toDate,
} from "../protocol";
import type { FromView, ToView } from "./messages";
import { applyCard, type Button, type CardItem, type Change, type Conversation, type Entry, missingEntries, removeItem } from "./model";
import { cutCount, partId, type RenderOptions } from "./render";
import { ActiveFileChip } from "./active-file";
import { PermissionCards } from "./permission-cards";
import { EditDiffs } from "./edit-diffs";
import { ToolOutputs } from "./tool-outputs";
import { truncate } from "../summary";
import { PathExistsCache } from "./path-cache";
import { ProjectContext } from "./project";
import { type BuiltinRoute, builtinRoute } from "../slash-commands";
import { ChatSession, type Connection, type DeleteOutcome, deleteQuestion, retryContext, type SendOutcome } from "./session";
import { ChatStore } from "./store";
import { ChatView } from "./view";

export const OUTPUT_SCHEME = "agent-lsp-output";

export interface ChatHost {
  connection: Connection;
  /** The folder of the active editor, else the first (a new conversation starts there). */
  currentFolder(): vscode.WorkspaceFolder | undefined;
  /** The configured model name, for answers whose result does not name one. */
  configuredModel(): string | undefined;
  /** The server accepts `context` on agent/ask. */
  acceptsContext(): boolean;
  /** `agentLsp.sendActiveEditor`: every ask sends the active editor and its selection. */
  sendActiveEditor(): boolean;
  /** The ask started / ended (status bar, trace). */
  onAskStarted(prompt: string, sessionId: string | undefined): void;
  onAskEnded(outcome: SendOutcome, elapsedMs: number): void;
  /** An action the extension itself handles (open settings, show log, ...). */
  runAction(action: string): Promise<void>;
  /** A built-in command typed or picked in the input (`/compact`, `/undo`, ...). */
  runBuiltin(route: BuiltinRoute): Promise<void>;
  workDoneToken(): { token: string; dispose(): void } | undefined;
}

export class ChatController implements vscode.Disposable, vscode.TextDocumentContentProvider {
  readonly session: ChatSession;
  readonly view: ChatView;
  /** The instruction chips, the `/` commands and the `@` files around the input. */
  readonly project: ProjectContext;
  private readonly store: ChatStore;
  /** `path:line` lookups of the answers on screen (forgotten when files may have changed). */
  private readonly paths = new PathExistsCache((full) => existsSync(full));
  private readonly disposables: vscode.Disposable[] = [];
  /** What "Ask About Selection" attached to the next prompt (shown above the input). */
  private pinned: { editor: EditorSnapshot; shown: string; label: string } | undefined;
  private readonly finished = new vscode.EventEmitter<{ entry: Entry; sessionId: string | undefined }>();
  /** An ask ended: `entry` is in the conversation of `sessionId` (checkpoints add buttons here). */
  readonly onDidFinishAsk = this.finished.event;
  private readonly reopenedEmitter = new vscode.EventEmitter<string | undefined>();
  /** A past conversation was reopened (from the history, or after a reload): checkpoints add buttons. */
  readonly onDidReopen = this.reopenedEmitter.event;
  /** The chip of the file you are looking at, above the input. */
  private readonly activeFile: ActiveFileChip;
  /** An edit row's file link: the change in VS Code's diff editor. */
  private readonly edits = new EditDiffs(() => this.folderUri());
  /** Tool rows' whole outputs: their tails, Show all, Copy output. */
  private readonly outputs: ToolOutputs;
  /** Permission requests asked on cards in the chat. */
  private readonly permissionCards = new PermissionCards({
    sessionId: () => this.session.sessionId,
    runningEntry: () => this.session.runningEntry,
    addCard: (card, entryId) => this.addCard(card, entryId),
    visible: () => this.view.visible,
    reveal: () => void this.view.reveal(false),
  });

  constructor(
    context: vscode.ExtensionContext,
    private readonly host: ChatHost,
  ) {
    this.store = new ChatStore(context.workspaceState);
    this.view = new ChatView(context.extensionUri, {
      conversation: () => this.session.conversation,
      renderOptions: () => this.renderOptions(),
      pageState: () => this.pageState(),
      onMessage: (m) => void this.onMessage(m),
    });
    this.session = new ChatSession(host.connection, {
      reset: (conversation) => {
        this.paths.forget();
        this.view.resetPage();
        this.remember(conversation);
        this.project.refresh(); // another conversation: its folder's, and what it was told
        this.activeFile.refresh();
      },
      changed: (changes) => this.view.changed(changes),
      busy: (busy, status) => {
        void vscode.commands.executeCommand("setContext", "agentLsp.busy", busy);
        this.view.post(status === undefined ? { type: "busy", busy } : { type: "busy", busy, status });
      },
    });
    this.activeFile = new ActiveFileChip({
      enabled: () => this.host.acceptsContext() && this.pinned === undefined,
      sendActiveEditor: () => this.host.sendActiveEditor(),
      folderPath: () => this.folderPath(),
      post: (message) => this.view.post(message),
    });
    this.outputs = new ToolOutputs({
      connection: host.connection,
      sessionId: () => this.session.sessionId,
      changed: (changes) => this.view.changed(changes),
      post: (message) => this.view.post(message),
    });
    this.project = new ProjectContext({
      connection: host.connection,
      sessionId: () => this.session.sessionId,
      folder: () => this.folderUri(),
      acceptsContext: () => host.acceptsContext(),
      post: (message) => this.view.post(message),
      registerAction: (name, handler) => this.registerAction(name, handler),
    });
    this.disposables.push(
      this.project,
      vscode.window.registerWebviewViewProvider(ChatView.viewId, this.view, {
        // Live updates keep arriving while another view is in front; the scroll stays put.
        webviewOptions: { retainContextWhenHidden: true },
      }),
      vscode.workspace.registerTextDocumentContentProvider(OUTPUT_SCHEME, this),
      this.watchFiles(),
      this.edits,
      this.activeFile,
      this.view,
      this.finished,
      this.reopenedEmitter,
    );
    this.registerActions();
  }

  // -- what the view shows ---------------------------------------------------------------------

  private renderOptions(): RenderOptions {
    return { toolOutput: this.host.connection.supports(Methods.toolOutput), exists: (p) => this.pathExists(p) };
  }

  private pageState(): ToView[] {
    const messages: ToView[] = [
      { type: "prompts", prompts: this.store.prompts },
      { type: "draft", text: this.store.draft },
      this.pinned ? { type: "pinned", label: this.pinned.label } : { type: "pinned" },
      ...this.project.pageState(),
    ];
    this.activeFile.refresh();
    const entry = this.session.runningEntry;
    messages.push(entry ? { type: "busy", busy: true, status: entry.status ?? "Working…" } : { type: "busy", busy: false });
    return messages;
  }

  /** The folder the conversation acts in (its own, else the current one). */
  private folderUri(): vscode.Uri | undefined {
    const pinned = this.session.conversation.folder;
    if (!pinned) return this.host.currentFolder()?.uri;
    try {
      return vscode.Uri.parse(pinned);
    } catch {
      return undefined;
    }
  }

  /** The folder the conversation acts in, as a path (links resolve against it). */
  private folderPath(): string | undefined {
    const pinned = this.session.conversation.folder;
    if (pinned) {
      try {
        return vscode.Uri.parse(pinned).fsPath;
      } catch {
        return undefined;
      }
    }
    return this.host.currentFolder()?.uri.fsPath;
  }

  /** A `path:line` in an answer is a link only if it names a file of the workspace. */
  private pathExists(path: string): boolean {
    const folders = vscode.workspace.workspaceFolders ?? [];
    if (isAbsolute(path)) {
      const inside = folders.some((f) => {
        const rel = relative(f.uri.fsPath, path);
        return rel !== "" && !rel.startsWith("..") && !isAbsolute(rel);
      });
      return inside && this.paths.exists(path);
    }
    const base = this.folderPath();
    return base !== undefined && !path.split("/").includes("..") && this.paths.exists(join(base, path));
  }

  /** Files created or deleted (by the user, the agent, git): existence is looked up again. */
  private watchFiles(): vscode.Disposable {
    const watcher = vscode.workspace.createFileSystemWatcher("**/*", false, true, false);
    const forget = () => this.paths.forget();
    return vscode.Disposable.from(watcher, watcher.onDidCreate(forget), watcher.onDidDelete(forget));
  }

  private remember(conversation: Conversation): void {
    this.store.setCurrent(conversation.sessionId);
    this.store.save(conversation);
  }

  // -- restoring after a reload ----------------------------------------------------------------

  /** Show the conversation that was on screen before the window reloaded. */
  async restore(): Promise<void> {
    const sessionId = this.store.currentSessionId;
    if (!sessionId) return;
    const local = this.store.load(sessionId);
    if (!local) {
      await this.openSession(sessionId).catch(() => undefined);
      return;
    }
    this.session.replace(local);
    // The window may have reloaded before the last copy was written: asks the server has and
    // the copy does not are added from its history.
    if (!this.host.connection.supports(Methods.sessionHistory)) return;
    try {
      const history = await this.host.connection.request<SessionHistoryResult>(Methods.sessionHistory, { sessionId });
      if (this.session.conversation !== local || this.session.busy) return;
      const missing = missingEntries(local, ChatSession.fromHistory(history));
      if (missing.add.length === 0 && !missing.replace) return;
      if (missing.replace) local.entries[missing.replace.index] = missing.replace.entry;
      local.entries.push(...missing.add);
      this.session.replace(local);
      // The server's entries have no buttons yet: checkpoints add them (an interrupted ask's
      // "Interrupted" and its Undo), as for a conversation reopened from the history.
      this.reopenedEmitter.fire(sessionId);
    } catch {
      // The server no longer has it: the copy is what there is to show.
    }
  }

  // -- asks ------------------------------------------------------------------------------------

  /**
   * Send a prompt in this conversation; false if one is already running. `again`: Retry of
   * that entry, with the editor context it was sent with; `documents`: the URIs of the files
   * picked with `@`.
   */
  async send(prompt: string, fromChips?: { activeFile?: string }, again?: Entry, documents: readonly string[] = []): Promise<boolean> {
    if (prompt.trim() === "") return false;
    if (this.session.busy) {
      void this.view.reveal(false);
      return false;
    }
    this.store.addPrompt(prompt);
    const folder = this.session.conversation.folder ? undefined : this.host.currentFolder()?.uri.toString();
    const { context, label } = again ? retryContext(again) : this.askContext(fromChips, documents);
    const progress = this.host.workDoneToken();
    this.host.onAskStarted(prompt, this.session.sessionId);
    const startedAt = Date.now();
    this.view.post({ type: "follow" }); // the user's own action: show it, even if they had scrolled up
    const outcome = this.session.send(prompt, {
      folder,
      context,
      attached: label,
      model: this.host.configuredModel(),
      workDoneToken: progress?.token,
    });
    // The view's own progress bar: it ends with the ask, whatever the outcome.
    void vscode.window.withProgress({ location: { viewId: ChatView.viewId } }, () => outcome);
    const result = await outcome;
    progress?.dispose();
    this.host.onAskEnded(result, Date.now() - startedAt);
    if (result.kind === "answered") this.retireRetries(result.entry);
    if (result.kind === "answered" || result.kind === "failed") {
      this.remember(this.session.conversation);
      this.finished.fire({ entry: result.entry, sessionId: this.session.sessionId });
    }
    this.project.refresh(); // a new conversation's, and a subfolder's instructions it was given
    if (result.kind === "failed" && !result.report.cancelled && !this.view.visible) void this.toast(result.report, result.entry);
    return result.kind !== "busy";
  }

  stop(): boolean {
    return this.session.stop();
  }

  /** An ask answered: earlier failed ones lose their Retry (the conversation went on). */
  private retireRetries(answered: Entry): void {
    const changes: Change[] = [];
    for (const entry of this.session.conversation.entries) {
      if (entry === answered || entry.state !== "error" || !entry.error?.buttons.some((b) => b.action === "retry")) continue;
      entry.error = { ...entry.error, buttons: entry.error.buttons.filter((b) => b.action !== "retry") };
      changes.push({ part: "tail", entry });
    }
    if (changes.length) this.view.changed(changes);
  }

  // -- editor context --------------------------------------------------------------------------

  /**
   * The context of the next ask: what Ask About Selection attached, else what the chat's chips
   * showed (`fromChips`: the active file's chip, if attached), else, for an ask from elsewhere
   * (Quick Input, a command), the active editor when agentLsp.sendActiveEditor is on; only for
   * a server that accepts it.
   */
  private askContext(fromChips: { activeFile?: string } | undefined, documents: readonly string[] = []): { context?: AskContext; label?: string } {
    if (!this.host.acceptsContext()) return {};
    const pinned = this.pinned;
    if (pinned) this.setPinned(undefined);
    const editor = activeEditor();
    let fromEditor: BuiltContext;
    if (pinned) fromEditor = buildContext(pinned.editor, this.folderPath(), { auto: false, attach: ["selection"] }, pinned.shown);
    else if (fromChips) fromEditor = this.activeFile.context(fromChips.activeFile);
    else {
      fromEditor = buildContext(
        editor && snapshot(editor),
        this.folderPath(),
        { auto: this.host.sendActiveEditor(), attach: [] },
        editor ? vscode.workspace.asRelativePath(editor.document.uri, false) : "",
      );
    }
    const built = withDocuments(fromEditor, documents.map(pickedDocument), this.folderPath());
    if (built.skipped) vscode.window.setStatusBarMessage(`$(warning) Agent: not attached: ${built.skipped}`, 5000);
    const result: { context?: AskContext; label?: string } = {};
    if (built.context) result.context = built.context;
    if (built.label) result.label = built.label;
    return result;
  }

  /** Show the active file's chip again (the server's capabilities are known now). */
  refreshActiveFile(): void {
    this.activeFile.refresh();
  }

  private setPinned(pinned: { editor: EditorSnapshot; shown: string; label: string } | undefined): void {
    this.pinned = pinned;
    this.view.post(pinned ? { type: "pinned", label: pinned.label } : { type: "pinned" });
    this.activeFile.refresh(); // the pinned selection stands for the file while it is there
  }

  /**
   * Agent: Ask About Selection: the chat's input, focused, with the selection attached to the
   * next prompt (sent at once when `prompt` is given). A server that takes no editor context
   * gets the selected text in the prompt instead.
   */
  async askAboutSelection(prompt?: string): Promise<void> {
    const editor = activeEditor();
    if (!editor || isEmpty(snapshot(editor).selection)) {
      void vscode.window.showInformationMessage("Agent: select the code to ask about first.");
      return;
    }
    const shown = vscode.workspace.asRelativePath(editor.document.uri, false);
    const selection = snapshot(editor).selection;
    if (!this.host.acceptsContext()) {
      const text = editor.document.getText(editor.selection);
      // The selection quoted in the prompt, the way a user would paste it.
      const fence = "`".repeat(Math.max(3, ...Array.from(text.matchAll(/`+/g), (m) => m[0].length + 1)));
      const quoted = `${prompt ?? ""}\n\n${shown}, ${lineSpan(selection)}:\n${fence}\n${text}\n${fence}\n`.trimStart();
      if (prompt !== undefined) {
        await this.view.reveal(false);
        await this.send(quoted);
      } else {
        await this.view.reveal(true, quoted);
      }
      return;
    }
    this.setPinned({ editor: snapshot(editor), shown, label: contextLabel({ uri: "", selection }, shown) });
    if (prompt !== undefined) {
      await this.view.reveal(false);
      await this.send(prompt);
    } else {
      await this.view.reveal(true);
    }
  }

  // -- compaction ------------------------------------------------------------------------------

  /** Agent: Compact Conversation: agent/compact for this conversation, its result in the view. */
  async compact(): Promise<void> {
    const outcome = await this.session.compact();
    switch (outcome.kind) {
      case "compacted":
        if (!this.view.visible) void vscode.window.showInformationMessage(`Agent: ${outcome.summary}.`);
        this.remember(this.session.conversation);
        break;
      case "failed":
        if (!this.view.visible) void this.toast(outcome.report);
        break;
      case "busy":
        void vscode.window.showInformationMessage("Agent: an ask is running; compact the conversation after it.");
        break;
      case "empty":
        void vscode.window.showInformationMessage("Agent: no conversation to compact yet.");
        break;
      case "unsupported":
        void vscode.window.showInformationMessage("Agent: this agent-lsp server cannot compact conversations (update it).");
        break;
    }
  }

  onCompaction(notice: CompactionNotice): void {
    this.session.onCompaction(notice);
  }

  /** The view's status line while an ask runs (when the server sends no agent/askProgress). */
  showProgressText(text: string): void {
    const entry = this.session.runningEntry;
    if (!entry || this.host.connection.supports(Methods.askProgress)) return;
    entry.status = text;
    this.view.changed([{ part: "tail", entry }]);
    this.view.post({ type: "busy", busy: true, status: text });
  }

  onActivity(activity: ToolActivity): void {
    // A tool call may create or remove files before the watcher says so.
    if (activity.status !== "started") this.paths.forget();
    this.session.onActivity(activity);
    const entry = this.session.runningEntry;
    if (entry && (activity.status === "completed" || activity.status === "failed") && cutCount(activity.output) !== undefined) {
      void this.outputs.finished(entry, activity.callId);
    }
  }

  onProgress(progress: AskProgress): void {
    this.session.onProgress(progress);
  }

  onDelta(delta: AnswerDelta): void {
    this.session.onDelta(delta);
  }

  /** The tools this conversation's asks leave out (Agent: Configure Tools…), kept with it. */
  get disabledTools(): readonly string[] {
    return this.session.conversation.disabledTools ?? [];
  }

  setDisabledTools(names: readonly string[]): void {
    const conversation = this.session.conversation;
    if (names.length) conversation.disabledTools = [...names];
    else delete conversation.disabledTools;
    this.store.save(conversation);
  }

  /** Start over; the old conversation stays in the history (the server keeps it). */
  async newConversation(): Promise<void> {
    const old = this.session.replace({ entries: [] });
    this.store.save(old);
    this.store.setCurrent(undefined);
    if (old.sessionId && !this.host.connection.supports(Methods.sessions)) {
      // A server without history: nothing will show it again, so free it.
      await this.host.connection.request(Methods.endSession, { sessionId: old.sessionId }).catch(() => undefined);
    }
  }

  // -- history ---------------------------------------------------------------------------------

  /** This window's folders' saved conversations as quick pick items, newest first (undefined: said why not). */
  private async sessionItems(): Promise<(vscode.QuickPickItem & { sessionId: string; title: string })[] | undefined> {
    if (!this.host.connection.supports(Methods.sessions)) {
      void vscode.window.showInformationMessage("Agent: this agent-lsp server keeps no conversation history.");
      return undefined;
    }
    let result: SessionsResult;
    try {
      result = await this.host.connection.request<SessionsResult>(Methods.sessions, {});
    } catch (error) {
      void this.toast(describeAskError(error));
      return undefined;
    }
    // The server keeps every workspace's conversations; this window lists its own folders'.
    const folders = new Set((vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath));
    const sessions = (result.sessions ?? []).filter((s) => folders.has(folderLabel(s.workspaceFolder))).sort(
      (a, b) => (toDate(b.updated)?.getTime() ?? 0) - (toDate(a.updated)?.getTime() ?? 0),
    );
    if (sessions.length === 0) {
      void vscode.window.showInformationMessage("Agent: no past conversations in this workspace yet.");
      return undefined;
    }
    const current = this.session.sessionId;
    return sessions.map((s) => ({
      label: `${s.sessionId === current ? "$(comment-discussion) " : s.state === "interrupted" ? "$(warning) " : ""}${s.title || "(untitled)"}`,
      // An ask that never finished (its server died): said, so the user can reopen it and undo it.
      description: [s.state === "interrupted" ? "interrupted" : "", ago(toDate(s.updated)), `${s.turns} ask${s.turns === 1 ? "" : "s"}`]
        .filter((p) => p)
        .join(" · "),
      detail: folderLabel(s.workspaceFolder),
      sessionId: s.sessionId,
      title: s.title || "",
    }));
  }

  async showHistory(): Promise<void> {
    const items = await this.sessionItems();
    if (!items) return;
    const current = this.session.sessionId;
    // Each row's trash button deletes that conversation (confirmed, as Delete Conversation… does).
    const trash: vscode.QuickInputButton = { iconPath: new vscode.ThemeIcon("trash"), tooltip: "Delete this conversation…" };
    const picker = vscode.window.createQuickPick<(typeof items)[number]>();
    picker.title = "Agent: Conversations";
    picker.placeholder = "Reopen a conversation to read or continue it (its trash button deletes it)";
    picker.matchOnDescription = true;
    picker.matchOnDetail = true;
    picker.items = items.map((item) => ({ ...item, buttons: [trash] }));
    const chosen = await new Promise<{ reopen?: (typeof items)[number] | undefined; remove?: (typeof items)[number] }>((resolve) => {
      picker.onDidAccept(() => resolve({ reopen: picker.selectedItems[0] }));
      picker.onDidTriggerItemButton((event) => resolve({ remove: event.item }));
      picker.onDidHide(() => resolve({}));
      picker.show();
    });
    picker.dispose();
    if (chosen.remove) {
      await this.confirmAndDelete(chosen.remove);
      return;
    }
    const pick = chosen.reopen;
    if (pick && pick.sessionId !== current) await this.openSession(pick.sessionId, pick.label);
    if (pick) await this.view.reveal(false);
  }

  /**
   * Agent: Delete Conversation…: pick one of the saved conversations, confirm in a modal that
   * names it, then agent/endSession (New Conversation never deletes one).
   */
  async deleteConversation(): Promise<void> {
    const items = await this.sessionItems();
    if (!items) return;
    const pick = await vscode.window.showQuickPick(items, {
      title: "Agent: Delete Conversation",
      placeHolder: "Delete a conversation for good (you confirm next)",
      matchOnDescription: true,
      matchOnDetail: true,
    });
    if (pick) await this.confirmAndDelete(pick);
  }

  private async confirmAndDelete(pick: { sessionId: string; title: string }): Promise<void> {
    const question = deleteQuestion(pick.title);
    // Keep comes first: the button a modal focuses is never the one that deletes (a cancel
    // affordance would not be focused: VS Code focuses the first other button).
    const answer = await vscode.window.showWarningMessage(question.message, { modal: true, detail: question.detail }, "Keep", "Delete");
    if (answer !== "Delete") return;
    let outcome: DeleteOutcome;
    try {
      outcome = await this.session.deleteSession(pick.sessionId);
    } catch (error) {
      void this.toast(describeAskError(error));
      return;
    }
    if (outcome.kind === "busy") {
      void vscode.window.showInformationMessage("Agent: an ask is running in that conversation; stop it first.");
      return;
    }
    this.store.forget(pick.sessionId);
    if (outcome.current) this.store.setCurrent(undefined);
    void vscode.window.showInformationMessage(`Agent: deleted the conversation ${question.name}.`);
  }

  /** Show a past conversation (its local copy, else the server's history) and continue it. */
  async openSession(sessionId: string, title?: string): Promise<void> {
    let conversation = this.store.load(sessionId);
    if (!conversation) {
      const history = await this.host.connection.request<SessionHistoryResult>(Methods.sessionHistory, { sessionId });
      conversation = ChatSession.fromHistory(history, title);
    }
    const old = this.session.replace(conversation);
    this.store.save(old);
    this.reopenedEmitter.fire(conversation.sessionId);
  }

  // -- hooks for other features ----------------------------------------------------------------

  registerAction(name: string, handler: (args: Record<string, string>) => unknown): vscode.Disposable {
    return this.view.registerAction(name, handler);
  }

  /** Put a card (a permission request, a confirmation) into the running ask's entry. */
  addCard(card: CardItem, entryId?: string): boolean {
    const entry = entryId ? this.session.entry(entryId) : this.session.runningEntry;
    if (!entry) return false;
    this.view.changed(applyCard(entry, card));
    return true;
  }

  /** A permission request of the running ask, asked on a card in its entry (permission-cards.ts). */
  askPermission(request: PermissionRequest, card: PermissionCard, withdrawn: Promise<void>): Promise<string | undefined> | undefined {
    return this.permissionCards.ask(request, card, withdrawn);
  }

  removeCard(cardId: string, entryId?: string): void {
    const entry = entryId ? this.session.entry(entryId) : this.session.runningEntry;
    const removed = entry ? removeItem(entry, cardId) : undefined;
    if (entry && removed) this.view.post({ type: "remove", id: partId.item(entry, removed) });
  }

  /** What the ask changed ("2 files changed"), shown with the buttons under its answer. */
  setEntryChanges(entryId: string, text: string): void {
    const entry = this.session.entry(entryId);
    if (!entry) return;
    entry.changes = text;
    this.view.changed([{ part: "tail", entry }]);
  }

  /** Add a button under an answer (e.g. "Show changes"); replaces one with the same action. */
  addEntryAction(entryId: string, button: Button): void {
    const entry = this.session.entry(entryId);
    if (!entry) return;
    entry.actions = [...entry.actions.filter((b) => b.action !== button.action), button];
    const change: Change = { part: "tail", entry };
    this.view.changed([change]);
  }

  // -- the page's messages and buttons ---------------------------------------------------------

  private async onMessage(message: FromView): Promise<void> {
    switch (message.type) {
      case "send":
        await this.send(message.prompt, typeof message.activeFile === "string" ? { activeFile: message.activeFile } : {}, undefined, strings(message.documents));
        break;
      case "builtin": {
        const route = builtinRoute(message.name, message.args);
        if (route) await this.host.runBuiltin(route);
        break;
      }
      case "listCommands":
        await this.project.listCommands();
        break;
      case "findFiles":
        if (typeof message.id === "number" && typeof message.query === "string") await this.project.findFiles(message.id, message.query);
        break;
      case "stop":
        this.stop();
        break;
      case "draft":
        this.store.setDraft(message.text);
        break;
      default:
        break;
    }
  }

  private registerActions(): void {
    const entryOf = (args: Record<string, string>) => (args.entryId ? this.session.entry(args.entryId) : undefined);
    this.disposables.push(
      this.registerAction("openLink", (args) => this.openLink(args.href ?? "")),
      this.registerAction("copyCode", async (args) => {
        await vscode.env.clipboard.writeText(args.text ?? "");
        vscode.window.setStatusBarMessage("$(check) Code copied", 2000);
      }),
      this.registerAction("insertCode", (args) => insertAtCursor(args.text ?? "")),
      this.registerAction("openToolOutput", (args) => this.openToolOutput(args.callId ?? "", entryOf(args))),
      this.registerAction("showAllOutput", (args) => this.outputs.page(entryOf(args), args.callId ?? "", 0)),
      this.registerAction("moreOutput", (args) => this.outputs.page(entryOf(args), args.callId ?? "", Number(args.from) || 0)),
      this.registerAction("openEditDiff", (args) => {
        const item = entryOf(args)?.items.find((i) => i.kind === "tool" && i.id === args.callId);
        if (item?.kind === "tool") return this.edits.open(item);
        return undefined;
      }),
      this.registerAction("copyToolOutput", (args) => this.outputs.copy(entryOf(args), args.callId ?? "")),
      this.registerAction("retry", async (args) => {
        const entry = entryOf(args);
        if (entry) await this.send(entry.prompt, undefined, entry);
      }),
      this.registerAction("stop", () => this.stop()),
      this.registerAction("compact", () => this.compact()),
      this.registerAction("unpin", () => this.setPinned(undefined)),
      this.registerAction("toggleActiveFile", (args) => this.activeFile.toggle(args.key ?? "")),
      this.registerAction("answerPermission", (args) => this.permissionCards.answer(args)),
      ...["setApiKey", "checkConnection", "openSettings", "openEndpointSettings", "selectModel", "openReadme", "openFolder", "showLog"].map((name) =>
        this.registerAction(name, () => this.host.runAction(name)),
      ),
    );
  }

  /** An error toast when the view is not in sight (its buttons do what the view's would). */
  async toast(report: ErrorReport, entry?: Entry): Promise<void> {
    const actions = toastActions(report, entry !== undefined);
    const pick = await vscode.window.showErrorMessage(`Agent: ${report.message}`, ...actions.map((a) => a.title), "Show Chat");
    if (pick === "Show Chat") return this.view.reveal(false);
    const action = actions.find((a) => a.title === pick)?.action;
    if (action === "retry" && entry) {
      await this.send(entry.prompt, undefined, entry);
      return;
    }
    if (action === "compact") return this.compact();
    if (action) return this.host.runAction(action);
  }

  // -- full tool output ------------------------------------------------------------------------

  private async openToolOutput(callId: string, entry: Entry | undefined): Promise<void> {
    const sessionId = this.session.sessionId;
    const item = entry?.items.find((i) => i.kind === "tool" && i.id === callId);
    // The tab is named after the call ("bash: npm test", the server's subject), not its id; the query keeps it unique.
    const subject = item?.kind === "tool" && item.subject ? `: ${truncate(item.subject, 40)}` : "";
    const name = item?.kind === "tool" ? `${item.name}${subject}` : "tool output";
    const query = new URLSearchParams({ session: sessionId ?? "", call: callId }).toString();
    const uri = vscode.Uri.from({ scheme: OUTPUT_SCHEME, path: `/${name.replace(/[/\\]/g, "∕")}`, query });
    const document = await vscode.workspace.openTextDocument(uri);
    await vscode.window.showTextDocument(document, { preview: true, viewColumn: vscode.ViewColumn.Active });
  }

  /** The read-only document "Open full output" shows: the output the server kept for that call. */
  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const query = new URLSearchParams(uri.query);
    const sessionId = query.get("session") ?? "";
    const callId = query.get("call") ?? "";
    try {
      const result = await this.host.connection.request<ToolOutputResult>(Methods.toolOutput, { sessionId, callId });
      const head = `# ${result.name} ${result.ok ? "(ok)" : "(failed)"} — call ${result.callId}\n# arguments: ${result.arguments}\n`;
      const cut = result.truncated ? "\n… [the server kept only this much of the output]\n" : "";
      return `${head}\n${result.output}${cut}`;
    } catch (error) {
      return `Could not get the output of call ${callId}: ${describeAskError(error).message}\n`;
    }
  }

  // -- links -----------------------------------------------------------------------------------

  private async openLink(href: string): Promise<void> {
    const target = resolveLink(href);
    if (target.kind === "external") {
      await vscode.env.openExternal(vscode.Uri.parse(target.url));
      return;
    }
    if (target.kind !== "file") return;
    const pinned = this.session.conversation.folder;
    const folderUri = pinned ? vscode.Uri.parse(pinned) : this.host.currentFolder()?.uri;
    let uri: vscode.Uri;
    if (folderUri) {
      uri = folderUri.with({ path: joinWorkspacePath(folderUri.path, target.path.replace(/\\/g, "/")) });
    } else if (isAbsolute(target.path) || /^[a-zA-Z]:[\\/]/.test(target.path)) {
      uri = vscode.Uri.file(target.path);
    } else {
      void vscode.window.showWarningMessage(`Agent: cannot open ${target.path}: no folder is open.`);
      return;
    }
    try {
      const document = await vscode.workspace.openTextDocument(uri);
      const options: vscode.TextDocumentShowOptions = { preview: true };
      if (target.line !== undefined) {
        const position = new vscode.Position(target.line - 1, Math.max(0, (target.column ?? 1) - 1));
        options.selection = new vscode.Range(position, position);
      }
      await vscode.window.showTextDocument(document, options);
    } catch {
      void vscode.window.showWarningMessage(`Agent: cannot open ${target.path}: file not found.`);
    }
  }

  dispose(): void {
    this.session.stop();
    for (const d of this.disposables) d.dispose();
  }
}


function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === "string") : [];
}

/** A file picked with `@` (its URI as the page sent it back). */
function pickedDocument(uri: string): PickedDocument {
  try {
    const parsed = vscode.Uri.parse(uri, true);
    return { uri, scheme: parsed.scheme, fsPath: parsed.fsPath, shown: vscode.workspace.asRelativePath(parsed, false) };
  } catch {
    return { uri, scheme: "", fsPath: "", shown: uri };
  }
}

function activeEditor(): vscode.TextEditor | undefined {
  return vscode.window.activeTextEditor ?? vscode.window.visibleTextEditors[0];
}

function snapshot(editor: vscode.TextEditor): EditorSnapshot {
  const { start, end } = editor.selection;
  return {
    uri: editor.document.uri.toString(),
    scheme: editor.document.uri.scheme,
    fsPath: editor.document.uri.fsPath,
    selection: {
      start: { line: start.line, character: start.character },
      end: { line: end.line, character: end.character },
    },
  };
}

async function insertAtCursor(text: string): Promise<void> {
  const editor = vscode.window.activeTextEditor ?? vscode.window.visibleTextEditors[0];
  if (!editor) {
    const document = await vscode.workspace.openTextDocument({ content: text });
    await vscode.window.showTextDocument(document);
    return;
  }
  const ok = await editor.edit((edit) => {
    for (const selection of editor.selections) edit.replace(selection, text);
  });
  if (!ok) return;
  const options: vscode.TextDocumentShowOptions = { preserveFocus: false };
  if (editor.viewColumn !== undefined) options.viewColumn = editor.viewColumn;
  await vscode.window.showTextDocument(editor.document, options);
}

function ago(date: Date | undefined): string {
  if (!date) return "";
  const ms = Date.now() - date.getTime();
  const minutes = Math.round(ms / 60_000);
  if (minutes < 1) return "just now";
  if (minutes < 60) return `${minutes} min ago`;
  const hours = Math.round(minutes / 60);
  if (hours < 24) return `${hours} h ago`;
  return date.toLocaleDateString();
}

function folderLabel(folder: string | undefined): string {
  if (!folder) return "";
  try {
    return vscode.Uri.parse(folder).fsPath;
  } catch {
    return folder;
  }
}
