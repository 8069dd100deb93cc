// A server the tests answer by hand (no vscode import): each request waits until the test
// resolves or rejects it; an abort rejects it as the real client does (-32800).
import type { ChatSink, Connection } from "../src/chat/session";
import type { Change } from "../src/chat/model";

export interface Call {
  method: string;
  params: Record<string, unknown>;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

export class FakeServer implements Connection {
  calls: Call[] = [];
  constructor(private readonly methods: readonly string[]) {}
  supports(method: string): boolean {
    return this.methods.includes(method);
  }
  request<R>(method: string, params: unknown, signal?: AbortSignal): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      signal?.addEventListener("abort", () => reject({ code: -32800, message: "cancelled" }));
      this.calls.push({ method, params: params as Record<string, unknown>, resolve: resolve as (v: unknown) => void, reject });
    });
  }
  /** The next request of `method`, waiting (a few event-loop turns) for it to be made. */
  async next(method: string): Promise<Call> {
    for (let i = 0; i < 100; i++) {
      const found = this.calls.find((c) => c.method === method);
      if (found) {
        this.calls.splice(this.calls.indexOf(found), 1);
        return found;
      }
      await new Promise((r) => setImmediate(r));
    }
    throw new Error(`no ${method} request`);
  }
}

export class RecordingSink implements ChatSink {
  changes: Change[] = [];
  resets = 0;
  reset(): void {
    this.resets++;
  }
  changed(changes: Change[]): void {
    this.changes.push(...changes);
  }
  busy(): void {}
}
