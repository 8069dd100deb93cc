// What each name runs: the extension's commands (package.json's `contributes.commands`), mapped
// to the client's methods or to the short flows here that only present what the client returns;
// and the actions of buttons (an error's, the chat view's, Check Connection's results).

import * as vscode from "vscode";
import type { AgentClient } from "./agent-client";
import { manageGrants } from "./grants";
import { type ListToolsResult, Methods } from "./protocol";
import type { CheckAction } from "./setup";
import { disabledAfterPick, isTurnedOff, toolPickItems, toolsTitle, toolToggleItems } from "./tools-view";

export function registerCommands(context: vscode.ExtensionContext, agent: AgentClient): vscode.Disposable[] {
  return [
    vscode.commands.registerCommand("agentLsp.ask", (prompt?: unknown) => ask(agent, prompt)),
    vscode.commands.registerCommand("agentLsp.askQuick", () => askQuick(agent)),
    vscode.commands.registerCommand("agentLsp.askAboutSelection", (prompt?: unknown) =>
      agent.chat.askAboutSelection(typeof prompt === "string" ? prompt : undefined),
    ),
    vscode.commands.registerCommand("agentLsp.compact", () => agent.chat.compact()),
    vscode.commands.registerCommand("agentLsp.cancel", () => cancel(agent)),
    vscode.commands.registerCommand("agentLsp.newConversation", () => agent.newConversation()),
    vscode.commands.registerCommand("agentLsp.history", () => agent.chat.showHistory()),
    vscode.commands.registerCommand("agentLsp.deleteConversation", () => agent.chat.deleteConversation()),
    vscode.commands.registerCommand("agentLsp.listTools", () => listTools(agent)),
    vscode.commands.registerCommand("agentLsp.configureTools", () => configureTools(agent)),
    vscode.commands.registerCommand("agentLsp.manageGrants", () => manageGrantsCommand(agent)),
    vscode.commands.registerCommand("agentLsp.sandboxStatus", () => agent.sandboxStatus()),
    vscode.commands.registerCommand("agentLsp.mcpServers", () => agent.mcp.showServers()),
    vscode.commands.registerCommand("agentLsp.openMcpConfiguration", () => agent.mcp.openConfiguration()),
    vscode.commands.registerCommand("agentLsp.showPanel", () => agent.showPanel()),
    vscode.commands.registerCommand("agentLsp.showToolTrace", () => agent.showTrace()),
    vscode.commands.registerCommand("agentLsp.showServerLog", () => agent.showLog()),
    vscode.commands.registerCommand("agentLsp.restartServer", () => agent.restart()),
    vscode.commands.registerCommand("agentLsp.showChanges", (session?: unknown, checkpoint?: unknown) =>
      agent.checkpoints.pickAndShowChanges(session, checkpoint),
    ),
    vscode.commands.registerCommand("agentLsp.undoAsk", (session?: unknown, checkpoint?: unknown) =>
      agent.checkpoints.pickAndUndo(session, checkpoint),
    ),
    vscode.commands.registerCommand("agentLsp.setApiKey", () => agent.setApiKey()),
    vscode.commands.registerCommand("agentLsp.clearApiKey", () => agent.clearApiKey()),
    vscode.commands.registerCommand("agentLsp.selectModel", () => agent.selectModel()),
    vscode.commands.registerCommand("agentLsp.checkConnection", () => agent.checkConnection()),
    vscode.commands.registerCommand("agentLsp.getStarted", () => getStarted(context)),
  ];
}

/** Agent: Ask: the chat's input, focused. A string argument is sent as the prompt. */
async function ask(agent: AgentClient, promptArgument?: unknown): Promise<void> {
  if (typeof promptArgument === "string") {
    await agent.chat.view.reveal(false);
    await agent.chat.send(promptArgument);
    return;
  }
  await agent.chat.view.reveal(true);
}

/** Agent: Ask in Quick Input, for keyboard users. */
async function askQuick(agent: AgentClient): Promise<void> {
  const running = agent.chat.session.runningAsk;
  if (running) {
    // Lasts exactly as long as the ask it is about.
    void vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: "Agent: still working on the previous request", cancellable: true },
      async (_progress, token) => {
        token.onCancellationRequested(() => agent.chat.stop());
        await running;
      },
    );
    return;
  }
  const prompt = await vscode.window.showInputBox({
    title: "Agent: Ask",
    prompt: agent.chat.session.sessionId
      ? "Continue the conversation (Agent: New Conversation starts over)"
      : "Ask the agent about this workspace",
    placeHolder: "e.g. Why does the test in tests/test_app.py fail?",
    ignoreFocusOut: true,
  });
  if (prompt === undefined || prompt.trim() === "") return;
  await agent.chat.view.reveal(false);
  await agent.chat.send(prompt);
}

function cancel(agent: AgentClient): void {
  if (!agent.chat.stop()) vscode.window.setStatusBarMessage("Agent: nothing is running", 3000);
}

/** agent/listTools for the current folder; undefined (the error shown) when it failed. */
async function folderTools(agent: AgentClient): Promise<ListToolsResult["tools"] | undefined> {
  const client = agent.usableClient();
  if (!client) return undefined;
  try {
    const result = await client.sendRequest<ListToolsResult>(Methods.listTools, agent.folderParams());
    return result.tools ?? [];
  } catch (error) {
    void agent.showRequestError(error);
    return undefined;
  }
}

async function listTools(agent: AgentClient): Promise<void> {
  const tools = await folderTools(agent);
  if (!tools) return;
  const items = toolPickItems(tools).map((entry): vscode.QuickPickItem =>
    "separator" in entry ? { label: entry.separator, kind: vscode.QuickPickItemKind.Separator } : entry,
  );
  await vscode.window.showQuickPick(items, {
    title: toolsTitle(tools),
    placeHolder: "The tools the agent can call in this workspace",
    matchOnDescription: true,
    matchOnDetail: true,
  });
}

/**
 * Agent: Configure Tools…: the tools of this conversation, checked when on; the unchecked
 * ones are sent as agent/ask's disabledTools with each of its asks (the model is not offered them).
 */
async function configureTools(agent: AgentClient): Promise<void> {
  const tools = await folderTools(agent);
  if (!tools) return;
  const items = toolToggleItems(tools, agent.chat.disabledTools).map(
    (entry): vscode.QuickPickItem & { name?: string } =>
      "separator" in entry ? { label: entry.separator, kind: vscode.QuickPickItemKind.Separator } : entry,
  );
  const picked = await vscode.window.showQuickPick(items, {
    title: "Agent: tools of this conversation",
    placeHolder: "Checked tools are offered to the model; uncheck the ones it should not use here",
    canPickMany: true,
    matchOnDescription: true,
    matchOnDetail: true,
  });
  if (picked === undefined) return;
  const disabled = disabledAfterPick(tools, new Set(picked.flatMap((i) => (i.name === undefined ? [] : [i.name]))));
  agent.chat.setDisabledTools(disabled);
  const off = tools.filter((tool) => isTurnedOff(tool.name, disabled)).length;
  vscode.window.setStatusBarMessage(
    off ? `Agent: ${off} of ${tools.length} tools off in this conversation` : "Agent: all tools on in this conversation",
    4000,
  );
}

/** Agent: Manage Permissions: the conversation's "always" answers; revoke the picked ones. */
async function manageGrantsCommand(agent: AgentClient): Promise<void> {
  await manageGrants({ request: (method, params) => agent.request(method, params) }, agent.chat.session.sessionId, {
    pick: (items, title, placeHolder) =>
      vscode.window.showQuickPick(items, { title, placeHolder, canPickMany: true, matchOnDescription: true, matchOnDetail: true }),
    info: (message) => void vscode.window.showInformationMessage(message),
    error: (message) => void vscode.window.showErrorMessage(message),
  });
}

async function getStarted(context: vscode.ExtensionContext): Promise<void> {
  await vscode.commands.executeCommand(
    "workbench.action.openWalkthrough",
    `${context.extension.id}#agentLsp.firstRun`,
    false,
  );
}

// -- the actions of buttons ----------------------------------------------------------------------

/** The settings that say where the model is (a refused connection, an unknown host, no model list). */
const ENDPOINT_SETTINGS = "agentLsp.baseUrl";

/** What the actions need of the client. */
export interface ActionHost {
  readonly log: vscode.LogOutputChannel;
  setApiKey(): Promise<void>;
  selectModel(): Promise<void>;
  checkConnection(): Promise<void>;
}

/** What an error's button does (the chat view's buttons come here too). */
export async function routeAction(context: vscode.ExtensionContext, host: ActionHost, action: string): Promise<void> {
  switch (action) {
    case "openSettings":
      await openSettings(context, host.log);
      break;
    case "openEndpointSettings":
      await openSettings(context, host.log, ENDPOINT_SETTINGS);
      break;
    case "selectModel":
      await host.selectModel();
      break;
    case "openReadme":
      await openReadme(context);
      break;
    case "openFolder":
      await vscode.commands.executeCommand("workbench.action.files.openFolder");
      break;
    case "showLog":
      host.log.show(true);
      break;
    case "setApiKey":
      await host.setApiKey();
      break;
    case "checkConnection":
      await host.checkConnection();
      break;
    default:
      break;
  }
}

/** What a button of Check Connection's report does. */
export async function routeCheckAction(
  context: vscode.ExtensionContext,
  host: ActionHost,
  action: CheckAction,
): Promise<void> {
  switch (action) {
    case "setApiKey":
      return host.setApiKey();
    case "selectModel":
      return host.selectModel();
    case "openSettings":
      return openSettings(context, host.log);
    case "openEndpointSettings":
      return openSettings(context, host.log, ENDPOINT_SETTINGS);
    case "showLog":
      host.log.show(true);
  }
}

/**
 * This extension's settings (or those `query` finds). In a remote window (Remote-SSH, WSL,
 * code-server) the machine-scoped ones (server command, endpoint, MCP servers) are set in the
 * remote's settings, and the User tab hides them, so open the Remote tab there.
 */
export async function openSettings(
  context: vscode.ExtensionContext,
  log: vscode.LogOutputChannel,
  query = `@ext:${context.extension.id}`,
): Promise<void> {
  if (vscode.env.remoteName) {
    try {
      await vscode.commands.executeCommand("workbench.action.openRemoteSettings", { query });
      return;
    } catch (error) {
      log.warn(`opening the remote settings: ${String(error)}`);
    }
  }
  await vscode.commands.executeCommand("workbench.action.openSettings", query);
}

/** The README shipped in the .vsix (vsce stores it as readme.md). */
async function openReadme(context: vscode.ExtensionContext): Promise<void> {
  for (const name of ["README.md", "readme.md"]) {
    const uri = vscode.Uri.joinPath(context.extensionUri, name);
    try {
      await vscode.workspace.fs.stat(uri);
      await vscode.commands.executeCommand("markdown.showPreview", uri);
      return;
    } catch {
      // try the next spelling
    }
  }
}
