// The chip above the chat input for the file you are looking at: what goes with the next ask,
// shown before it is sent ("app.py" or "app.py · lines 3-9"), ✕ to leave it out (or ＋ to put
// it in when agentLsp.sendActiveEditor is off). The page sends back the chip's key and the
// ask carries exactly the snapshot that chip showed; no chip, no file.

import * as vscode from "vscode";
import { buildContext, type BuiltContext, chipLabel, type EditorSnapshot } from "../editor-context";
import { escapeControl } from "../display";
import type { ToView } from "./messages";

export interface ActiveFileHost {
  /** The server accepts editor context, and nothing is pinned by Ask About Selection. */
  enabled(): boolean;
  sendActiveEditor(): boolean;
  folderPath(): string | undefined;
  post(message: ToView): void;
}

interface Shown {
  key: string;
  snapshot: EditorSnapshot;
  shownPath: string;
}

export class ActiveFileChip implements vscode.Disposable {
  private counter = 0;
  /** The last chips posted, by key (the page may send one just replaced). */
  private readonly shown = new Map<string, Shown>();
  /** The document the user chose differently for (✕ with the setting on, ＋ with it off). */
  private toggled: string | undefined;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private readonly disposables: vscode.Disposable[];

  constructor(private readonly host: ActiveFileHost) {
    this.disposables = [
      vscode.window.onDidChangeActiveTextEditor(() => this.refresh()),
      vscode.window.onDidChangeTextEditorSelection(() => this.refreshSoon()),
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (e.affectsConfiguration("agentLsp.sendActiveEditor")) this.refresh();
      }),
    ];
  }

  private refreshSoon(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => this.refresh(), 150);
  }

  /** Whether the chip of this document is attached: the setting, unless the user chose otherwise. */
  private attached(uri: string): boolean {
    return this.host.sendActiveEditor() !== (this.toggled === uri);
  }

  /** Post the chip for the active editor now (or none). */
  refresh(): void {
    const editor = vscode.window.activeTextEditor ?? vscode.window.visibleTextEditors[0];
    if (!editor || !this.host.enabled()) {
      this.host.post({ type: "activeFile" });
      return;
    }
    const { start, end } = editor.selection;
    const snapshot: EditorSnapshot = {
      uri: editor.document.uri.toString(),
      scheme: editor.document.uri.scheme,
      fsPath: editor.document.uri.fsPath,
      selection: { start: { line: start.line, character: start.character }, end: { line: end.line, character: end.character } },
    };
    const shownPath = escapeControl(vscode.workspace.asRelativePath(editor.document.uri, false));
    // Only what the server would take (a file of the conversation's folder) gets a chip.
    if (!buildContext(snapshot, this.host.folderPath(), { auto: true, attach: [] }, shownPath).context) {
      this.host.post({ type: "activeFile" });
      return;
    }
    if (this.toggled !== undefined && this.toggled !== snapshot.uri) this.toggled = undefined;
    const key = `f${++this.counter}`;
    this.shown.set(key, { key, snapshot, shownPath });
    for (const old of this.shown.keys()) if (this.shown.size > 8) this.shown.delete(old);
    this.host.post({ type: "activeFile", key, label: chipLabel(shownPath, snapshot), title: shownPath, attached: this.attached(snapshot.uri) });
  }

  /** ✕ or ＋ on the chip. */
  toggle(key: string): void {
    const shown = this.shown.get(key);
    if (!shown) return;
    this.toggled = this.toggled === shown.snapshot.uri ? undefined : shown.snapshot.uri;
    this.refresh();
  }

  /** The context of the chip the page showed attached (`key`), as it showed it. */
  context(key: string | undefined): BuiltContext {
    const shown = key === undefined ? undefined : this.shown.get(key);
    if (!shown) return {};
    return buildContext(shown.snapshot, this.host.folderPath(), { auto: true, attach: [] }, shown.shownPath);
  }

  dispose(): void {
    if (this.timer) clearTimeout(this.timer);
    for (const d of this.disposables) d.dispose();
  }
}
