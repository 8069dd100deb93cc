// The client proper: what the server says while it runs (tool activity, progress, streamed
// answers, permission requests), what is asked of it (requests, the chat's asks, the sandbox,
// the key and the model), the status bar's state, and its errors. The process itself is
// server-process.ts's; what the errors' buttons run, commands.ts's.

import { randomUUID } from "node:crypto";
import * as vscode from "vscode";
import { type LanguageClient, type StaticFeature, WorkDoneProgress } from "vscode-languageclient/node";
import { ApiKeyStore } from "./apiKey";
import { ChatController } from "./chat/controller";
import type { SendOutcome } from "./chat/session";
import { Checkpoints } from "./checkpoints";
import { openSettings, routeAction, routeCheckAction } from "./commands";
import { describeAskError, type ErrorReport } from "./errors";
import {
  type PermissionRequest,
  PermissionRequests,
  permissionCapabilityFeature,
  REQUEST_PERMISSION,
} from "./permissions";
import {
  type AgentCapabilities,
  type AnswerDelta,
  type AskProgress,
  type CompactionNotice,
  Methods,
  type SandboxStatus,
  type ToolActivity,
} from "./protocol";
import type { LanguageDiagnosticsParams, LanguageRequestParams } from "./protocol.generated";
import {
  LANGUAGE_DIAGNOSTICS,
  LANGUAGE_REQUEST,
  LanguageAnswers,
  languageCapabilityFeature,
} from "./language";
import { vscodeLanguageEditor } from "./language-vscode";
import { McpStatus } from "./mcp-status";
import { userValue } from "./settings";
import type { BuiltinRoute } from "./slash-commands";
import { describeSandbox, type SandboxView, showSandboxStatus } from "./sandbox";
import { config, ServerProcess } from "./server-process";
import { type AgentState, describeStatus } from "./status";
import { checkConnection, ModelStatus, selectModel, type SetupHost } from "./models";
import type { CheckAction } from "./setup";
import { formatAnswerLine, formatAskLine, formatCompactionLine, formatNoteLine, formatOutcomeLine, TraceWriter } from "./trace";

export class AgentClient implements vscode.Disposable, SetupHost {
  private readonly server: ServerProcess;
  readonly log: vscode.LogOutputChannel;
  /** The server's permission requests, answered in a modal dialog; `onRequest` lets a view
   * (the Agent panel) show each request and its answer too. */
  readonly permissions: PermissionRequests;
  /** The server's language requests, answered by VS Code's own language servers. */
  private readonly language: LanguageAnswers;
  private readonly trace: vscode.OutputChannel;
  private readonly statusItem: vscode.StatusBarItem;
  private readonly traceWriter: TraceWriter;
  readonly chat: ChatController;
  readonly checkpoints: Checkpoints;
  /** The folder's MCP servers: the status bar item, Agent: MCP Servers, their configuration. */
  readonly mcp: McpStatus;
  private traceRevealed = false;
  private readonly disposables: vscode.Disposable[] = [];
  private readonly apiKey: ApiKeyStore;
  private readonly modelStatus: ModelStatus;
  /** What the status bar shows: the agent's state, and the running server's bash sandbox. */
  private state: AgentState = { kind: "starting" };
  private sandbox: SandboxView | undefined;

  constructor(private readonly context: vscode.ExtensionContext) {
    // Created in this order so the output channels and status bar items come as they always did.
    this.server = new ServerProcess(context.extensionUri, {
      apiKey: () => this.apiKey.current(),
      attach: (client) => this.attach(client),
      setState: (state) => this.setState(state),
      runningChanged: (running) => this.onRunningChanged(running),
      settingsSent: () => {
        this.mcp.refresh(); // the mcpServers setting may have changed them
        this.chat.project.refresh(); // so may instructionFiles the instruction files
        return this.refreshSandbox();
      },
      lost: () => this.onServerLost(),
      stopAsk: () => {
        this.chat.stop();
      },
      showError: (report) => this.showError(report),
    });
    this.log = this.server.log;
    this.permissions = new PermissionRequests({
      ask: (message, detail, buttons) =>
        vscode.window.showWarningMessage(message, { modal: true, detail }, ...buttons),
      inline: (request, card, withdrawn) => this.chat.askPermission(request, card, withdrawn),
    });
    this.language = new LanguageAnswers(vscodeLanguageEditor());
    this.disposables.push({ dispose: () => this.language.dispose() });
    this.trace = vscode.window.createOutputChannel("Agent Tool Trace", "log");
    this.statusItem = vscode.window.createStatusBarItem("agentLsp.status", vscode.StatusBarAlignment.Left, 10);
    this.traceWriter = new TraceWriter((line) => this.trace.appendLine(line));
    this.modelStatus = new ModelStatus();
    this.apiKey = new ApiKeyStore(context.secrets);
    this.disposables.push(
      this.modelStatus,
      // The key reaches the server only through its environment: a new key needs a new process.
      this.apiKey.onDidChange(async () => {
        await this.apiKey.load();
        const held = this.apiKey.current() === undefined ? "no key" : "the key";
        this.log.info(`the API key changed; restarting the server with ${held}`);
        await this.restart();
      }),
    );
    this.chat = new ChatController(context, {
      connection: {
        request: (method, params, signal) => this.request(method, params, signal),
        supports: (method) => this.supports(method),
      },
      currentFolder: () => this.currentFolder(),
      configuredModel: () => {
        const model = userValue(config(), "model");
        return typeof model === "string" && model.trim() !== "" ? model.trim() : undefined;
      },
      acceptsContext: () => this.capabilities()?.askContext === true,
      sendActiveEditor: () => config().get<boolean>("sendActiveEditor", true),
      onAskStarted: (prompt, sessionId) => this.onAskStarted(prompt, sessionId),
      onAskEnded: (outcome, elapsedMs) => this.onAskEnded(outcome, elapsedMs),
      runAction: (action) => this.runAction(action),
      runBuiltin: (route) => this.runBuiltin(route),
      workDoneToken: () => this.workDoneToken(),
    });
    this.checkpoints = new Checkpoints(
      {
        client: () => this.usableClient(),
        folder: () => {
          const pinned = this.chat.session.conversation.folder;
          return pinned ? vscode.Uri.parse(pinned) : this.currentFolder()?.uri;
        },
      },
      this.chat,
    );
    this.disposables.push(this.chat.onDidReopen(() => void this.checkpoints.reopened()));
    this.mcp = new McpStatus({
      request: (method, params) => this.request(method, params),
      supports: (method) => this.supports(method),
      folderParams: () => this.folderParams(),
      showLog: () => this.showLog(),
      openSettings: (query) => openSettings(this.context, this.log, query),
    });
    this.statusItem.name = "Agent";
    this.statusItem.command = "agentLsp.showPanel";
    this.statusItem.show();
    this.setState({ kind: "starting" });
  }

  // -- the server ----------------------------------------------------------------------------

  start(): Promise<void> {
    return this.server.start();
  }

  restart(): Promise<void> {
    return this.server.restart();
  }

  /** The running client, or undefined after telling the user why there is none. */
  usableClient(): LanguageClient | undefined {
    return this.server.usableClient();
  }

  /** What the server sends while it runs, on each client the server process starts. */
  private attach(client: LanguageClient): void {
    client.onNotification(Methods.toolActivity, (activity: ToolActivity) => {
      this.traceWriter.activity(activity);
      if (typeof activity.turn === "number" && this.chat.session.busy) {
        this.setState({ kind: "working", turn: activity.turn, detail: activity.name });
      }
      this.chat.onActivity(activity);
    });
    client.onNotification(Methods.askProgress, (progress: AskProgress) => {
      if (this.chat.session.busy && progress.sessionId === this.chat.session.sessionId) {
        this.setState({ kind: "working", turn: progress.turn, detail: progress.message });
      }
      this.chat.onProgress(progress);
    });
    client.onNotification(Methods.answerDelta, (delta: AnswerDelta) => this.chat.onDelta(delta));
    client.onNotification(Methods.compaction, (notice: CompactionNotice) => {
      this.trace.appendLine(formatCompactionLine(notice, new Date()));
      this.chat.onCompaction(notice);
    });
    client.registerFeature(permissionCapabilityFeature() as StaticFeature);
    client.onRequest(
      REQUEST_PERMISSION,
      (request: PermissionRequest, token): Promise<unknown> => this.permissions.handle(request, token),
    );
    // The agent's language tools and its write results use VS Code's own language servers.
    client.registerFeature(languageCapabilityFeature() as StaticFeature);
    client.onRequest(LANGUAGE_DIAGNOSTICS, (params: LanguageDiagnosticsParams) => this.language.diagnostics(params));
    client.onRequest(LANGUAGE_REQUEST, (params: LanguageRequestParams) => this.language.request(params));
  }

  private onRunningChanged(running: boolean): void {
    if (!running) {
      this.sandbox = undefined; // the next server says its own
      this.mcp.serverStopped();
      return;
    }
    if (!this.chat.session.busy) this.setState({ kind: "idle" });
    this.chat.refreshActiveFile(); // the chip needs a server that takes editor context
    // The configured model (the user file's, say), named from the start, not "default model".
    const model = this.capabilities()?.model;
    if (typeof model === "string" && model !== "" && model !== this.modelStatus.serverCurrent) {
      this.modelStatus.serverCurrent = model;
      this.modelStatus.update();
    }
  }

  private onServerLost(): void {
    this.chat.session.serverLost("The agent-lsp server stopped; the next ask starts a new conversation.");
    this.trace.appendLine(formatNoteLine("agent-lsp server stopped unexpectedly", new Date()));
  }

  // -- requests ------------------------------------------------------------------------------

  /** What the server offers (initialize's `capabilities.experimental.agent`). */
  private capabilities(): AgentCapabilities | undefined {
    const experimental = this.server.client?.initializeResult?.capabilities.experimental as
      | { agent?: AgentCapabilities }
      | undefined;
    return experimental?.agent;
  }

  private supports(method: string): boolean {
    const agent = this.capabilities();
    return Boolean(agent?.requests?.includes(method) || agent?.notifications?.includes(method));
  }

  /** A request to the server; `signal` cancels it ($/cancelRequest). */
  async request<R>(method: string, params: unknown, signal?: AbortSignal): Promise<R> {
    const client = this.server.liveClient();
    if (!client) {
      throw { code: -32099, message: "The agent-lsp server is not running: run Agent: Restart Server (its log says why)." };
    }
    const cts = new vscode.CancellationTokenSource();
    const onAbort = () => cts.cancel();
    signal?.addEventListener("abort", onAbort);
    try {
      return await client.sendRequest<R>(method, params, cts.token);
    } finally {
      signal?.removeEventListener("abort", onAbort);
      cts.dispose();
    }
  }

  /**
   * A work-done token for the ask. Its messages are shown as they are (never parsed), and only
   * when the server sends no agent/askProgress; passing our own token also keeps the server
   * from opening a progress notification of its own.
   */
  private workDoneToken(): { token: string; dispose(): void } | undefined {
    const client = this.server.client;
    if (!client) return undefined;
    const token = `agent-lsp-ask-${randomUUID()}`;
    const subscription = client.onProgress(WorkDoneProgress.type, token, (value) => {
      if (value.kind !== "end" && value.message) this.chat.showProgressText(value.message);
    });
    return { token, dispose: () => subscription.dispose() };
  }

  // -- asks ----------------------------------------------------------------------------------

  async newConversation(): Promise<void> {
    await this.chat.newConversation();
    this.trace.appendLine(formatNoteLine("new conversation", new Date()));
    this.setState({ kind: "idle" });
  }

  /** A built-in command of the chat input: the same as its command in the palette. */
  private runBuiltin(route: BuiltinRoute): Promise<void> {
    switch (route.run) {
      case "compact":
        return this.chat.compact();
      case "new":
        return this.newConversation();
      case "checkpoints":
        return this.checkpoints.pickAndShowChanges();
      case "undo":
        return this.checkpoints.undoLast(route.checkpointId);
    }
  }

  private onAskStarted(prompt: string, sessionId: string | undefined): void {
    if (!this.traceRevealed && config().get<boolean>("trace.revealOnFirstAsk", false)) {
      this.trace.show(true); // preserveFocus: never steal the editor's focus
    }
    this.traceRevealed = true;
    this.trace.appendLine(formatAskLine(prompt, sessionId, new Date()));
    this.setState({ kind: "working" });
  }

  private onAskEnded(outcome: SendOutcome, elapsedMs: number): void {
    // An ask reads the definitions again and restarts a failed server: their states may differ.
    this.mcp.refresh();
    const now = new Date();
    const sessionId = this.chat.session.sessionId;
    if (outcome.kind === "answered") {
      this.trace.appendLine(formatAnswerLine(outcome.result, elapsedMs, now));
      // The model the server used: the status bar names it rather than "default model".
      if (outcome.result.model && outcome.result.model !== this.modelStatus.serverCurrent) {
        this.modelStatus.serverCurrent = outcome.result.model;
        this.modelStatus.update();
      }
      const { sessionId: session, checkpointId } = outcome.result;
      if (checkpointId) void this.checkpoints.answered(outcome.entry.id, session, checkpointId);
      this.setState({ kind: "idle" });
    } else if (outcome.kind === "failed" && outcome.report.cancelled) {
      this.trace.appendLine(formatOutcomeLine(sessionId, "cancelled", "", now));
      this.setState({ kind: "idle" });
    } else if (outcome.kind === "failed") {
      this.trace.appendLine(formatOutcomeLine(sessionId, "error", outcome.report.message, now));
      this.setState({ kind: "error", message: outcome.report.message });
    } else if (!this.chat.session.busy) {
      this.setState({ kind: "idle" });
    }
  }

  // -- the sandbox ---------------------------------------------------------------------------

  /** Agent: Sandbox Status: what confines the agent's commands here, and what is weaker. */
  async sandboxStatus(): Promise<void> {
    // With the conversation: its folder's sandbox and the "always" answers that widen it.
    const sessionId = this.chat.session.sessionId;
    const params = sessionId ? { sessionId } : this.folderParams();
    const view = await showSandboxStatus({ request: (method, params) => this.request(method, params) }, params, {
      show: async ({ kind, summary, lines }) => {
        const message = `Agent: ${summary}`;
        const options = { modal: true, detail: lines.join("\n") };
        const pick =
          kind === "full"
            ? await vscode.window.showInformationMessage(message, options, "Open Settings")
            : await vscode.window.showWarningMessage(message, options, "Open Settings");
        if (pick) await openSettings(this.context, this.log);
      },
      error: (message) => void vscode.window.showErrorMessage(message),
    });
    if (view) this.showSandbox(view);
  }

  /** The status bar's sandbox mark, from the running server (none from a server without it). */
  private async refreshSandbox(): Promise<void> {
    if (!this.supports(Methods.sandboxStatus)) return this.showSandbox(undefined);
    try {
      this.showSandbox(describeSandbox(await this.request<SandboxStatus>(Methods.sandboxStatus, this.folderParams())));
    } catch (error) {
      this.log.warn(`agent/sandboxStatus: ${String((error as { message?: unknown })?.message ?? error)}`);
      this.showSandbox(undefined);
    }
  }

  private showSandbox(view: SandboxView | undefined): void {
    this.sandbox = view;
    this.setState(this.state);
  }

  // -- first run: the key, the model, the connection -------------------------------------------

  async setApiKey(): Promise<void> {
    if (await this.apiKey.promptAndStore()) {
      void vscode.window.showInformationMessage(
        "Agent: API key saved in VS Code's secret storage; the server restarts to use it.",
        "Check Connection",
      ).then((pick) => pick && this.checkConnection());
    }
  }

  async clearApiKey(): Promise<void> {
    if (await this.apiKey.clear()) {
      void vscode.window.showInformationMessage(
        "Agent: API key removed from VS Code; the server restarts without it (it may still find one in ~/.config/agent-lsp/config.toml or its environment).",
      );
    }
  }

  loadApiKey(): Promise<void> {
    return this.apiKey.load();
  }

  selectModel(): Promise<void> {
    return selectModel(this, this.modelStatus);
  }

  checkConnection(): Promise<void> {
    return checkConnection(this);
  }

  folderParams(): { workspaceFolder?: string } {
    const folder = this.currentFolder();
    return folder ? { workspaceFolder: folder.uri.toString() } : {};
  }

  showRequestError(error: unknown): Promise<void> {
    return this.showError(describeAskError(error));
  }

  runCheckAction(action: CheckAction): Promise<void> {
    return routeCheckAction(this.context, this, action);
  }

  // -- the output channels and the chat ------------------------------------------------------

  showPanel(): void {
    void this.chat.view.reveal(false);
  }

  showTrace(): void {
    this.trace.show(true);
  }

  showLog(): void {
    this.log.show(true);
  }

  // -- helpers -------------------------------------------------------------------------------

  private setState(state: AgentState): void {
    this.state = state;
    const view = describeStatus(state, this.sandbox);
    this.statusItem.text = view.text;
    this.statusItem.tooltip = view.tooltip;
    this.statusItem.backgroundColor = view.isError
      ? new vscode.ThemeColor("statusBarItem.errorBackground")
      : undefined;
  }

  private currentFolder(): vscode.WorkspaceFolder | undefined {
    const active = vscode.window.activeTextEditor?.document.uri;
    const fromEditor = active ? vscode.workspace.getWorkspaceFolder(active) : undefined;
    return fromEditor ?? vscode.workspace.workspaceFolders?.[0];
  }

  private async showError(report: ErrorReport): Promise<void> {
    const pick = await vscode.window.showErrorMessage(
      `Agent: ${report.message}`,
      ...report.actions.map((a) => a.title),
    );
    const action = report.actions.find((a) => a.title === pick)?.action;
    if (action) await this.runAction(action);
  }

  /** What an error's button does (the chat view's buttons come here too). */
  runAction(action: string): Promise<void> {
    return routeAction(this.context, this, action);
  }

  async dispose(): Promise<void> {
    this.checkpoints.dispose();
    this.mcp.dispose();
    this.chat.dispose();
    this.traceWriter.dispose();
    await this.server.dispose();
    this.statusItem.dispose();
    this.trace.dispose();
    for (const d of this.disposables) d.dispose();
  }
}
