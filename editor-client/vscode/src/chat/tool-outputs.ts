// The whole output of a tool call, from agent/toolOutput, for its row: the tail once the call
// ends (the preview the server sends is the head), "Show all" in pages, "Copy output". The
// text stays in the extension; the page gets a page at a time.

import * as vscode from "vscode";
import { escapeControl } from "../display";
import { Methods, type ToolOutputResult } from "../protocol";
import type { ToView } from "./messages";
import type { Change, Entry, ToolItem } from "./model";
import { cutCount, outputBar, partId, renderButton } from "./render";
import type { Connection } from "./session";
import { pageOf, type SplitOutput, splitOutput, tailOf } from "./tool-output";

export interface ToolOutputsHost {
  connection: Connection;
  sessionId(): string | undefined;
  changed(changes: Change[]): void;
  post(message: ToView): void;
}

/** How many whole outputs are kept for paging (the latest ones shown). */
const KEEP = 4;

export class ToolOutputs {
  /** Whole outputs, split into lines once (Show more pages them again and again). */
  private readonly texts = new Map<string, SplitOutput>();

  constructor(private readonly host: ToolOutputsHost) {}

  private supported(): boolean {
    return this.host.connection.supports(Methods.toolOutput);
  }

  /** The whole output of a call: the preview when it is whole, else agent/toolOutput's. */
  private async text(item: ToolItem): Promise<SplitOutput | undefined> {
    const output = item.output ?? "";
    if (cutCount(output) === undefined) return splitOutput(output);
    const sessionId = this.host.sessionId();
    if (!sessionId || !this.supported()) return undefined;
    const key = `${sessionId}/${item.id}`;
    const known = this.texts.get(key);
    if (known !== undefined) return known;
    const result = await this.host.connection.request<ToolOutputResult>(Methods.toolOutput, { sessionId, callId: item.id });
    // Tool output is the world's text: controls spelled out before the page shows it.
    const text = escapeControl(result.output, { keepNewlines: true }) + (result.truncated ? "\n… [the server kept only this much of the output]" : "");
    const whole = splitOutput(text);
    this.texts.delete(key);
    this.texts.set(key, whole);
    for (const old of this.texts.keys()) if (this.texts.size > KEEP) this.texts.delete(old);
    return whole;
  }

  /** A call ended with a cut preview: fetch its end, which the row shows instead of the head. */
  async finished(entry: Entry, callId: string): Promise<void> {
    const item = entry.items.find((i): i is ToolItem => i.kind === "tool" && i.id === callId);
    if (!item || cutCount(item.output) === undefined || !this.supported()) return;
    try {
      const text = await this.text(item);
      if (text === undefined) return;
      item.full = tailOf(text);
      this.host.changed([{ part: "item", entry, item }]);
    } catch {
      // The head stays, with "Show all" and "Open full output".
    }
  }

  /** "Show all" (from = 0) and "Show more": the next page, in place of the tail or after the last page. */
  async page(entry: Entry | undefined, callId: string, from: number): Promise<void> {
    const item = entry?.items.find((i): i is ToolItem => i.kind === "tool" && i.id === callId);
    if (!entry || !item) return;
    let text: SplitOutput | undefined;
    try {
      text = await this.text(item);
    } catch (error) {
      void vscode.window.showErrorMessage(`Agent: could not get the output: ${error instanceof Error ? error.message : String(error)}`);
      return;
    }
    if (text === undefined) return;
    const page = pageOf(text, from);
    const shownTo = page.next ?? page.totalLines;
    const note = `Lines 1–${shownTo.toLocaleString("en-US")} of ${page.totalLines.toLocaleString("en-US")}.`;
    const more =
      page.next === undefined
        ? ""
        : renderButton({ title: "Show more", action: "moreOutput", args: { callId, entryId: entry.id, from: String(page.next) } });
    this.host.post({
      type: "outputPage",
      id: partId.outputText(entry, item),
      text: page.text,
      replace: from === 0,
      bar: partId.outputBar(entry, item),
      barHtml: outputBar(entry, item, note, more),
    });
  }

  async copy(entry: Entry | undefined, callId: string): Promise<void> {
    const item = entry?.items.find((i): i is ToolItem => i.kind === "tool" && i.id === callId);
    if (!entry || !item) return;
    const whole = await this.text(item).catch(() => undefined);
    await vscode.env.clipboard.writeText(whole?.text ?? item.output ?? "");
    vscode.window.setStatusBarMessage("$(check) Output copied", 2000);
  }
}
