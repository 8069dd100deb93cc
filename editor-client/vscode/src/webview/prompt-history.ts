// Up/Down recall of earlier prompts in the chat input, as in a shell: Up walks back from the
// newest, Down walks forward and, past the newest, gives back what the user was typing.

export class PromptHistory {
  private prompts: string[];
  /** Position in `prompts` while recalling; `prompts.length` means "the draft". */
  private index: number;
  private draft = "";

  constructor(prompts: readonly string[] = [], private readonly max = 100) {
    this.prompts = prompts.slice(-max);
    this.index = this.prompts.length;
  }

  get all(): readonly string[] {
    return this.prompts;
  }

  replace(prompts: readonly string[]): void {
    this.prompts = prompts.slice(-this.max);
    this.index = this.prompts.length;
  }

  /** A prompt was sent: newest last, a repeat of the newest not stored twice. */
  add(prompt: string): void {
    if (prompt.trim() === "") return;
    if (this.prompts[this.prompts.length - 1] !== prompt) this.prompts.push(prompt);
    if (this.prompts.length > this.max) this.prompts.shift();
    this.index = this.prompts.length;
    this.draft = "";
  }

  /** The text to show after Up, or undefined when there is nothing older. */
  up(current: string): string | undefined {
    if (this.index === 0 || this.prompts.length === 0) return undefined;
    if (this.index === this.prompts.length) this.draft = current;
    this.index -= 1;
    return this.prompts[this.index];
  }

  /** The text to show after Down, or undefined when not recalling. */
  down(): string | undefined {
    if (this.index >= this.prompts.length) return undefined;
    this.index += 1;
    return this.index === this.prompts.length ? this.draft : this.prompts[this.index];
  }

  /** The user typed: recall restarts from the newest next time. */
  edited(): void {
    this.index = this.prompts.length;
  }
}
