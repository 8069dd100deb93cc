// The "Agent" webview panel: a thin wrapper that shows renderPage() and forwards link clicks.

import { randomBytes } from "node:crypto";
import * as vscode from "vscode";
import { type Conversation, renderConversationBody, renderPage } from "./panel-render";

export class AgentPanel implements vscode.Disposable {
  static readonly viewType = "agentLsp.conversation";
  private panel: vscode.WebviewPanel | undefined;
  private conversation: Conversation = { entries: [] };

  constructor(private readonly onOpenLink: (href: string) => void) {}

  get isOpen(): boolean {
    return this.panel !== undefined;
  }

  get viewColumn(): vscode.ViewColumn | undefined {
    return this.panel?.viewColumn;
  }

  /** Open (or reveal) the panel beside the editor without taking focus unless asked. */
  show(preserveFocus = true): void {
    if (this.panel) {
      // Brought to the front of its own group, a hidden panel would cover the editor the user
      // is working in (whose buffer the agent may be about to edit): move it beside instead.
      const active = vscode.window.activeTextEditor?.viewColumn;
      const wouldCover = !this.panel.visible && active !== undefined && active === this.panel.viewColumn;
      this.panel.reveal(wouldCover ? vscode.ViewColumn.Beside : undefined, preserveFocus);
      return;
    }
    const panel = vscode.window.createWebviewPanel(
      AgentPanel.viewType,
      "Agent",
      { viewColumn: vscode.ViewColumn.Beside, preserveFocus },
      // Our own nonce'd script only; the answer's HTML is escaped and the CSP blocks the rest.
      // Retained when hidden so live updates are not lost while another tab is in front.
      { enableScripts: true, retainContextWhenHidden: true, localResourceRoots: [] },
    );
    panel.webview.html = renderPage(this.conversation, {
      cspSource: panel.webview.cspSource,
      nonce: randomBytes(16).toString("base64"),
    });
    panel.webview.onDidReceiveMessage((message: unknown) => {
      if (typeof message !== "object" || message === null) return;
      const m = message as { type?: unknown; href?: unknown };
      if (m.type === "ready") this.post();
      else if (m.type === "openLink" && typeof m.href === "string") this.onOpenLink(m.href);
    });
    panel.onDidDispose(() => {
      if (this.panel === panel) this.panel = undefined;
    });
    this.panel = panel;
  }

  update(conversation: Conversation): void {
    this.conversation = conversation;
    this.post();
  }

  private post(): void {
    void this.panel?.webview.postMessage({
      type: "render",
      html: renderConversationBody(this.conversation),
    });
  }

  dispose(): void {
    this.panel?.dispose();
    this.panel = undefined;
  }
}
