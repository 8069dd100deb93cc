// "Show changes" and "Undo this ask": what one ask changed, in VS Code's diff view, and a
// rewind that asks first; as buttons under each answer in the chat view and as commands that
// pick an ask. The server holds the checkpoints (agent/checkpoints, agent/diff, agent/rewind);
// this module only asks it and shows the answers.

import * as vscode from "vscode";
import type { LanguageClient } from "vscode-languageclient/node";
import type { Button, Conversation } from "./chat/model";
import { changesText, checkpointItems, createdFiles, undoOutcome, undoQuestion } from "./checkpoints-view";
import {
  type CheckpointsResult,
  type DiffResult,
  type FileDiff,
  Methods,
  type RewindResult,
} from "./protocol";

export const SCHEME = "agent-lsp-checkpoint";

export interface CheckpointHost {
  /** The running client, or undefined after telling the user why there is none. */
  client(): LanguageClient | undefined;
  /** The folder the chat's conversation acts in (to name the files in the diff view). */
  folder(): vscode.Uri | undefined;
}

/** What this needs of the chat view (chat/controller.ts). */
export interface ChatHooks {
  registerAction(name: string, handler: (args: Record<string, string>) => unknown): vscode.Disposable;
  addEntryAction(entryId: string, button: Button): void;
  /** "2 files changed" under an answer. */
  setEntryChanges(entryId: string, text: string): void;
  readonly session: {
    readonly sessionId: string | undefined;
    readonly conversation: Conversation;
    replace(conversation: Conversation): Conversation;
  };
}

const SHOW = "showChanges";
const UNDO = "undoAsk";

export class Checkpoints implements vscode.Disposable {
  private readonly contents = new Map<string, string>();
  private readonly disposables: vscode.Disposable[];
  private shown = 0;

  constructor(
    private readonly host: CheckpointHost,
    private readonly chat: ChatHooks,
  ) {
    this.disposables = [
      vscode.workspace.registerTextDocumentContentProvider(SCHEME, {
        provideTextDocumentContent: (uri) => this.contents.get(uri.query) ?? "",
      }),
      chat.registerAction(SHOW, (args) => this.withIds(args, (s, c) => this.showChanges(s, c))),
      chat.registerAction(UNDO, (args) => this.withIds(args, (s, c) => this.undoAsk(s, c))),
    ];
  }

  /**
   * An ask answered: if it changed files, "2 files changed" with "Show changes" and "Undo
   * this ask" under its answer; nothing under an answer that changed nothing. A server that
   * cannot list its checkpoints gets the buttons without the count.
   */
  async answered(entryId: string, sessionId: string, checkpointId: string): Promise<void> {
    const changed = await this.changedFiles(sessionId, checkpointId);
    if (changed === 0) return;
    const args = { sessionId, checkpointId };
    if (changed !== undefined) this.chat.setEntryChanges(entryId, changesText(changed));
    this.chat.addEntryAction(entryId, { title: "Show changes", action: SHOW, args });
    this.chat.addEntryAction(entryId, { title: "Undo this ask", action: UNDO, args });
  }

  /**
   * A conversation reopened from the history: "Show changes" and "Undo this ask" under each ask
   * that changed files, and under one that never finished (its server died mid-ask: state
   * "interrupted"), matched to the entries by their prompts, in order.
   */
  async reopened(): Promise<void> {
    const sessionId = this.chat.session.sessionId;
    const client = this.host.client();
    if (!sessionId || !client) return;
    let result: CheckpointsResult;
    try {
      result = await client.sendRequest<CheckpointsResult>(Methods.checkpoints, { sessionId });
    } catch {
      return;
    }
    const conversation = this.chat.session.conversation;
    if (conversation.sessionId !== sessionId) return;
    const oneLine = (text: string) => text.replace(/\s+/g, " ").trim();
    let next = 0;
    for (const checkpoint of result.checkpoints) {
      const start = oneLine(checkpoint.prompt).replace(/…$/, "");
      const index = conversation.entries.findIndex((e, i) => i >= next && !e.undone && oneLine(e.prompt).startsWith(start));
      if (index < 0) continue;
      next = index + 1;
      const entry = conversation.entries[index];
      const interrupted = checkpoint.state === "interrupted";
      if (!entry || (checkpoint.files.length === 0 && !interrupted)) continue;
      if (entry.actions.some((b) => b.action === UNDO)) continue;
      const args = { sessionId, checkpointId: checkpoint.id };
      const changed = checkpoint.files.length ? changesText(checkpoint.files.length) : "";
      this.chat.setEntryChanges(entry.id, interrupted ? ["Interrupted", changed].filter((t) => t).join(" · ") : changed);
      this.chat.addEntryAction(entry.id, { title: "Show changes", action: SHOW, args });
      this.chat.addEntryAction(entry.id, { title: "Undo this ask", action: UNDO, args });
    }
  }

  /** How many files the ask changed, from agent/checkpoints (undefined: not known). */
  private async changedFiles(sessionId: string, checkpointId: string): Promise<number | undefined> {
    const client = this.host.client();
    if (!client) return undefined;
    try {
      const result = await client.sendRequest<CheckpointsResult>(Methods.checkpoints, { sessionId });
      return result.checkpoints.find((c) => c.id === checkpointId)?.files.length;
    } catch {
      return undefined;
    }
  }

  private withIds(args: Record<string, string>, run: (sessionId: string, checkpointId: string) => Promise<unknown>): unknown {
    const { sessionId, checkpointId } = args;
    return sessionId && checkpointId ? run(sessionId, checkpointId) : undefined;
  }

  /** The entry of the chat whose buttons act on this checkpoint. */
  private entryIndex(sessionId: string, checkpointId: string): number {
    const conversation = this.chat.session.conversation;
    if (conversation.sessionId !== sessionId) return -1;
    return conversation.entries.findIndex((entry) => entry.actions.some((b) => b.args?.["checkpointId"] === checkpointId));
  }

  /** The ask's number as the chat shows it (its entry's place, undone ones not counted). */
  private shownNumber(sessionId: string, checkpointId: string): string {
    const index = this.entryIndex(sessionId, checkpointId);
    if (index < 0) return checkpointId;
    return String(this.chat.session.conversation.entries.slice(0, index + 1).filter((e) => !e.undone).length);
  }

  /**
   * After an undo the server's conversation ends before that ask. The view keeps the undone
   * asks, struck through and marked "Undone" (their text stays readable), without their buttons.
   */
  private markUndone(sessionId: string, checkpointId: string, notice: string): void {
    const conversation = this.chat.session.conversation;
    const index = this.entryIndex(sessionId, checkpointId);
    if (conversation.sessionId !== sessionId) return;
    const entries = conversation.entries.map((entry, i) => {
      if (index < 0 || i < index || entry.undone) return entry;
      const { changes: _changes, ...rest } = entry;
      return { ...rest, undone: true, actions: entry.actions.filter((b) => b.action !== SHOW && b.action !== UNDO) };
    });
    this.chat.session.replace({ ...conversation, entries, notice, noticeTone: "info" });
  }

  /** Close the diff views of the undone asks' changes: what they show is gone. */
  private async closeChangeViews(shownNumbers: readonly string[]): Promise<void> {
    const titles = shownNumbers.map((n) => `Changes of ask ${n}`);
    const stale = vscode.window.tabGroups.all
      .flatMap((group) => group.tabs)
      .filter((tab) => titles.some((t) => tab.label === t || tab.label.startsWith(`${t}:`) || tab.label.startsWith(`${t} (`)));
    if (stale.length) await vscode.window.tabGroups.close(stale);
  }

  /** Open VS Code's diff view for each file the ask changed. */
  async showChanges(sessionId: string, checkpointId: string): Promise<void> {
    const client = this.host.client();
    if (!client) return;
    let result: DiffResult;
    try {
      result = await client.sendRequest<DiffResult>(Methods.diff, {
        sessionId,
        checkpointId,
        includeContent: true,
      });
    } catch (error) {
      void vscode.window.showErrorMessage(`Agent: could not get the changes: ${message(error)}`);
      return;
    }
    if (!result.files.length) {
      void vscode.window.showInformationMessage(`Agent: ask ${this.shownNumber(sessionId, checkpointId)} changed no files.`);
      return;
    }
    const key = ++this.shown;
    this.forgetOlderThan(key - 20);
    const resources = result.files.map((file) => this.resources(file, checkpointId, key));
    const title = `Changes of ask ${this.shownNumber(sessionId, checkpointId)}`;
    const only = resources.length === 1 ? resources[0] : undefined;
    if (only) {
      const [resource, left, right] = only;
      await vscode.commands.executeCommand("vscode.diff", left, right, `${title}: ${name(resource)}`);
      return;
    }
    try {
      await vscode.commands.executeCommand("vscode.changes", title, resources);
    } catch {
      // An older VS Code without the multi-file diff editor: one diff tab per file.
      for (const [resource, left, right] of resources) {
        await vscode.commands.executeCommand("vscode.diff", left, right, `${title}: ${name(resource)}`, {
          preview: false,
        });
      }
    }
  }

  /** Undo the ask (and later ones): a dry run first, shown in a modal question. */
  async undoAsk(sessionId: string, checkpointId: string): Promise<boolean> {
    const client = this.host.client();
    if (!client) return false;
    const params = { sessionId, checkpointId };
    const shown = this.shownNumber(sessionId, checkpointId);
    try {
      const dry = await client.sendRequest<RewindResult>(Methods.rewind, { ...params, dryRun: true });
      // Which of its files the undo deletes (the agent created them) rather than puts back.
      const listed = await client.sendRequest<CheckpointsResult>(Methods.checkpoints, { sessionId }).catch(() => undefined);
      const created = createdFiles(listed?.checkpoints ?? [], checkpointId);
      const question = undoQuestion(checkpointId, dry, created, shown);
      const pick = await vscode.window.showWarningMessage(
        question.message,
        { modal: true, detail: question.detail },
        ...(question.actionable ? ["Undo"] : []),
      );
      if (pick !== "Undo") return false;
      // The asks undone, numbered as the chat shows them (their diff views close).
      const index = this.entryIndex(sessionId, checkpointId);
      const undone =
        index < 0
          ? [shown]
          : this.chat.session.conversation.entries.slice(index).filter((e) => !e.undone).map((_, i) => String(Number(shown) + i));
      const result = await client.sendRequest<RewindResult>(Methods.rewind, params);
      const outcome = undoOutcome(shown, result, created);
      this.markUndone(sessionId, checkpointId, outcome);
      await this.closeChangeViews(undone);
      void vscode.window.showInformationMessage(`Agent: ${outcome}`);
      return true;
    } catch (error) {
      void vscode.window.showErrorMessage(`Agent: could not undo ask ${shown}: ${message(error)}`);
      return false;
    }
  }

  /** Command: pick one of the conversation's asks, show its changes. */
  async pickAndShowChanges(sessionId?: unknown, checkpointId?: unknown): Promise<void> {
    const picked = await this.pick(sessionId, checkpointId, "Show the changes of which ask?");
    if (picked) await this.showChanges(picked.sessionId, picked.checkpointId);
  }

  /** Command: pick one of the conversation's asks, undo it and every later one. */
  async pickAndUndo(sessionId?: unknown, checkpointId?: unknown): Promise<void> {
    const picked = await this.pick(sessionId, checkpointId, "Undo which ask (and every later one)?");
    if (picked) await this.undoAsk(picked.sessionId, picked.checkpointId);
  }

  /**
   * `/undo` in the chat: the last ask (its "Undo this ask"), or from `checkpointId` on; a
   * conversation whose last ask shows no checkpoint picks one as Agent: Undo an Ask does.
   */
  async undoLast(checkpointId?: string): Promise<void> {
    const sessionId = this.chat.session.sessionId;
    if (!sessionId) {
      void vscode.window.showInformationMessage("Agent: no conversation yet: ask something first.");
      return;
    }
    const last = this.chat.session.conversation.entries.at(-1);
    const id = checkpointId ?? last?.actions.find((b) => b.action === UNDO)?.args?.["checkpointId"];
    if (id) await this.undoAsk(sessionId, id);
    else await this.pickAndUndo(sessionId);
  }

  private async pick(
    sessionArg: unknown,
    checkpointArg: unknown,
    placeHolder: string,
  ): Promise<{ sessionId: string; checkpointId: string } | undefined> {
    const sessionId = typeof sessionArg === "string" ? sessionArg : this.chat.session.sessionId;
    if (!sessionId) {
      void vscode.window.showInformationMessage("Agent: no conversation yet: ask something first.");
      return undefined;
    }
    if (typeof checkpointArg === "string") return { sessionId, checkpointId: checkpointArg };
    const client = this.host.client();
    if (!client) return undefined;
    let result: CheckpointsResult;
    try {
      result = await client.sendRequest<CheckpointsResult>(Methods.checkpoints, { sessionId });
    } catch (error) {
      void vscode.window.showErrorMessage(`Agent: could not list the asks: ${message(error)}`);
      return undefined;
    }
    if (!result.checkpoints.length) {
      void vscode.window.showInformationMessage("Agent: this conversation has no asks to show.");
      return undefined;
    }
    const item = await vscode.window.showQuickPick(checkpointItems(result.checkpoints), {
      title: "Agent: the conversation's asks",
      placeHolder,
      matchOnDetail: true,
    });
    return item ? { sessionId, checkpointId: item.checkpointId } : undefined;
  }

  /** [the workspace file, its text before the ask, after it] for vscode.changes. */
  private resources(file: FileDiff, checkpointId: string, key: number): [vscode.Uri, vscode.Uri, vscode.Uri] {
    const folder = this.host.folder();
    const resource = folder ? vscode.Uri.joinPath(folder, file.path) : vscode.Uri.file(file.path);
    const side = (which: "before" | "after", text: string | null | undefined): vscode.Uri => {
      const query = `${key}/${which}/ask-${checkpointId}/${file.path}`;
      this.contents.set(query, text ?? placeholder(file, which));
      // Both sides share the file's path (the diff view picks its language from the name,
      // and does not take the pair for a rename); the query tells them apart.
      return vscode.Uri.from({ scheme: SCHEME, path: `/${file.path}`, query });
    };
    return [resource, side("before", file.before), side("after", file.after)];
  }

  /** Drop the texts of diff views shown long ago (each view keeps its own copy). */
  private forgetOlderThan(key: number): void {
    for (const query of this.contents.keys()) {
      if (Number(query.split("/", 1)[0]) < key) this.contents.delete(query);
    }
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
    this.contents.clear();
  }
}

function placeholder(file: FileDiff, which: "before" | "after"): string {
  if ((file.status === "added" && which === "before") || (file.status === "deleted" && which === "after")) {
    return "";
  }
  return file.binary ? "(binary file: no text to show)" : "(too large to show)";
}

function name(uri: vscode.Uri): string {
  return uri.path.split("/").pop() ?? uri.path;
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
