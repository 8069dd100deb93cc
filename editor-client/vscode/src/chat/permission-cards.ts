// Permission requests asked on a card in the running ask's entry (src/permissions.ts decides
// what the card says): the command once, verbatim, the reason, what "always" covers, a button
// per choice. Each card's buttons carry a token of their own, so a click answers exactly that
// request, and only while it waits; once answered or withdrawn the card says what happened and
// has no buttons left.

import { randomBytes } from "node:crypto";
import * as vscode from "vscode";
import type { PermissionCard, PermissionRequest } from "../permissions";
import { answeredCard, type Button, type CardItem, type Entry } from "./model";

export interface PermissionCardsHost {
  sessionId(): string | undefined;
  runningEntry(): Entry | undefined;
  addCard(card: CardItem, entryId: string): void;
  /** Whether the chat is in sight (else a notification says a request waits). */
  visible(): boolean;
  reveal(): void;
}

const WITHDRAWN = "\0withdrawn";

export class PermissionCards {
  /** Requests waiting on a card, by their buttons' token. */
  private readonly pending = new Map<string, { buttons: PermissionCard["buttons"]; resolve: (label: string | undefined) => void }>();

  constructor(private readonly host: PermissionCardsHost) {}

  /** Ask on a card; undefined when the request is not this chat's running ask's (the modal asks then). */
  ask(request: PermissionRequest, card: PermissionCard, withdrawn: Promise<void>): Promise<string | undefined> | undefined {
    const entry = this.host.runningEntry();
    if (request.sessionId !== this.host.sessionId() || !entry || card.buttons.length === 0) return undefined;
    const id = `permission-${request.callId}`;
    const token = randomBytes(12).toString("hex");
    const answered = new Promise<string | undefined>((resolve) => this.pending.set(token, { buttons: card.buttons, resolve }));
    const code = card.code === undefined ? {} : { code: card.code };
    const buttons: Button[] = card.buttons.map((b) => ({ title: b.label, action: "answerPermission", args: { request: token, option: b.optionId } }));
    this.host.addCard({ kind: "card", id, title: `Waiting for your permission: ${card.title}`, body: card.body, ...code, tone: "warning", buttons }, entry.id);
    if (!this.host.visible()) {
      // Not modal: the answer is given on the card, where the whole command is in sight.
      void vscode.window.showWarningMessage(`Agent asks for your permission: ${card.title}`, "Show Chat").then((pick) => {
        if (pick) this.host.reveal();
      });
    }
    void Promise.race([answered, withdrawn.then(() => WITHDRAWN)]).then((label) => {
      this.pending.get(token)?.resolve(undefined);
      this.pending.delete(token);
      // Answered, the card shrinks to one line (the call's row below shows what ran).
      this.host.addCard(answeredCard(id, card.title, label === WITHDRAWN ? undefined : label), entry.id);
    });
    return answered;
  }

  /** A click on a card's button: the answer, if that request still waits and offered that choice. */
  answer(args: Record<string, string>): void {
    const pending = this.pending.get(args.request ?? "");
    const chosen = pending?.buttons.find((b) => b.optionId === args.option);
    if (!pending || !chosen) return; // answered already, withdrawn, or not a choice it offered
    this.pending.delete(args.request ?? "");
    pending.resolve(chosen.label);
  }
}
