// The agent-lsp server process: its command line and environment, the LanguageClient that runs
// it over stdio, the settings it is sent, and what happens when it fails to start or dies.
// What the server says while it runs goes to the client proper (agent-client.ts) via the hooks.

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
  TransportKind,
} from "vscode-languageclient/node";
import type { ErrorReport } from "./errors";
import {
  answerConfigurationPull,
  SECTION,
  serverCommand,
  toDidChangeConfigurationParams,
  toInitializationOptions,
} from "./settings";
import { serverEnvironment } from "./setup";
import type { AgentState } from "./status";
import { findExecutable } from "./which";

const RESTART_WINDOW_MS = 3 * 60_000;
const MAX_RESTARTS = 4;

export function config(): vscode.WorkspaceConfiguration {
  return vscode.workspace.getConfiguration(SECTION);
}

/** What the server's lifecycle needs of the client proper. */
export interface ServerHooks {
  /** The API key to start the server with: it reaches the server in its environment only. */
  apiKey(): string | undefined;
  /** Registers the handlers of the server's notifications and requests on a new client. */
  attach(client: LanguageClient): void;
  /** The status bar's state: starting, or stopped and why. */
  setState(state: AgentState): void;
  /** The server is running now (true), or no longer (false). */
  runningChanged(running: boolean): void;
  /** The server has this window's settings (after its start, or a change): ask again what
   * depends on them. */
  settingsSent(): Promise<void>;
  /** The server stopped unexpectedly: what ran on it is gone. */
  lost(): void;
  /** A restart is about to stop the server: end the running ask first. */
  stopAsk(): void;
  /** A start failure's notification, with the buttons that fix it. */
  showError(report: ErrorReport): Promise<void>;
}

/** How long a restart waits for a starting server to finish starting before stopping it. */
const START_SETTLE_MS = 60_000;

export class ServerProcess implements vscode.Disposable {
  private current: LanguageClient | undefined;
  readonly log = vscode.window.createOutputChannel("Agent Server", { log: true });
  /** Each client's start(): a stop must wait for it (a starting client cannot be stopped). */
  private readonly starts = new WeakMap<LanguageClient, Promise<void>>();
  private restarts: number[] = [];
  /** The settings the server last got (initializationOptions or didChangeConfiguration). */
  private sentSettings: string | undefined;
  /** The server command line start() last used, to tell a real change from a no-op event. */
  private startedCommand: string | undefined;
  private readonly configListener: vscode.Disposable;

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly hooks: ServerHooks,
  ) {
    this.configListener = vscode.workspace.onDidChangeConfiguration((e) => void this.onConfigurationChanged(e));
  }

  /** The client start() last made, whatever its state (undefined while stopped by restart). */
  get client(): LanguageClient | undefined {
    return this.current;
  }

  /** The client unless it stopped or failed to start (requests then wait for it to run). */
  liveClient(): LanguageClient | undefined {
    const client = this.current;
    if (client && client.state !== State.Stopped && client.state !== State.StartFailed) return client;
    return undefined;
  }

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
    const env = serverEnvironment(process.env, this.hooks.apiKey());
    const serverOptions: ServerOptions = {
      command: command.command,
      args: command.args,
      transport: TransportKind.stdio, // the client appends --stdio
      // Not the workspace (the client's default): a `python -m server` command line
      // there would import a repository's own `server/` package.
      options: { cwd: this.extensionUri.fsPath, ...(env ? { env } : {}) },
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
        closed: () => this.onServerClosed(client),
      },
    };
    const client: LanguageClient = new LanguageClient(
      "agentLsp",
      "Agent Server",
      serverOptions,
      clientOptions,
    );
    this.hooks.attach(client);
    client.onDidChangeState((e) => {
      const running = e.newState === State.Running;
      void vscode.commands.executeCommand("setContext", "agentLsp.serverRunning", running);
      this.hooks.runningChanged(running);
      if (!running) return;
      // Settings changed while the server was starting: initialize carried the old ones.
      void this.sendSettings(client, false).then(() => this.hooks.settingsSent());
    });
    this.current = client;
    this.hooks.setState({ kind: "starting" });
    try {
      const starting = client.start();
      this.starts.set(client, starting);
      await starting;
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
    this.hooks.setState({ kind: "stopped", message });
    void this.hooks.showError({ cancelled: false, kind: "other", message, actions });
  }

  private onServerClosed(client: LanguageClient): { action: CloseAction; handled: boolean } {
    // Only the current client's close is a crash: stop() lets go of its client before it
    // stops it, and a client a restart replaced meanwhile must not come back beside the new
    // one (one flag for all would have been cleared by the first of two overlapping stops).
    if (client !== this.current) return { action: CloseAction.DoNotRestart, handled: true };
    const now = Date.now();
    this.restarts = this.restarts.filter((t) => now - t < RESTART_WINDOW_MS);
    this.restarts.push(now);
    this.hooks.lost();
    if (this.restarts.length > MAX_RESTARTS) {
      const message = `The agent-lsp server stopped ${this.restarts.length} times in 3 minutes and was not restarted.`;
      this.hooks.setState({ kind: "stopped", message });
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
        // The server kept the conversation in its session files: the next ask carries its
        // history. Its "always" answers lived in the dead process's memory only.
        "The agent-lsp server stopped unexpectedly and is being restarted. The conversation continues from its saved history; “always” answers are asked again.",
        "Show Server Log",
      )
      .then((pick) => {
        if (pick) this.log.show(true);
      });
    this.hooks.setState({ kind: "starting" });
    return { action: CloseAction.Restart, handled: true };
  }

  async restart(): Promise<void> {
    this.hooks.stopAsk();
    await this.stop();
    // Another restart (the key's change event beside a command, or the event twice) may
    // have started a server while this one was stopping: stop that one too, or it is left
    // running beside the one started next.
    while (this.current) await this.stop();
    this.restarts = [];
    await this.start();
  }

  private async stop(): Promise<void> {
    const client = this.current;
    this.current = undefined;
    if (!client) return;
    try {
      // A client still starting throws on stop() and its process lives on beside the next
      // one (a key set in the first seconds did that): let the start settle, then stop it.
      // Bounded: a server that never answers initialize is left to dispose() below.
      const starting = this.starts.get(client);
      if (client.state === State.Starting && starting) {
        let timer: NodeJS.Timeout | undefined;
        const bound = new Promise<void>((resolve) => (timer = setTimeout(resolve, START_SETTLE_MS)));
        await Promise.race([starting.catch(() => undefined), bound]);
        clearTimeout(timer);
      }
      if (client.isRunning()) await client.stop(5000);
      await client.dispose();
    } catch (error) {
      this.log.warn(`stopping the server: ${String(error)}`);
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
    if (this.current?.isRunning()) {
      await this.sendSettings(this.current, true);
      await this.hooks.settingsSent(); // the sandbox settings may have changed the sandbox
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
    const client = this.liveClient();
    if (client) return client;
    void vscode.window
      .showErrorMessage("The agent-lsp server is not running.", "Restart Server", "Show Server Log")
      .then((pick) => {
        if (pick === "Restart Server") void this.restart();
        else if (pick === "Show Server Log") this.log.show(true);
      });
    return undefined;
  }

  /** Stops the server; the log goes last, so what stopping says is still written. */
  async dispose(): Promise<void> {
    await this.stop();
    this.log.dispose();
    this.configListener.dispose();
  }
}
