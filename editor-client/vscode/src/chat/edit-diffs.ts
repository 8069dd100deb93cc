// "Open this change in the diff editor" for an edit_file row: the file as it is, and as it was
// before that one edit (its new text put back to the old), side by side in VS Code's diff
// editor. When the file no longer holds the new text once, the two texts of the edit alone.

import * as vscode from "vscode";
import type { ToolItem } from "./model";

export const EDIT_SCHEME = "agent-lsp-edit";

export class EditDiffs implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly texts = new Map<string, string>();
  private shown = 0;
  private readonly registration = vscode.workspace.registerTextDocumentContentProvider(EDIT_SCHEME, this);

  constructor(private readonly folder: () => vscode.Uri | undefined) {}

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.query) ?? "";
  }

  private side(key: number, which: string, path: string, text: string): vscode.Uri {
    const query = `${key}/${which}`;
    this.texts.set(query, text);
    return vscode.Uri.from({ scheme: EDIT_SCHEME, path: `/${path}`, query });
  }

  async open(item: ToolItem): Promise<void> {
    let args: Record<string, unknown>;
    try {
      args = JSON.parse(item.arguments) as Record<string, unknown>;
    } catch {
      return;
    }
    const path = typeof args["path"] === "string" ? args["path"] : "";
    const folder = this.folder();
    if (!path || !folder) return;
    const file = vscode.Uri.joinPath(folder, path);
    const name = path.split("/").pop() ?? path;
    const key = ++this.shown;
    for (const query of this.texts.keys()) if (Number(query.split("/", 1)[0]) < key - 10) this.texts.delete(query);
    if (item.name === "write_file") {
      const before = this.side(key, "before", path, "");
      await vscode.commands.executeCommand("vscode.diff", before, file, `${name} (written by the agent)`);
      return;
    }
    const oldText = typeof args["old_text"] === "string" ? args["old_text"] : "";
    const newText = typeof args["new_text"] === "string" ? args["new_text"] : "";
    let current: string | undefined;
    try {
      current = (await vscode.workspace.openTextDocument(file)).getText();
    } catch {
      current = undefined;
    }
    if (current !== undefined && newText !== "" && current.split(newText).length === 2) {
      const before = this.side(key, "before", path, current.replace(newText, () => oldText));
      await vscode.commands.executeCommand("vscode.diff", before, file, `${name} (the agent's edit)`);
      return;
    }
    // The file changed since (or the edit replaced every occurrence): the edit's own texts.
    const left = this.side(key, "old", path, oldText);
    const right = this.side(key, "new", path, newText);
    await vscode.commands.executeCommand("vscode.diff", left, right, `${name} (the agent's edit)`);
  }

  dispose(): void {
    this.registration.dispose();
    this.texts.clear();
  }
}
