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
import { describeAskError, type ErrorReport } from "./errors";
import {
  type PermissionRequest,
  PermissionRequests,
  permissionCapabilityFeature,
  REQUEST_PERMISSION,
} from "./permissions";
import { joinWorkspacePath, resolveLink } from "./links";
import { AgentPanel } from "./panel";
import { type Conversation, type ConversationEntry, toolCallViews } from "./panel-render";
import { type AskParams, type AskResult, type ListToolsResult, Methods, type ToolActivity } from "./protocol";
import {
  answerConfigurationPull,
  SECTION,
  serverCommand,
  toDidChangeConfigurationParams,
  toInitializationOptions,
} from "./settings";
import { type AgentState, describeStatus, turnFromProgress } from "./status";
import { toolPickItems } from "./tools-view";
import { findExecutable } from "./which";
import { checkConnection, ModelStatus, selectModel, type SetupHost } from "./models";
import { type CheckAction, serverEnvironment } from "./setup";
import {
  formatActivityLine,
  formatAnswerLine,
  formatAskLine,
  formatNoteLine,
  formatOutcomeLine,
} from "./trace";

const RESTART_WINDOW_MS = 3 * 60_000;
const MAX_RESTARTS = 4;

function config(): vscode.WorkspaceConfiguration {
  return vscode.workspace.getConfiguration(SECTION);
}

interface RunningAsk {
  cts: vscode.CancellationTokenSource;
  entry: ConversationEntry;
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
  private readonly panel = new AgentPanel((href) => void this.openLink(href));
  private conversation: Conversation = { entries: [] };
  private sessionId: string | undefined;
  private running: RunningAsk | undefined;
  private askFolder: vscode.WorkspaceFolder | undefined;
  private traceRevealed = false;
  private stopping = false;
  private restarts: number[] = [];
  private turn: number | undefined;
  /** The settings the server last got (initializationOptions or didChangeConfiguration). */
  private sentSettings: string | undefined;
  /** The server command line start() last used, to tell a real change from a no-op event. */
  private startedCommand: string | undefined;
  private readonly disposables: vscode.Disposable[] = [];
  private readonly apiKey: ApiKeyStore;
  private readonly modelStatus = new ModelStatus();

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
      ...(env ? { options: { env } } : {}),
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
    client.onNotification(Methods.toolActivity, (activity: ToolActivity) =>
      this.onToolActivity(activity),
    );
    client.registerFeature(permissionCapabilityFeature() as StaticFeature);
    client.onRequest(
      REQUEST_PERMISSION,
      (request: PermissionRequest, token): Promise<unknown> => this.permissions.handle(request, token),
    );
    client.onDidChangeState((e) => {
      void vscode.commands.executeCommand("setContext", "agentLsp.serverRunning", e.newState === State.Running);
      if (e.newState !== State.Running) return;
      if (!this.running) this.setState({ kind: "idle" });
      // Settings changed while the server was starting: initialize carried the old ones.
      void this.sendSettings(client, false);
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
    void this.showError({ cancelled: false, message, actions });
  }

  private onServerClosed(): { action: CloseAction; handled: boolean } {
    if (this.stopping) return { action: CloseAction.DoNotRestart, handled: true };
    const now = Date.now();
    this.restarts = this.restarts.filter((t) => now - t < RESTART_WINDOW_MS);
    this.restarts.push(now);
    // The server kept the conversation in memory: it is gone.
    this.sessionId = undefined;
    this.conversation.sessionId = undefined;
    this.conversation.notice = "The agent-lsp server stopped; the next ask starts a new conversation.";
    this.panel.update(this.conversation);
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
    this.running?.cts.cancel();
    await this.stopClient();
    this.sessionId = undefined;
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
    if (this.client?.isRunning()) await this.sendSettings(this.client, true);
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

  // -- commands ------------------------------------------------------------------------------

  async ask(promptArgument?: unknown): Promise<void> {
    if (this.running) {
      const pick = await vscode.window.showInformationMessage(
        "The agent is still working on the previous request.",
        "Cancel It",
        "Show Panel",
      );
      if (pick === "Cancel It") this.cancel();
      else if (pick === "Show Panel") this.panel.show(false);
      return;
    }
    const prompt =
      typeof promptArgument === "string"
        ? promptArgument
        : await vscode.window.showInputBox({
            title: "Agent: Ask",
            prompt: this.sessionId
              ? "Continue the conversation (Agent: New Conversation starts over)"
              : "Ask the agent about this workspace",
            placeHolder: "e.g. Why does the test in tests/test_app.py fail?",
            ignoreFocusOut: true,
          });
    if (prompt === undefined || prompt.trim() === "") return;
    const client = this.usableClient();
    if (!client) return;

    if (!this.traceRevealed && config().get<boolean>("trace.revealOnFirstAsk", true)) {
      this.trace.show(true); // preserveFocus: never steal the editor's focus
    }
    this.traceRevealed = true;

    const entry: ConversationEntry = { prompt, state: "working", toolCalls: [], progress: "" };
    this.conversation.notice = undefined;
    this.conversation.entries.push(entry);
    this.panel.show(true);
    this.panel.update(this.conversation);
    this.trace.appendLine(formatAskLine(prompt, this.sessionId, new Date()));

    const cts = new vscode.CancellationTokenSource();
    this.running = { cts, entry };
    this.turn = undefined;
    this.setState({ kind: "working" });
    const progressToken = `agent-lsp-ask-${randomUUID()}`;
    const folder = this.currentFolder();
    this.askFolder = folder;
    const params: AskParams = { prompt, workDoneToken: progressToken };
    if (this.sessionId) params.sessionId = this.sessionId;
    if (folder) params.workspaceFolder = folder.uri.toString();
    const startedAt = Date.now();

    await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: "Agent", cancellable: true },
      async (progress, uiToken) => {
        const onCancel = uiToken.onCancellationRequested(() => {
          progress.report({ message: "cancelling…" });
          cts.cancel(); // the client sends $/cancelRequest
        });
        const onProgress = client.onProgress(WorkDoneProgress.type, progressToken, (value) => {
          if (value.kind === "end" || !value.message || cts.token.isCancellationRequested) return;
          progress.report({ message: value.message });
          entry.progress = value.message;
          this.turn = turnFromProgress(value.message) ?? this.turn;
          this.setState({ kind: "working", turn: this.turn, detail: value.message });
          this.panel.update(this.conversation);
        });
        try {
          const result = await client.sendRequest<AskResult>(Methods.ask, params, cts.token);
          this.sessionId = result.sessionId;
          this.conversation.sessionId = result.sessionId;
          entry.state = "done";
          entry.answer = result.answer;
          entry.toolCalls = toolCallViews(result.toolCalls ?? []);
          entry.stopReason = result.stopReason;
          if (result.usage) entry.usage = result.usage;
          this.trace.appendLine(formatAnswerLine(result, Date.now() - startedAt, new Date()));
          this.setState({ kind: "idle" });
        } catch (error) {
          this.onAskFailed(entry, describeAskError(error));
        } finally {
          onProgress.dispose();
          onCancel.dispose();
          cts.dispose();
          this.running = undefined;
          this.panel.update(this.conversation);
        }
      },
    );
  }

  private onAskFailed(entry: ConversationEntry, report: ErrorReport): void {
    for (const call of entry.toolCalls) if (call.state === "running") call.state = "failed";
    if (report.cancelled) {
      entry.state = "cancelled";
      this.trace.appendLine(formatOutcomeLine(this.sessionId, "cancelled", "", new Date()));
      this.setState({ kind: "idle" });
      void vscode.window.showInformationMessage("Agent: request cancelled.");
      return;
    }
    entry.state = "error";
    entry.error = report.message;
    this.trace.appendLine(formatOutcomeLine(this.sessionId, "error", report.message, new Date()));
    this.setState({ kind: "error", message: report.message });
    void this.showError(report);
  }

  cancel(): void {
    if (this.running) this.running.cts.cancel();
    else void vscode.window.showInformationMessage("Agent: nothing is running.");
  }

  async newConversation(): Promise<void> {
    this.running?.cts.cancel();
    const ended = this.sessionId;
    this.sessionId = undefined;
    this.conversation = { entries: [] };
    this.panel.update(this.conversation);
    this.trace.appendLine(formatNoteLine("new conversation", new Date()));
    if (!this.running) this.setState({ kind: "idle" });
    if (ended && this.client?.isRunning()) {
      try {
        await this.client.sendRequest(Methods.endSession, { sessionId: ended });
      } catch (error) {
        this.log.warn(`agent/endSession: ${String(error)}`);
      }
    }
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
    this.panel.show(false);
    this.panel.update(this.conversation);
  }

  showTrace(): void {
    this.trace.show(true);
  }

  showLog(): void {
    this.log.show(true);
  }

  // -- server notifications ------------------------------------------------------------------

  private onToolActivity(activity: ToolActivity): void {
    this.trace.appendLine(formatActivityLine(activity, new Date()));
    const entry = this.running?.entry;
    if (!entry) return;
    if (typeof activity.turn === "number") {
      this.turn = activity.turn;
      this.setState({ kind: "working", turn: this.turn, detail: activity.name });
    }
    const existing = entry.toolCalls.find((c) => c.id === activity.callId);
    if (activity.status === "started") {
      if (!existing) {
        entry.toolCalls.push({
          id: activity.callId,
          name: activity.name,
          arguments: activity.arguments,
          state: "running",
        });
      }
    } else if (existing && activity.status !== "waiting") {
      // ("waiting": the call waits for the user's permission; it is still running.)
      existing.state = activity.status === "completed" ? "ok" : "failed";
      if (activity.durationMs !== undefined) existing.durationMs = activity.durationMs;
      if (activity.output !== undefined) existing.output = activity.output;
    }
    this.panel.update(this.conversation);
  }

  // -- helpers -------------------------------------------------------------------------------

  private setState(state: AgentState): void {
    const view = describeStatus(state);
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

  private async openLink(href: string): Promise<void> {
    const target = resolveLink(href);
    if (target.kind === "external") {
      await vscode.env.openExternal(vscode.Uri.parse(target.url));
      return;
    }
    if (target.kind !== "file") return;
    const folder = this.askFolder ?? this.currentFolder();
    let uri: vscode.Uri;
    if (folder) {
      uri = folder.uri.with({ path: joinWorkspacePath(folder.uri.path, target.path.replace(/\\/g, "/")) });
    } else if (target.path.startsWith("/") || /^[a-zA-Z]:[\\/]/.test(target.path)) {
      uri = vscode.Uri.file(target.path);
    } else {
      void vscode.window.showWarningMessage(`Agent: cannot open ${target.path}: no folder is open.`);
      return;
    }
    try {
      const document = await vscode.workspace.openTextDocument(uri);
      // Keep the conversation in view: open the file in another editor group than the panel's.
      const panelColumn = this.panel.viewColumn;
      const viewColumn =
        panelColumn === undefined || panelColumn !== vscode.ViewColumn.One
          ? vscode.ViewColumn.One
          : vscode.ViewColumn.Beside;
      const options: vscode.TextDocumentShowOptions = { viewColumn, preview: true };
      if (target.line !== undefined) {
        const position = new vscode.Position(target.line - 1, Math.max(0, (target.column ?? 1) - 1));
        options.selection = new vscode.Range(position, position);
      }
      await vscode.window.showTextDocument(document, options);
    } catch {
      void vscode.window.showWarningMessage(`Agent: cannot open ${target.path}: file not found.`);
    }
  }

  async dispose(): Promise<void> {
    this.running?.cts.cancel();
    await this.stopClient();
    this.panel.dispose();
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
    vscode.commands.registerCommand("agentLsp.cancel", () => instance.cancel()),
    vscode.commands.registerCommand("agentLsp.newConversation", () => instance.newConversation()),
    vscode.commands.registerCommand("agentLsp.listTools", () => instance.listTools()),
    vscode.commands.registerCommand("agentLsp.showPanel", () => instance.showPanel()),
    vscode.commands.registerCommand("agentLsp.showToolTrace", () => instance.showTrace()),
    vscode.commands.registerCommand("agentLsp.showServerLog", () => instance.showLog()),
    vscode.commands.registerCommand("agentLsp.restartServer", () => instance.restart()),
    vscode.commands.registerCommand("agentLsp.setApiKey", () => instance.setApiKey()),
    vscode.commands.registerCommand("agentLsp.clearApiKey", () => instance.clearApiKey()),
    vscode.commands.registerCommand("agentLsp.selectModel", () => instance.selectModel()),
    vscode.commands.registerCommand("agentLsp.checkConnection", () => instance.checkConnection()),
    vscode.commands.registerCommand("agentLsp.getStarted", () => instance.getStarted()),
  );
  // Commands work while the server starts (requests wait for it); don't block activation
  // on the server, only on reading the key it is started with.
  await instance.loadApiKey();
  void instance.start();
}

export async function deactivate(): Promise<void> {
  await agent?.dispose();
  agent = undefined;
}
