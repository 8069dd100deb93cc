// agent-lsp's VS Code client: start the server over stdio, forward asks, display the results.
// All agent logic lives in the server. Here the pieces are wired: the client proper
// (agent-client.ts, which runs the server through server-process.ts) and the commands
// (commands.ts); the pure modules beside them hold the formatting.

import type * as vscode from "vscode";
import { AgentClient } from "./agent-client";
import { registerCommands } from "./commands";

let agent: AgentClient | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const instance = new AgentClient(context);
  agent = instance;
  context.subscriptions.push(...registerCommands(context, instance));
  // Commands work while the server starts (requests wait for it); don't block activation
  // on the server, only on reading the key it is started with.
  await instance.loadApiKey();
  void instance.start().then(() => instance.chat.restore());
}

export async function deactivate(): Promise<void> {
  await agent?.dispose();
  agent = undefined;
}
