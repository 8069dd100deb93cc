// The chat view (a webview view in its own view container): shows the page, posts the parts
// that changed, and dispatches the page's messages. Features register their own actions
// (registerAction), so a button they render reaches them without a change here.

import { randomBytes } from "node:crypto";
import * as vscode from "vscode";
import { type FromView, isFromView, type ToView } from "./messages";
import type { Change, Conversation } from "./model";
import { renderPage } from "./page";
import { PagePatcher } from "./patches";
import { type RenderOptions, renderConversation } from "./render";

export type ActionHandler = (args: Record<string, string>) => unknown;

export interface ChatViewHost {
  /** The conversation to draw when the page (re)loads. */
  conversation(): Conversation;
  renderOptions(): RenderOptions;
  /** What the page needs besides the conversation when it (re)loads. */
  pageState(): ToView[];
  onMessage(message: FromView): void;
}

export class ChatView implements vscode.WebviewViewProvider, vscode.Disposable {
  static readonly viewId = "agentLsp.chat";
  static readonly containerId = "agentLsp";
  private view: vscode.WebviewView | undefined;
  private ready = false;
  private readonly actions = new Map<string, ActionHandler>();
  private readonly disposables: vscode.Disposable[] = [];
  private readonly patcher = new PagePatcher();

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly host: ChatViewHost,
  ) {}

  get visible(): boolean {
    return this.view?.visible ?? false;
  }

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    this.ready = false;
    const dist = vscode.Uri.joinPath(this.extensionUri, "dist");
    view.webview.options = { enableScripts: true, localResourceRoots: [dist] };
    this.disposables.push(
      view.webview.onDidReceiveMessage((message: unknown) => {
        if (!isFromView(message)) return;
        if (message.type === "ready") {
          this.ready = true;
          this.resetPage();
          for (const m of this.host.pageState()) this.post(m);
        }
        if (message.type === "action") {
          const handler = this.actions.get(message.action);
          if (handler) void Promise.resolve(handler(message.args)).catch((e: unknown) => console.error(e));
          return;
        }
        this.host.onMessage(message);
      }),
      view.onDidDispose(() => {
        if (this.view === view) {
          this.view = undefined;
          this.ready = false;
        }
      }),
    );
    // Set after the listener: the page says "ready" as soon as its script runs.
    view.webview.html = renderPage({
      cspSource: view.webview.cspSource,
      nonce: randomBytes(16).toString("base64"),
      scriptUri: view.webview.asWebviewUri(vscode.Uri.joinPath(dist, "webview.js")).toString(),
      body: renderConversation(this.host.conversation(), this.host.renderOptions()),
    });
  }

  registerAction(name: string, handler: ActionHandler): vscode.Disposable {
    this.actions.set(name, handler);
    return new vscode.Disposable(() => {
      if (this.actions.get(name) === handler) this.actions.delete(name);
    });
  }

  post(message: ToView): void {
    if (this.view && this.ready) void this.view.webview.postMessage(message);
  }

  /** Draw the whole conversation again (new, reopened, or the page reloaded). */
  resetPage(): void {
    this.patcher.reset();
    const conversation = this.host.conversation();
    const html = renderConversation(conversation, this.host.renderOptions());
    this.post(conversation.sessionId ? { type: "reset", html, key: conversation.sessionId } : { type: "reset", html });
  }

  /** Send only the parts the changes touched. */
  changed(changes: readonly Change[]): void {
    if (!this.view || !this.ready) return;
    for (const message of this.patcher.messages(changes, this.host.renderOptions())) this.post(message);
  }

  /** Show the view; with `focusInput` put the cursor in its input. */
  async reveal(focusInput: boolean, text?: string): Promise<void> {
    if (this.view) this.view.show(!focusInput);
    else await vscode.commands.executeCommand(`${ChatView.viewId}.focus`);
    if (focusInput) {
      // The page may still be loading: wait for it to say it is ready.
      for (let i = 0; i < 50 && !this.ready; i++) await new Promise((r) => setTimeout(r, 100));
      this.post(text === undefined ? { type: "focusInput" } : { type: "focusInput", text });
    }
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
  }
}
