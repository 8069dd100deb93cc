// The input's draft, kept by the extension (ChatStore) so it survives closing the view and a
// window reload: the page tells the extension what the input holds, a moment after typing
// stops (one message per pause, not per key), and at once when the page is about to go.

export interface DraftTimers {
  set(fn: () => void, ms: number): unknown;
  clear(handle: unknown): void;
}

const REAL_TIMERS: DraftTimers = {
  set: (fn, ms) => setTimeout(fn, ms),
  clear: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

export class DraftSync {
  private timer: unknown;
  private pending: string | undefined;

  constructor(
    private readonly post: (text: string) => void,
    private readonly delayMs = 300,
    private readonly timers: DraftTimers = REAL_TIMERS,
  ) {}

  /** The input changed (typing, recall). */
  changed(text: string): void {
    this.pending = text;
    if (this.timer !== undefined) this.timers.clear(this.timer);
    this.timer = this.timers.set(() => this.flush(), this.delayMs);
  }

  /** Say it now (sent, or the page is hidden or going away). */
  flush(): void {
    if (this.timer !== undefined) this.timers.clear(this.timer);
    this.timer = undefined;
    if (this.pending === undefined) return;
    const text = this.pending;
    this.pending = undefined;
    this.post(text);
  }
}

/** The draft the input shows when the page (re)loads: its own unsent text wins over the kept one. */
export function restoredDraft(inputText: string, kept: string): string | undefined {
  return inputText === "" && kept !== "" ? kept : undefined;
}
