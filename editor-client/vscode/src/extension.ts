// agent-lsp's VS Code client: start the server over stdio, forward asks, display the results.
// All agent logic lives in the server; the pure modules beside this file hold the formatting.

import { randomUUID } from "node:crypto";
import * as vscode from "vscode";
import {
  CloseAction,
  DidChangeConfigurationNotification,
  ErrorAction as ClientErrorAction,
  LanguageClient,
  type LanguageClientOptions,
  RevealOutputChannelOn,
  type ServerOptions,
  State,
  type StaticFeature,
  TransportKind,
  WorkDoneProgress,
} from "vscode-languageclient/node";
import { ApiKeyStore } from "./apiKey";
import { ChatController } from "./chat/controller";
import type { SendOutcome } from "./chat/session";
import { Checkpoints } from "./checkpoints";
import { describeAskError, type ErrorReport } from "./errors";
import { manageGrants } from "./grants";
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
  type ListToolsResult,
  Methods,
  type SandboxStatus,
  type ToolActivity,
} from "./protocol";
import {
  answerConfigurationPull,
  SECTION,
  serverCommand,
  toDidChangeConfigurationParams,
  toInitializationOptions,
  userValue,
} from "./settings";
import { describeSandbox, type SandboxView, showSandboxStatus } from "./sandbox";
import { type AgentState, describeStatus } from "./status";
import { toolPickItems } from "./tools-view";
import { findExecutable } from "./which";
import { checkConnection, ModelStatus, selectModel, type SetupHost } from "./models";
import { type CheckAction, serverEnvironment } from "./setup";
import { formatAnswerLine, formatAskLine, formatCompactionLine, formatNoteLine, formatOutcomeLine, TraceWriter } from "./trace";

const RESTART_WINDOW_MS = 3 * 60_000;
const MAX_RESTARTS = 4;

function config(): vscode.WorkspaceConfiguration {
  return vscode.workspace.getConfiguration(SECTION);
}

class AgentClient implements vscode.Disposable, SetupHost {
  private client: LanguageClient | undefined;
  readonly log = vscode.window.createOutputChannel("Agent Server", { log: true });
  /** The server's permission requests, answered in a modal dialog; `onRequest` lets a view
   * (the Agent panel) show each request and its answer too. */
  readonly permissions = new PermissionRequests({
    ask: (message, detail, buttons) =>
      vscode.window.showWarningMessage(message, { modal: true, detail }, ...buttons),
  });
  private readonly trace = vscode.window.createOutputChannel("Agent Tool Trace", "log");
  private readonly statusItem = vscode.window.createStatusBarItem(
    "agentLsp.status",
    vscode.StatusBarAlignment.Left,
    10,
  );
  private readonly traceWriter = new TraceWriter((line) => this.trace.appendLine(line));
  readonly chat: ChatController;
  readonly checkpoints: Checkpoints;
  private traceRevealed = false;
  private stopping = false;
  private restarts: number[] = [];
  /** The settings the server last got (initializationOptions or didChangeConfiguration). */
  private sentSettings: string | undefined;
  /** The server command line start() last used, to tell a real change from a no-op event. */
  private startedCommand: string | undefined;
  private readonly disposables: vscode.Disposable[] = [];
  private readonly apiKey: ApiKeyStore;
  private readonly modelStatus = new ModelStatus();
  /** What the status bar shows: the agent's state, and the running server's bash sandbox. */
  private state: AgentState = { kind: "starting" };
  private sandbox: SandboxView | undefined;

  constructor(private readonly context: vscode.ExtensionContext) {
    this.apiKey = new ApiKeyStore(context.secrets);
    this.disposables.push(
      this.modelStatus,
      // The key reaches the server only through its environment: a new key needs a new process.
      this.apiKey.onDidChange(async () => {
        this.log.info("the API key changed; restarting the server");
        await this.apiKey.load();
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
      workDoneToken: () => this.workDoneToken(),
    });
    this.disposables.push(this.permissions.onRequest((request, answer) => this.chat.showPermission(request, answer)));
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
    this.statusItem.name = "Agent";
    this.statusItem.command = "agentLsp.showPanel";
    this.statusItem.show();
    this.setState({ kind: "starting" });
    this.disposables.push(
      vscode.workspace.onDidChangeConfiguration((e) => void this.onConfigurationChanged(e)),
    );
  }

  // -- server lifecycle ----------------------------------------------------------------------

  async start(): Promise<void> {
    const command = serverCommand(config());
    this.startedCommand = JSON.stringify(command);
    if (!command.ok) {
      this.reportStartFailure(command.error, [{ title: "Open Settings", action: "openSettings" }], false);
      return;
    }
    const program = findExecutable(command.command, process.env.PATH);
    if (program === undefined) {
      const message =
        `Could not start the agent-lsp server: "${command.command}" was not found` +
        (command.command.includes("/") ? "" : " on PATH") +
        ". Install it (uv tool install /path/to/agent-lsp) or set agentLsp.server.command " +
        'to the server\'s command line, e.g. ["uv", "run", "--directory", "/path/to/agent-lsp", "agent-lsp"].';
      this.reportStartFailure(message, [
        { title: "Open Settings", action: "openSettings" },
        { title: "Setup Guide", action: "openReadme" },
      ]);
      return;
    }
    const env = serverEnvironment(process.env, this.apiKey.current());
    const serverOptions: ServerOptions = {
      command: command.command,
      args: command.args,
      transport: TransportKind.stdio, // the client appends --stdio
      // Not the workspace (the client's default): a `python -m server` command line
      // there would import a repository's own `server/` package.
      options: { cwd: this.context.extensionUri.fsPath, ...(env ? { env } : {}) },
    };
    const clientOptions: LanguageClientOptions = {
      // Every open file, whatever its language, is synced: the agent reads the editor's
      // buffer (unsaved edits included), and its edits to open files come back as
      // workspace/applyEdit, which the client applies as one undoable, versioned edit.
      documentSelector: [{ scheme: "file" }, { scheme: "untitled" }],
      outputChannel: this.log,
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      initializationOptions: () => {
        const options = toInitializationOptions(config());
        this.sentSettings = JSON.stringify(options);
        return options;
      },
      middleware: {
        workspace: {
          // If the server pulls its section, it gets what initializationOptions carries.
          configuration: async (params, token, next) => {
            const result = await next(params, token);
            if (!Array.isArray(result)) return result;
            return answerConfigurationPull(params.items, result, config());
          },
        },
      },
      errorHandler: {
        error: (_error, _message, count) => ({
          action: (count ?? 0) <= 3 ? ClientErrorAction.Continue : ClientErrorAction.Shutdown,
        }),
        closed: () => this.onServerClosed(),
      },
    };
    const client = new LanguageClient("agentLsp", "Agent Server", serverOptions, clientOptions);
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
    client.onDidChangeState((e) => {
      void vscode.commands.executeCommand("setContext", "agentLsp.serverRunning", e.newState === State.Running);
      if (e.newState !== State.Running) {
        this.sandbox = undefined; // the next server says its own
        return;
      }
      if (!this.chat.session.busy) this.setState({ kind: "idle" });
      // Settings changed while the server was starting: initialize carried the old ones.
      void this.sendSettings(client, false).then(() => this.refreshSandbox());
    });
    this.client = client;
    this.setState({ kind: "starting" });
    try {
      await client.start();
      this.log.info(`agent-lsp server started: ${[command.command, ...command.args].join(" ")} --stdio`);
    } catch (error) {
      const message =
        `Could not start the agent-lsp server (${[command.command, ...command.args].join(" ")}): ` +
        `${error instanceof Error ? error.message : String(error)}. ` +
        "Set agentLsp.server.command to the server's command line.";
      this.reportStartFailure(message, [
        { title: "Open Settings", action: "openSettings" },
        { title: "Setup Guide", action: "openReadme" },
        { title: "Show Server Log", action: "showLog" },
      ]);
    }
  }

  /** The server could not start: say why (log, status bar, notification with fixes). */
  private reportStartFailure(message: string, actions: ErrorReport["actions"], log = true): void {
    if (log) this.log.error(message);
    this.setState({ kind: "stopped", message });
    void this.showError({ cancelled: false, kind: "other", message, actions });
  }

  private onServerClosed(): { action: CloseAction; handled: boolean } {
    if (this.stopping) return { action: CloseAction.DoNotRestart, handled: true };
    const now = Date.now();
    this.restarts = this.restarts.filter((t) => now - t < RESTART_WINDOW_MS);
    this.restarts.push(now);
    this.chat.session.serverLost("The agent-lsp server stopped; the next ask starts a new conversation.");
    this.trace.appendLine(formatNoteLine("agent-lsp server stopped unexpectedly", new Date()));
    if (this.restarts.length > MAX_RESTARTS) {
      const message = `The agent-lsp server stopped ${this.restarts.length} times in 3 minutes and was not restarted.`;
      this.setState({ kind: "stopped", message });
      void vscode.window
        .showErrorMessage(message, "Restart Server", "Show Server Log")
        .then((pick) => {
          if (pick === "Restart Server") void this.restart();
          else if (pick === "Show Server Log") this.log.show(true);
        });
      return { action: CloseAction.DoNotRestart, handled: true };
    }
    void vscode.window
      .showWarningMessage(
        "The agent-lsp server stopped unexpectedly and is being restarted. The conversation starts over.",
        "Show Server Log",
      )
      .then((pick) => {
        if (pick) this.log.show(true);
      });
    this.setState({ kind: "starting" });
    return { action: CloseAction.Restart, handled: true };
  }

  async restart(): Promise<void> {
    this.chat.stop();
    await this.stopClient();
    this.restarts = [];
    await this.start();
  }

  private async stopClient(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (!client) return;
    this.stopping = true;
    try {
      if (client.isRunning()) await client.stop(5000);
      await client.dispose();
    } catch (error) {
      this.log.warn(`stopping the server: ${String(error)}`);
    } finally {
      this.stopping = false;
    }
  }

  private async onConfigurationChanged(e: vscode.ConfigurationChangeEvent): Promise<void> {
    if (!e.affectsConfiguration(SECTION)) return;
    if (e.affectsConfiguration(`${SECTION}.server`)) {
      // A workspace value (ignored: machine scope) or an edit back to the same command.
      if (JSON.stringify(serverCommand(config())) === this.startedCommand) return;
      const pick = await vscode.window.showInformationMessage(
        "agentLsp.server.command changed. Restart the agent-lsp server to use it?",
        "Restart Server",
      );
      if (pick) await this.restart();
      return;
    }
    // Not running yet: sent when it is (see onDidChangeState in start()).
    if (this.client?.isRunning()) {
      await this.sendSettings(this.client, true);
      await this.refreshSandbox(); // the sandbox settings may have changed it
    }
  }

  private async sendSettings(client: LanguageClient, always: boolean): Promise<void> {
    const params = toDidChangeConfigurationParams(config());
    const text = JSON.stringify(params.settings.agentLsp);
    if (!always && text === this.sentSettings) return;
    this.sentSettings = text;
    this.log.info(`sending agentLsp settings: ${text}`);
    await client.sendNotification(DidChangeConfigurationNotification.type, params);
  }

  /** The running client, or undefined after telling the user why there is none. */
  usableClient(): LanguageClient | undefined {
    const client = this.client;
    if (client && client.state !== State.Stopped && client.state !== State.StartFailed) return client;
    void vscode.window
      .showErrorMessage("The agent-lsp server is not running.", "Restart Server", "Show Server Log")
      .then((pick) => {
        if (pick === "Restart Server") void this.restart();
        else if (pick === "Show Server Log") this.log.show(true);
      });
    return undefined;
  }

  // -- requests ------------------------------------------------------------------------------

  /** What the server offers (initialize's `capabilities.experimental.agent`). */
  private capabilities(): AgentCapabilities | undefined {
    const experimental = this.client?.initializeResult?.capabilities.experimental as
      | { agent?: AgentCapabilities }
      | undefined;
    return experimental?.agent;
  }

  private supports(method: string): boolean {
    const agent = this.capabilities();
    return Boolean(agent?.requests?.includes(method) || agent?.notifications?.includes(method));
  }

  /** A request to the server; `signal` cancels it ($/cancelRequest). */
  private async request<R>(method: string, params: unknown, signal?: AbortSignal): Promise<R> {
    const client = this.client;
    if (!client || client.state === State.Stopped || client.state === State.StartFailed) {
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
    const client = this.client;
    if (!client) return undefined;
    const token = `agent-lsp-ask-${randomUUID()}`;
    const subscription = client.onProgress(WorkDoneProgress.type, token, (value) => {
      if (value.kind !== "end" && value.message) this.chat.showProgressText(value.message);
    });
    return { token, dispose: () => subscription.dispose() };
  }

  // -- commands ------------------------------------------------------------------------------

  /** Agent: Ask: the chat's input, focused. A string argument is sent as the prompt. */
  async ask(promptArgument?: unknown): Promise<void> {
    if (typeof promptArgument === "string") {
      await this.chat.view.reveal(false);
      await this.chat.send(promptArgument);
      return;
    }
    await this.chat.view.reveal(true);
  }

  /** Agent: Ask in Quick Input, for keyboard users. */
  async askQuick(): Promise<void> {
    const running = this.chat.session.runningAsk;
    if (running) {
      // Lasts exactly as long as the ask it is about.
      void vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: "Agent: still working on the previous request", cancellable: true },
        async (_progress, token) => {
          token.onCancellationRequested(() => this.chat.stop());
          await running;
        },
      );
      return;
    }
    const prompt = await vscode.window.showInputBox({
      title: "Agent: Ask",
      prompt: this.chat.session.sessionId
        ? "Continue the conversation (Agent: New Conversation starts over)"
        : "Ask the agent about this workspace",
      placeHolder: "e.g. Why does the test in tests/test_app.py fail?",
      ignoreFocusOut: true,
    });
    if (prompt === undefined || prompt.trim() === "") return;
    await this.chat.view.reveal(false);
    await this.chat.send(prompt);
  }

  cancel(): void {
    if (!this.chat.stop()) vscode.window.setStatusBarMessage("Agent: nothing is running", 3000);
  }

  async newConversation(): Promise<void> {
    await this.chat.newConversation();
    this.trace.appendLine(formatNoteLine("new conversation", new Date()));
    this.setState({ kind: "idle" });
  }

  private onAskStarted(prompt: string, sessionId: string | undefined): void {
    if (!this.traceRevealed && config().get<boolean>("trace.revealOnFirstAsk", true)) {
      this.trace.show(true); // preserveFocus: never steal the editor's focus
    }
    this.traceRevealed = true;
    this.trace.appendLine(formatAskLine(prompt, sessionId, new Date()));
    this.setState({ kind: "working" });
  }

  private onAskEnded(outcome: SendOutcome, elapsedMs: number): void {
    const now = new Date();
    const sessionId = this.chat.session.sessionId;
    if (outcome.kind === "answered") {
      this.trace.appendLine(formatAnswerLine(outcome.result, elapsedMs, now));
      const { sessionId: session, checkpointId } = outcome.result;
      if (checkpointId) this.checkpoints.answered(outcome.entry.id, session, checkpointId);
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

  /** Agent: Manage Permissions: the conversation's "always" answers; revoke the picked ones. */
  async manageGrants(): Promise<void> {
    await manageGrants({ request: (method, params) => this.request(method, params) }, this.chat.session.sessionId, {
      pick: (items, title, placeHolder) =>
        vscode.window.showQuickPick(items, { title, placeHolder, canPickMany: true, matchOnDescription: true, matchOnDetail: true }),
      info: (message) => void vscode.window.showInformationMessage(message),
      error: (message) => void vscode.window.showErrorMessage(message),
    });
  }

  /** Agent: Sandbox Status: what confines the agent's commands here, and what is weaker. */
  async sandboxStatus(): Promise<void> {
    const view = await showSandboxStatus({ request: (method, params) => this.request(method, params) }, this.folderParams(), {
      show: async ({ kind, summary, lines }) => {
        const message = `Agent: ${summary}`;
        const options = { modal: true, detail: lines.join("\n") };
        const pick =
          kind === "full"
            ? await vscode.window.showInformationMessage(message, options, "Open Settings")
            : await vscode.window.showWarningMessage(message, options, "Open Settings");
        if (pick) await this.openSettings();
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

  async listTools(): Promise<void> {
    const client = this.usableClient();
    if (!client) return;
    const folder = this.currentFolder();
    let result: ListToolsResult;
    try {
      result = await client.sendRequest<ListToolsResult>(
        Methods.listTools,
        folder ? { workspaceFolder: folder.uri.toString() } : {},
      );
    } catch (error) {
      void this.showError(describeAskError(error));
      return;
    }
    const tools = result.tools ?? [];
    await vscode.window.showQuickPick(toolPickItems(tools), {
      title: `Agent tools (${tools.length})`,
      placeHolder: "The tools the agent can call in this workspace",
      matchOnDescription: true,
      matchOnDetail: true,
    });
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

  async getStarted(): Promise<void> {
    await vscode.commands.executeCommand(
      "workbench.action.openWalkthrough",
      `${this.context.extension.id}#agentLsp.firstRun`,
      false,
    );
  }

  folderParams(): { workspaceFolder?: string } {
    const folder = this.currentFolder();
    return folder ? { workspaceFolder: folder.uri.toString() } : {};
  }

  showRequestError(error: unknown): Promise<void> {
    return this.showError(describeAskError(error));
  }

  async runCheckAction(action: CheckAction): Promise<void> {
    switch (action) {
      case "setApiKey":
        return this.setApiKey();
      case "selectModel":
        return this.selectModel();
      case "openSettings":
        return this.openSettings();
      case "showLog":
        this.log.show(true);
    }
  }

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
  async runAction(action: string): Promise<void> {
    switch (action) {
      case "openSettings":
        await this.openSettings();
        break;
      case "openReadme":
        await this.openReadme();
        break;
      case "openFolder":
        await vscode.commands.executeCommand("workbench.action.files.openFolder");
        break;
      case "showLog":
        this.log.show(true);
        break;
      case "setApiKey":
        await this.setApiKey();
        break;
      case "checkConnection":
        await this.checkConnection();
        break;
      default:
        break;
    }
  }

  /**
   * This extension's settings. In a remote window (Remote-SSH, WSL, code-server) the
   * machine-scoped ones (server command, endpoint) are set in the remote's settings, and the
   * User tab hides them, so open the Remote tab there.
   */
  private async openSettings(): Promise<void> {
    const query = `@ext:${this.context.extension.id}`;
    if (vscode.env.remoteName) {
      try {
        await vscode.commands.executeCommand("workbench.action.openRemoteSettings", { query });
        return;
      } catch (error) {
        this.log.warn(`opening the remote settings: ${String(error)}`);
      }
    }
    await vscode.commands.executeCommand("workbench.action.openSettings", query);
  }

  /** The README shipped in the .vsix (vsce stores it as readme.md). */
  private async openReadme(): Promise<void> {
    for (const name of ["README.md", "readme.md"]) {
      const uri = vscode.Uri.joinPath(this.context.extensionUri, name);
      try {
        await vscode.workspace.fs.stat(uri);
        await vscode.commands.executeCommand("markdown.showPreview", uri);
        return;
      } catch {
        // try the next spelling
      }
    }
  }

  async dispose(): Promise<void> {
    this.checkpoints.dispose();
    this.chat.dispose();
    this.traceWriter.dispose();
    await this.stopClient();
    this.statusItem.dispose();
    this.trace.dispose();
    this.log.dispose();
    for (const d of this.disposables) d.dispose();
  }
}

let agent: AgentClient | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const instance = new AgentClient(context);
  agent = instance;
  context.subscriptions.push(
    vscode.commands.registerCommand("agentLsp.ask", (prompt?: unknown) => instance.ask(prompt)),
    vscode.commands.registerCommand("agentLsp.askQuick", () => instance.askQuick()),
    vscode.commands.registerCommand("agentLsp.askAboutSelection", (prompt?: unknown) =>
      instance.chat.askAboutSelection(typeof prompt === "string" ? prompt : undefined),
    ),
    vscode.commands.registerCommand("agentLsp.compact", () => instance.chat.compact()),
    vscode.commands.registerCommand("agentLsp.cancel", () => instance.cancel()),
    vscode.commands.registerCommand("agentLsp.newConversation", () => instance.newConversation()),
    vscode.commands.registerCommand("agentLsp.history", () => instance.chat.showHistory()),
    vscode.commands.registerCommand("agentLsp.listTools", () => instance.listTools()),
    vscode.commands.registerCommand("agentLsp.manageGrants", () => instance.manageGrants()),
    vscode.commands.registerCommand("agentLsp.sandboxStatus", () => instance.sandboxStatus()),
    vscode.commands.registerCommand("agentLsp.showPanel", () => instance.showPanel()),
    vscode.commands.registerCommand("agentLsp.showToolTrace", () => instance.showTrace()),
    vscode.commands.registerCommand("agentLsp.showServerLog", () => instance.showLog()),
    vscode.commands.registerCommand("agentLsp.restartServer", () => instance.restart()),
    vscode.commands.registerCommand("agentLsp.showChanges", (session?: unknown, checkpoint?: unknown) =>
      instance.checkpoints.pickAndShowChanges(session, checkpoint),
    ),
    vscode.commands.registerCommand("agentLsp.undoAsk", (session?: unknown, checkpoint?: unknown) =>
      instance.checkpoints.pickAndUndo(session, checkpoint),
    ),
    vscode.commands.registerCommand("agentLsp.setApiKey", () => instance.setApiKey()),
    vscode.commands.registerCommand("agentLsp.clearApiKey", () => instance.clearApiKey()),
    vscode.commands.registerCommand("agentLsp.selectModel", () => instance.selectModel()),
    vscode.commands.registerCommand("agentLsp.checkConnection", () => instance.checkConnection()),
    vscode.commands.registerCommand("agentLsp.getStarted", () => instance.getStarted()),
  );
  // Commands work while the server starts (requests wait for it); don't block activation
  // on the server, only on reading the key it is started with.
  await instance.loadApiKey();
  void instance.start().then(() => instance.chat.restore());
}

export async function deactivate(): Promise<void> {
  await agent?.dispose();
  agent = undefined;
}
