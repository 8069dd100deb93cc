// "Agent: Select Model", the model status bar item and "Agent: Check Connection". The server
// asks the endpoint (agent/listModels, agent/checkConnection), so the key never leaves it.

import * as vscode from "vscode";
import type { LanguageClient } from "vscode-languageclient/node";
import { type CheckConnectionResult, type ListModelsResult, Methods } from "./protocol";
import { SECTION } from "./settings";
import { type CheckAction, describeCheck, describeModelStatus, type ModelPickItem, modelPickItems } from "./setup";

/** What these commands need from the extension. */
export interface SetupHost {
  /** The running client, or undefined after telling the user why there is none. */
  usableClient(): LanguageClient | undefined;
  folderParams(): { workspaceFolder?: string };
  readonly log: vscode.LogOutputChannel;
  showRequestError(error: unknown): Promise<void>;
  runCheckAction(action: CheckAction): Promise<void>;
}

/** The status bar item showing the model; a click opens the picker. */
export class ModelStatus implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem("agentLsp.model", vscode.StatusBarAlignment.Left, 9);
  private readonly listener: vscode.Disposable;
  /** What the server last said asks use (agent/listModels' `current`). */
  serverCurrent: string | undefined;

  constructor() {
    this.item.name = "Agent Model";
    this.item.command = "agentLsp.selectModel";
    this.listener = vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration(`${SECTION}.model`)) this.update();
    });
    this.update();
    this.item.show();
  }

  update(): void {
    const view = describeModelStatus(vscode.workspace.getConfiguration(SECTION).get<string>("model"), this.serverCurrent);
    this.item.text = view.text;
    this.item.tooltip = view.tooltip;
  }

  dispose(): void {
    this.listener.dispose();
    this.item.dispose();
  }
}

/** "Agent: Select Model": the endpoint's models in a quick pick; the choice goes to agentLsp.model. */
export async function selectModel(host: SetupHost, status: ModelStatus): Promise<void> {
  const client = host.usableClient();
  if (!client) return;
  type Item = vscode.QuickPickItem & ModelPickItem;
  const pick = vscode.window.createQuickPick<Item>();
  pick.title = "Agent: Select Model";
  pick.placeholder = "Asking the endpoint which models it serves…";
  pick.busy = true;
  pick.matchOnDescription = true;
  let hidden = false;
  const chosen = new Promise<Item | undefined>((resolve) => {
    pick.onDidAccept(() => resolve(pick.selectedItems[0]));
    pick.onDidHide(() => {
      hidden = true;
      resolve(undefined);
    });
  });
  pick.show();
  let result: ListModelsResult;
  try {
    result = await client.sendRequest<ListModelsResult>(Methods.listModels, host.folderParams());
  } catch (error) {
    pick.dispose();
    if (!hidden) await host.showRequestError(error);
    return;
  }
  status.serverCurrent = result.current;
  status.update();
  if (hidden) return;
  pick.items = modelPickItems(result);
  pick.busy = false;
  pick.placeholder = `Now: ${result.current}. Choose the model agent-lsp uses (saved in your user settings)`;
  const item = await chosen;
  pick.dispose();
  if (!item) return;
  let id = item.id;
  if (id === undefined) {
    id = (
      await vscode.window.showInputBox({
        title: "Agent: Select Model",
        prompt: "The model's name as the endpoint knows it",
        value: result.current,
        ignoreFocusOut: true,
      })
    )?.trim();
    if (!id) return;
  }
  const config = vscode.workspace.getConfiguration(SECTION);
  await config.update("model", id, vscode.ConfigurationTarget.Global);
  const inspected = config.inspect<string>("model");
  const shadow = inspected?.workspaceFolderValue ?? inspected?.workspaceValue;
  if (shadow && shadow !== id) {
    void vscode.window.showWarningMessage(
      `Agent: this workspace's settings set agentLsp.model to "${shadow}", which takes precedence over your choice "${id}".`,
    );
  }
}

/** "Agent: Check Connection": the server tries the endpoint and says what works and what to fix. */
export async function checkConnection(host: SetupHost): Promise<void> {
  const client = host.usableClient();
  if (!client) return;
  let result: CheckConnectionResult;
  try {
    result = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: "Agent: checking the model endpoint…" },
      () => client.sendRequest<CheckConnectionResult>(Methods.checkConnection, host.folderParams()),
    );
  } catch (error) {
    await host.showRequestError(error);
    return;
  }
  const report = describeCheck(result);
  host.log.info(`connection check:\n${report.lines.join("\n")}`);
  const show = report.ok ? vscode.window.showInformationMessage : vscode.window.showErrorMessage;
  const pick = await show(`Agent: ${report.headline}`, ...report.actions.map((a) => a.title));
  const action = report.actions.find((a) => a.title === pick)?.action;
  if (action) await host.runCheckAction(action);
}
