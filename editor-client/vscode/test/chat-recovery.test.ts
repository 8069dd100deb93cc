// What the user does not lose: a draft survives closing and reopening the view, Retry sends
// the same prompt with the same editor context (also from the toast when the view is hidden),
// and the Stop keybinding's command cancels the running ask.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { describeAskError, toastActions } from "../src/errors";
import type { Entry } from "../src/chat/model";
import { ChatSession, retryContext } from "../src/chat/session";
import { ChatStore, type Memento } from "../src/chat/store";
import { type AskContext, Methods } from "../src/protocol";
import { DraftSync, restoredDraft } from "../src/webview/draft";
import { FakeServer, RecordingSink } from "./fake-server";

class MemoryMemento implements Memento {
  values = new Map<string, unknown>();
  get<T>(key: string): T | undefined {
    return this.values.get(key) as T | undefined;
  }
  update(key: string, value: unknown): Promise<void> {
    this.values.set(key, JSON.parse(JSON.stringify(value ?? null)) ?? undefined);
    return Promise.resolve();
  }
}

/** Timers the test runs by hand. */
class ManualTimers {
  private next = 0;
  readonly due = new Map<number, () => void>();
  set(fn: () => void): unknown {
    this.next += 1;
    this.due.set(this.next, fn);
    return this.next;
  }
  clear(handle: unknown): void {
    this.due.delete(handle as number);
  }
  runAll(): void {
    for (const [id, fn] of [...this.due]) {
      this.due.delete(id);
      fn();
    }
  }
}

describe("a draft", () => {
  it("survives closing and reopening the view", () => {
    // The extension keeps what the page says (controller: "draft" -> ChatStore.setDraft).
    const memento = new MemoryMemento();
    const store = new ChatStore(memento);
    const timers = new ManualTimers();
    const posted: string[] = [];
    const page = new DraftSync((text) => {
      posted.push(text);
      store.setDraft(text);
    }, 300, timers);
    page.changed("Refactor the par");
    page.changed("Refactor the parser so that");
    assert.deepEqual(posted, [], "nothing per key stroke");
    timers.runAll();
    assert.deepEqual(posted, ["Refactor the parser so that"], "one message once typing paused");

    // Closed right after typing more: the page says it at once as it goes.
    page.changed("Refactor the parser so that errors name the line");
    page.flush();
    assert.equal(timers.due.size, 0);

    // The view is opened again (a new page, the same workspace state): its empty input gets it.
    const reopened = new ChatStore(memento);
    assert.equal(restoredDraft("", reopened.draft), "Refactor the parser so that errors name the line");
    // A page that still has its own text (the view was only hidden) keeps it.
    assert.equal(restoredDraft("typed meanwhile", reopened.draft), undefined);
  });

  it("is gone once sent", () => {
    const store = new ChatStore(new MemoryMemento());
    const page = new DraftSync((text) => store.setDraft(text), 300, new ManualTimers());
    page.changed("Explain this");
    page.flush();
    page.changed(""); // submit() clears the input and says so at once
    page.flush();
    assert.equal(restoredDraft("", store.draft), undefined);
  });
});

describe("Retry", () => {
  const selection: AskContext = {
    activeDocument: { uri: "file:///w/src/app.py", selection: { start: { line: 2, character: 0 }, end: { line: 8, character: 0 } } },
  };

  it("sends the same prompt again with the context the ask had", async () => {
    const server = new FakeServer([Methods.ask, Methods.newSession]);
    const session = new ChatSession(server, new RecordingSink(), { now: () => 1000 });
    const first = session.send("Why does this fail?", { folder: "file:///w", context: selection, attached: "selection: src/app.py, lines 3-8" });
    (await server.next(Methods.newSession)).resolve({ sessionId: "s1", workspaceFolder: "file:///w" });
    const ask = await server.next(Methods.ask);
    ask.reject({ code: -32002, message: "provider error 503", data: { kind: "server", status: 503, attempts: 3 } });
    const failed = await first;
    assert.equal(failed.kind, "failed");
    const entry = session.conversation.entries[0] as Entry;
    assert.equal(entry.error?.buttons[0]?.action, "retry", "Retry is offered first");

    // The Retry button (controller: send(entry.prompt, [], entry)) sends what retryContext gives.
    const again = retryContext(entry);
    const retried = session.send(entry.prompt, { context: again.context, attached: again.label });
    const second = await server.next(Methods.ask);
    assert.equal(second.params.prompt, "Why does this fail?");
    assert.deepEqual(second.params.context, ask.params.context, "the same selection, not the editor's of now");
    assert.deepEqual(second.params.context, selection);
    assert.equal(session.conversation.entries[1]?.attached, "selection: src/app.py, lines 3-8");
    second.resolve({ answer: "Because …", sessionId: "s1", stopReason: "end_turn", toolCalls: [], turns: 1 });
    assert.equal((await retried).kind, "answered");
  });

  it("an ask without context is retried without one", () => {
    const entry: Entry = { id: "e1", prompt: "hi", state: "error", items: [], actions: [] };
    assert.deepEqual(retryContext(entry), {});
  });

  it("stays offered in the toast shown while the view is hidden; Stop never is", () => {
    const report = describeAskError({ code: -32002, message: "provider error 503", data: { kind: "server", status: 503, attempts: 3 } });
    assert.ok(report.actions.some((a) => a.action === "retry"));
    assert.deepEqual(toastActions(report, true).map((a) => a.title), report.actions.filter((a) => a.action !== "stop").map((a) => a.title));
    assert.equal(toastActions(report, true)[0]?.action, "retry");
    assert.ok(!toastActions(report, false).some((a) => a.action === "retry"), "nothing to retry without its entry");
    assert.ok(!toastActions({ ...report, actions: [...report.actions, { title: "Stop", action: "stop" }] }, true).some((a) => a.action === "stop"));
  });
});

describe("the Stop keybinding", () => {
  const manifest = JSON.parse(readFileSync(join(__dirname, "..", "..", "package.json"), "utf8")) as {
    contributes: { keybindings: { command: string; key: string; mac?: string; when?: string }[] };
  };

  it("is bound to Agent: Stop the Running Ask while an ask runs", () => {
    const binding = manifest.contributes.keybindings.find((k) => k.command === "agentLsp.cancel");
    assert.equal(binding?.key, "ctrl+alt+escape");
    assert.equal(binding?.when, "agentLsp.busy");
  });

  it("whose command cancels the running ask (agentLsp.cancel -> ChatController.stop -> ChatSession.stop)", async () => {
    const server = new FakeServer([Methods.ask, Methods.newSession]);
    const busy: boolean[] = [];
    const sink = Object.assign(new RecordingSink(), { busy: (b: boolean) => void busy.push(b) });
    const session = new ChatSession(server, sink, { now: () => 1000 });
    assert.equal(session.stop(), false, "nothing to stop: the command says so");
    const sent = session.send("run the tests", { folder: "file:///w" });
    (await server.next(Methods.newSession)).resolve({ sessionId: "s1", workspaceFolder: "file:///w" });
    await server.next(Methods.ask);
    assert.deepEqual(busy, [true], "agentLsp.busy is set: the keybinding applies");
    assert.equal(session.stop(), true);
    const outcome = await sent;
    assert.equal(outcome.kind, "failed");
    assert.equal(outcome.kind === "failed" && outcome.report.cancelled, true, "the request was cancelled ($/cancelRequest)");
    assert.equal(session.conversation.entries[0]?.state, "cancelled");
    assert.deepEqual(busy, [true, false], "agentLsp.busy cleared: the keybinding no longer applies");
  });
});
