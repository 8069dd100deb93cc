// What the client keeps between window reloads (workspaceState): the conversation on screen,
// the shown copies of recent ones (footers, errors: what the server's history does not hold),
// the prompts for Up/Down recall and the input's draft. The server keeps what is needed to
// continue a conversation; this is only what the view shows.

import { type Conversation, compactConversation } from "./model";

/** The subset of vscode.Memento this module needs. */
export interface Memento {
  get<T>(key: string): T | undefined;
  update(key: string, value: unknown): Thenable<void> | Promise<void>;
}

const CURRENT = "agentLsp.chat.current";
const SHOWN = "agentLsp.chat.shown";
const PROMPTS = "agentLsp.chat.prompts";
const DRAFT = "agentLsp.chat.draft";

export class ChatStore {
  constructor(
    private readonly memento: Memento,
    private readonly maxConversations = 20,
    private readonly maxPrompts = 100,
  ) {}

  /** The conversation that was on screen (its session id), to show again after a reload. */
  get currentSessionId(): string | undefined {
    return this.memento.get<string>(CURRENT);
  }

  setCurrent(sessionId: string | undefined): void {
    void this.memento.update(CURRENT, sessionId);
  }

  private shown(): Conversation[] {
    return this.memento.get<Conversation[]>(SHOWN) ?? [];
  }

  /** Keep the shown copy of a conversation that has a session (newest first, capped). */
  save(conversation: Conversation): void {
    if (!conversation.sessionId || conversation.entries.length === 0) return;
    const rest = this.shown().filter((c) => c.sessionId !== conversation.sessionId);
    const kept = [compactConversation(conversation), ...rest].slice(0, this.maxConversations);
    void this.memento.update(SHOWN, kept);
  }

  load(sessionId: string): Conversation | undefined {
    return this.shown().find((c) => c.sessionId === sessionId);
  }

  forget(sessionId: string): void {
    void this.memento.update(
      SHOWN,
      this.shown().filter((c) => c.sessionId !== sessionId),
    );
  }

  get prompts(): string[] {
    return this.memento.get<string[]>(PROMPTS) ?? [];
  }

  addPrompt(prompt: string): void {
    const prompts = this.prompts;
    if (prompts[prompts.length - 1] === prompt) return;
    void this.memento.update(PROMPTS, [...prompts, prompt].slice(-this.maxPrompts));
  }

  get draft(): string {
    return this.memento.get<string>(DRAFT) ?? "";
  }

  setDraft(text: string): void {
    void this.memento.update(DRAFT, text);
  }
}
