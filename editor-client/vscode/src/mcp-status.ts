// The MCP servers in the window: a status bar item with the folder's servers' states (hidden
// while it has none), Agent: MCP Servers and Agent: Open MCP Configuration. What is shown
// and when to ask again are mcp.ts's and mcp-config.ts's; here are VS Code's parts: the item,
// the dialogs, the file watchers that say a definition changed, and opening the files.

import { mkdir, writeFile } from "node:fs/promises";
import { dirname } from "node:path";
import * as vscode from "vscode";
import { configLocations, type ConfigLocation, type FolderFiles, USER_FILE_TEMPLATE, userConfigFile, WORKSPACE_FILE_TEMPLATE } from "./mcp-config";
import { approveMcpServer, awaitingNotice, describeMcpStatus, McpRefresher, type McpServerItem, newlyAwaiting, showMcpServers } from "./mcp";
import { type McpServerInfo, type McpServersResult, Methods } from "./protocol";

/** What this needs of the client. */
export interface McpHost {
  request<R>(method: string, params: unknown): Promise<R>;
  supports(method: string): boolean;
  folderParams(): { workspaceFolder?: string };
  showLog(): void;
  /** The settings editor at `query` (the remote tab in a remote window). */
  openSettings(query: string): Promise<void>;
}

// A definition file saved twice in a row (an editor's save, a formatter) is read once.
const WATCH_DEBOUNCE_MS = 300;

export class McpStatus implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem("agentLsp.mcp", vscode.StatusBarAlignment.Left, 8);
  private readonly refresher: McpRefresher;
  private readonly disposables: vscode.Disposable[] = [];
  private debounce: ReturnType<typeof setTimeout> | undefined;
  /** The definitions announced as waiting for approval (each once a window). */
  private readonly announced = new Set<string>();
  /** Each server's own output (Show Output), by name. */
  private readonly outputs = new Map<string, vscode.OutputChannel>();

  constructor(private readonly host: McpHost) {
    this.item.name = "Agent MCP Servers";
    this.item.command = "agentLsp.mcpServers";
    this.refresher = new McpRefresher(
      () => this.load(),
      (servers) => this.show(servers),
    );
    // The server reads the definitions again when asked; these say when asking is worth it.
    const watchers = [vscode.workspace.createFileSystemWatcher("**/{.vscode/mcp.json,.mcp.json}")];
    const userFile = userConfigFile(process.env);
    if (userFile) {
      watchers.push(
        vscode.workspace.createFileSystemWatcher(new vscode.RelativePattern(vscode.Uri.file(dirname(userFile)), "config.toml")),
      );
    }
    for (const watcher of watchers) {
      this.disposables.push(
        watcher,
        watcher.onDidCreate(() => this.changed()),
        watcher.onDidChange(() => this.changed()),
        watcher.onDidDelete(() => this.changed()),
      );
    }
    this.disposables.push(vscode.workspace.onDidChangeWorkspaceFolders(() => this.changed()));
  }

  /** Ask the server again (its start, a settings change, an ask's end). */
  refresh(): void {
    void this.refresher.refresh();
  }

  /** The server stopped: its servers with it. */
  serverStopped(): void {
    this.refresher.clear();
  }

  /** Agent: MCP Servers. */
  async showServers(): Promise<void> {
    await showMcpServers(
      { request: (method, params) => this.host.request(method, params) },
      this.host.folderParams(),
      {
        pick: (items, title, placeHolder) =>
          vscode.window.showQuickPick<McpServerItem>(items, { title, placeHolder, matchOnDescription: true, matchOnDetail: true }),
        details: async (message, detail, actions) => {
          const pick = await vscode.window.showInformationMessage(message, { modal: true, detail }, ...actions, "Open MCP Configuration");
          if (pick === "Open MCP Configuration") await this.openConfiguration();
          return pick;
        },
        failed: async (message, detail, actions) => {
          const pick = await vscode.window.showErrorMessage(message, { modal: true, detail }, ...actions, "Show Log");
          if (pick === "Show Log") this.host.showLog();
          return pick;
        },
        output: (name, text) => {
          // One output channel per server: its own lines, not the agent server's log.
          let channel = this.outputs.get(name);
          if (!channel) {
            channel = vscode.window.createOutputChannel(`Agent MCP: ${name}`);
            this.outputs.set(name, channel);
          }
          channel.replace(text);
          channel.show(true);
        },
        none: async (message) => {
          const pick = await vscode.window.showInformationMessage(message, "Open MCP Configuration");
          if (pick) await this.openConfiguration();
        },
        info: (message) => void vscode.window.showInformationMessage(message),
        error: (message) => void vscode.window.showErrorMessage(message),
      },
      (servers) => this.refresher.listed(servers),
    );
  }

  /** Agent: Open MCP Configuration: pick where servers are defined; open it. */
  async openConfiguration(): Promise<void> {
    const path = userConfigFile(process.env);
    const userFile = path ? { path, exists: await exists(vscode.Uri.file(path)) } : undefined;
    const folders: FolderFiles[] = [];
    for (const folder of vscode.workspace.workspaceFolders ?? []) {
      if (folder.uri.scheme !== "file") continue; // the server serves file folders only
      folders.push({
        name: folder.name,
        path: folder.uri.fsPath,
        vscodeMcpJson: await exists(vscode.Uri.joinPath(folder.uri, ".vscode", "mcp.json")),
        mcpJson: await exists(vscode.Uri.joinPath(folder.uri, ".mcp.json")),
      });
    }
    const picked = await vscode.window.showQuickPick(configLocations(userFile, folders), {
      title: "Agent: Open MCP Configuration",
      placeHolder: "Where MCP servers are defined (read in this order; a user or setting server wins a name)",
      matchOnDetail: true,
    });
    if (picked) await this.open(picked);
  }

  private async open(location: ConfigLocation): Promise<void> {
    try {
      switch (location.where) {
        case "setting":
          return await this.host.openSettings("agentLsp.mcpServers");
        case "userFile":
          if (!location.exists) {
            // The file may hold an API key too: private, as `agent-lsp mcp add` writes it.
            await mkdir(dirname(location.path), { recursive: true, mode: 0o700 });
            await writeFile(location.path, USER_FILE_TEMPLATE, { mode: 0o600, flag: "wx" });
          }
          await vscode.window.showTextDocument(vscode.Uri.file(location.path));
          return;
        case "workspaceFile":
          if (location.exists) {
            await vscode.window.showTextDocument(vscode.Uri.file(location.path));
            return;
          }
          // Unsaved until the user saves it: nothing is written into the repository unasked.
          await this.openUntitled(vscode.Uri.file(location.path).with({ scheme: "untitled" }), WORKSPACE_FILE_TEMPLATE);
          return;
      }
    } catch (error) {
      void vscode.window.showErrorMessage(`Agent: could not open ${location.detail}: ${String((error as Error)?.message ?? error)}`);
    }
  }

  private async openUntitled(uri: vscode.Uri, template: string): Promise<void> {
    const document = await vscode.workspace.openTextDocument(uri);
    const editor = await vscode.window.showTextDocument(document);
    if (document.getText() === "") await editor.edit((edit) => edit.insert(new vscode.Position(0, 0), template));
  }

  private changed(): void {
    if (this.debounce) clearTimeout(this.debounce);
    this.debounce = setTimeout(() => {
      this.debounce = undefined;
      this.refresh();
    }, WATCH_DEBOUNCE_MS);
  }

  private async load(): Promise<McpServerInfo[] | undefined> {
    if (!this.host.supports(Methods.mcpServers)) return undefined; // an older server, or none yet
    const { servers } = await this.host.request<McpServersResult>(Methods.mcpServers, this.host.folderParams());
    return servers;
  }

  private show(servers: McpServerInfo[] | undefined): void {
    for (const server of newlyAwaiting(this.announced, servers ?? [])) {
      // Not modal, and nothing starts from here but the approval dialog the user opens.
      void vscode.window.showWarningMessage(awaitingNotice(server), "Review…", "Not Now").then(async (pick) => {
        if (pick !== "Review…") return;
        await approveMcpServer({ request: (method, params) => this.host.request(method, params) }, this.host.folderParams(), server, {
          info: (message) => void vscode.window.showInformationMessage(message),
          error: (message) => void vscode.window.showErrorMessage(message),
        });
        this.refresh();
      });
    }
    const view = servers ? describeMcpStatus(servers) : undefined;
    if (!view) {
      this.item.hide();
      return;
    }
    this.item.text = view.text;
    this.item.tooltip = view.tooltip;
    this.item.backgroundColor =
      view.attention === "error"
        ? new vscode.ThemeColor("statusBarItem.errorBackground")
        : view.attention === "warning"
          ? new vscode.ThemeColor("statusBarItem.warningBackground")
          : undefined;
    this.item.show();
  }

  dispose(): void {
    if (this.debounce) clearTimeout(this.debounce);
    this.refresher.dispose();
    this.item.dispose();
    for (const channel of this.outputs.values()) channel.dispose();
    for (const d of this.disposables) d.dispose();
  }
}

async function exists(uri: vscode.Uri): Promise<boolean> {
  try {
    await vscode.workspace.fs.stat(uri);
    return true;
  } catch {
    return false;
  }
}
