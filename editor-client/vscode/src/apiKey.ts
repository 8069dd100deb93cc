// The API key in VS Code's SecretStorage (the OS keychain). The extension hands it to the server
// process it starts through that process's environment (MODEL_API_KEY): never a setting, never
// an LSP message, never written to a log. Changing it restarts the server (extension.ts).

import * as vscode from "vscode";
import { API_KEY_SECRET, validateApiKey } from "./setup";

export class ApiKeyStore {
  /** The stored key as last loaded: starting the server must not wait for the keychain. */
  private cached: string | undefined;

  constructor(private readonly secrets: vscode.SecretStorage) {}

  /** Read the key from SecretStorage (at activation and when it changes). */
  async load(): Promise<void> {
    try {
      this.cached = await this.secrets.get(API_KEY_SECRET);
    } catch {
      this.cached = undefined; // no keychain: the server uses its own configuration
    }
  }

  current(): string | undefined {
    return this.cached;
  }

  get(): Thenable<string | undefined> {
    return this.secrets.get(API_KEY_SECRET);
  }

  /** Fires when the key changes, in this window or another one. */
  onDidChange(listener: () => void): vscode.Disposable {
    return this.secrets.onDidChange((e) => {
      if (e.key === API_KEY_SECRET) listener();
    });
  }

  /** "Agent: Set API Key": ask for the key (hidden as typed) and store it. */
  async promptAndStore(): Promise<boolean> {
    const key = await vscode.window.showInputBox({
      title: "Agent: Set API Key",
      prompt:
        "The API key of your model endpoint. Kept in VS Code's secret storage (the OS keychain) " +
        "and given to the agent-lsp server in its environment — never in settings.",
      placeHolder: "sk-…",
      password: true,
      ignoreFocusOut: true,
      validateInput: validateApiKey,
    });
    if (key === undefined) return false;
    await this.secrets.store(API_KEY_SECRET, key.trim());
    return true;
  }

  /** "Agent: Clear API Key". */
  async clear(): Promise<boolean> {
    if ((await this.get()) === undefined) {
      void vscode.window.showInformationMessage("Agent: no API key is stored in VS Code.");
      return false;
    }
    await this.secrets.delete(API_KEY_SECRET);
    return true;
  }
}
