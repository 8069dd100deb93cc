import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  answeredCard,
  applyActivity,
  applyCard,
  applyDelta,
  applyProgress,
  applyResult,
  applyTurnTexts,
  type Change,
  type Conversation,
  compactConversation,
  entriesFromHistory,
  lastAskMessages,
  missingEntries,
  newEntry,
  phaseText,
} from "../src/chat/model";
import { renderNoteItem } from "../src/chat/render";
import { ChatSession, type ChatSink, type Connection, deleteQuestion } from "../src/chat/session";
import { ChatStore, type Memento } from "../src/chat/store";
import { type AskResult, Methods } from "../src/protocol";

interface Call {
  method: string;
  params: Record<string, unknown>;
  resolve(value: unknown): void;
  reject(error: unknown): void;
  signal?: AbortSignal | undefined;
}

/** A server the test answers by hand: each request waits until the test resolves it. */
class FakeServer implements Connection {
  calls: Call[] = [];
  constructor(private readonly methods = [Methods.ask, Methods.newSession, Methods.sessionHistory, Methods.sessions]) {}
  supports(method: string): boolean {
    return (this.methods as string[]).includes(method);
  }
  request<R>(method: string, params: unknown, signal?: AbortSignal): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      const call: Call = { method, params: params as Record<string, unknown>, resolve: resolve as (v: unknown) => void, reject, signal };
      signal?.addEventListener("abort", () => reject({ code: -32800, message: "cancelled" }));
      this.calls.push(call);
    });
  }
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

class RecordingSink implements ChatSink {
  changes: Change[] = [];
  resets = 0;
  busyStates: boolean[] = [];
  reset(): void {
    this.resets++;
  }
  changed(changes: Change[]): void {
    this.changes.push(...changes);
  }
  busy(busy: boolean): void {
    this.busyStates.push(busy);
  }
}

function result(overrides: Partial<AskResult> = {}): AskResult {
  return { answer: "done", sessionId: "s1", stopReason: "end_turn", toolCalls: [], turns: 1, ...overrides };
}

function setup(methods?: string[]) {
  const server = new FakeServer(methods as never);
  const sink = new RecordingSink();
  const session = new ChatSession(server, sink, { now: () => 1000 });
  return { server, sink, session };
}

const FOLDER_A = "file:///work/a";
const FOLDER_B = "file:///work/b";

describe("a conversation", () => {
  it("gets its session and folder from agent/newSession before the first ask", async () => {
    const { server, session } = setup();
    const sent = session.send("first", { folder: FOLDER_A });
    const created = await server.next(Methods.newSession);
    assert.deepEqual(created.params, { workspaceFolder: FOLDER_A });
    created.resolve({ sessionId: "s1", workspaceFolder: FOLDER_A });
    const ask = await server.next(Methods.ask);
    assert.deepEqual(ask.params, { prompt: "first", sessionId: "s1", workspaceFolder: FOLDER_A });
    ask.resolve(result());
    assert.equal((await sent).kind, "answered");
  });

  it("pins the folder: a follow-up names the session's folder whatever editor is focused", async () => {
    const { server, session } = setup();
    const first = session.send("first", { folder: FOLDER_A });
    (await server.next(Methods.newSession)).resolve({ sessionId: "s1", workspaceFolder: FOLDER_A });
    (await server.next(Methods.ask)).resolve(result());
    await first;
    // The user focused a file of the other root of a multi-root window.
    const followUp = session.send("second", { folder: FOLDER_B });
    const ask = await server.next(Methods.ask);
    assert.equal(ask.params.workspaceFolder, FOLDER_A);
    assert.equal(ask.params.sessionId, "s1");
    ask.resolve(result());
    await followUp;
  });

  it("sends the tools the user turned off for this conversation with each ask; a new conversation has them all", async () => {
    const { server, session } = setup();
    session.conversation.disabledTools = ["mcp__time__*", "bash"];
    const first = session.send("first", { folder: FOLDER_A });
    (await server.next(Methods.newSession)).resolve({ sessionId: "s1", workspaceFolder: FOLDER_A });
    const ask = await server.next(Methods.ask);
    assert.deepEqual(ask.params.disabledTools, ["mcp__time__*", "bash"]);
    ask.resolve(result());
    await first;
    session.replace({ entries: [] });
    const fresh = session.send("second", { folder: FOLDER_A });
    (await server.next(Methods.newSession)).resolve({ sessionId: "s2", workspaceFolder: FOLDER_A });
    const next = await server.next(Methods.ask);
    assert.equal("disabledTools" in next.params, false);
    next.resolve(result({ sessionId: "s2" }));
    await fresh;
  });

  it("works with a server without agent/newSession: the first result names the session", async () => {
    const { server, session } = setup([Methods.ask]);
    const first = session.send("first", { folder: FOLDER_A });
    const ask = await server.next(Methods.ask);
    assert.deepEqual(ask.params, { prompt: "first", workspaceFolder: FOLDER_A });
    ask.resolve(result({ sessionId: "s9" }));
    await first;
    const second = session.send("second", { folder: FOLDER_B });
    const follow = await server.next(Methods.ask);
    assert.deepEqual(follow.params, { prompt: "second", sessionId: "s9", workspaceFolder: FOLDER_A });
    follow.resolve(result({ sessionId: "s9" }));
    await second;
  });

  it("runs one ask at a time: a second send while one runs is refused", async () => {
    const { server, session } = setup();
    const first = session.send("first");
    assert.deepEqual(await session.send("second"), { kind: "busy" });
    assert.equal(session.conversation.entries.length, 1);
    (await server.next(Methods.newSession)).resolve({ sessionId: "s1", workspaceFolder: FOLDER_A });
    (await server.next(Methods.ask)).resolve(result());
    await first;
    assert.equal(server.calls.filter((c) => c.method === Methods.ask).length, 0);
  });

  it("New Conversation during an ask: the old ask is cancelled and its late result ignored", async () => {
    const { server, sink, session } = setup();
    const old = session.send("old", { folder: FOLDER_A });
    (await server.next(Methods.newSession)).resolve({ sessionId: "s1", workspaceFolder: FOLDER_A });
    const ask = await server.next(Methods.ask);
    session.replace({ entries: [] });
    assert.equal(ask.signal?.aborted, true, "the old ask was cancelled");
    ask.resolve(result({ answer: "late" })); // the server answered before it saw the cancel
    assert.deepEqual(await old, { kind: "superseded" });
    assert.deepEqual(session.conversation, { entries: [] });
    assert.equal(session.busy, false);
    const before = sink.changes.length;
    session.onActivity({ sessionId: "s1", callId: "c9", name: "bash", arguments: "{}", status: "started" });
    assert.equal(sink.changes.length, before, "the old session's activity is not shown");
    // The new conversation starts its own session.
    const fresh = session.send("new", { folder: FOLDER_B });
    assert.deepEqual((await server.next(Methods.newSession)).params, { workspaceFolder: FOLDER_B });
    session.stop();
    await fresh;
  });

  it("shows only its own session's activity and progress", async () => {
    const { server, session } = setup();
    const sent = session.send("first");
    (await server.next(Methods.newSession)).resolve({ sessionId: "s1", workspaceFolder: FOLDER_A });
    const ask = await server.next(Methods.ask);
    session.onActivity({ sessionId: "other", callId: "x", name: "bash", arguments: "{}", status: "started" });
    session.onActivity({ sessionId: "s1", callId: "c1", name: "read_file", arguments: '{"path": "a"}', status: "started", turn: 1 });
    session.onProgress({ sessionId: "other", turn: 7, phase: "tools", message: "turn 7" });
    session.onProgress({ sessionId: "s1", turn: 2, phase: "model", message: "turn 2: waiting for the model (do not parse me)" });
    const entry = session.conversation.entries[0];
    assert.deepEqual(entry?.items.map((i) => i.id), ["c1"]);
    assert.equal(entry?.status, "turn 2: waiting for the model");
    ask.resolve(result({ toolCalls: [{ id: "c1", name: "read_file", arguments: '{"path": "a"}', ok: true, output: "x" }] }));
    await sent;
  });

  it("a cancelled ask marks running calls failed and the entry cancelled", async () => {
    const { server, session } = setup();
    const sent = session.send("long");
    (await server.next(Methods.newSession)).resolve({ sessionId: "s1", workspaceFolder: FOLDER_A });
    await server.next(Methods.ask);
    session.onActivity({ sessionId: "s1", callId: "c1", name: "bash", arguments: '{"command": "sleep 99"}', status: "started" });
    assert.equal(session.stop(), true);
    const outcome = await sent;
    assert.equal(outcome.kind, "failed");
    const entry = session.conversation.entries[0];
    assert.equal(entry?.state, "cancelled");
    assert.equal(entry?.items[0]?.kind === "tool" && entry.items[0].state, "failed");
  });

  it("an error gets the buttons that fix it, Retry first for a timeout", async () => {
    const { server, session } = setup();
    const sent = session.send("q");
    (await server.next(Methods.newSession)).resolve({ sessionId: "s1", workspaceFolder: FOLDER_A });
    (await server.next(Methods.ask)).reject({ code: -32002, message: "timed out", data: { kind: "timeout", attempts: 3, elapsedMs: 9000 } });
    await sent;
    const entry = session.conversation.entries[0];
    assert.equal(entry?.state, "error");
    assert.equal(entry?.error?.message, "timed out (3 attempts over 9.00s)");
    assert.deepEqual(entry?.error?.buttons.map((b) => [b.action, b.args?.entryId]), [["retry", entry?.id], ["checkConnection", entry?.id], ["showLog", entry?.id]]);
  });

  it("puts the text of turns that also called tools before their tool rows", async () => {
    const { server, session } = setup();
    const sent = session.send("fix it");
    (await server.next(Methods.newSession)).resolve({ sessionId: "s1", workspaceFolder: FOLDER_A });
    const ask = await server.next(Methods.ask);
    session.onActivity({ sessionId: "s1", callId: "c1", name: "read_file", arguments: "{}", status: "started", turn: 1 });
    session.onActivity({ sessionId: "s1", callId: "c1", name: "read_file", arguments: "{}", status: "completed", turn: 1, output: "x" });
    ask.resolve(result({ answer: "Fixed.", toolCalls: [{ id: "c1", name: "read_file", arguments: "{}", ok: true }] }));
    await sent;
    const history = await server.next(Methods.sessionHistory);
    history.resolve({
      sessionId: "s1",
      workspaceFolder: FOLDER_A,
      entries: [
        { role: "user", content: "fix it" },
        { role: "assistant", content: "Let me read it first.", toolCalls: [{ id: "c1", name: "read_file", arguments: "{}", ok: true, output: "x" }] },
        { role: "assistant", content: "Fixed.", toolCalls: [] },
      ],
    });
    for (let i = 0; i < 20 && session.conversation.entries[0]?.items.length !== 3; i++) await new Promise((r) => setImmediate(r));
    const items = session.conversation.entries[0]?.items ?? [];
    assert.deepEqual(items.map((i) => (i.kind === "text" ? i.text : i.id)), ["Let me read it first.", "c1", "Fixed."]);
  });
});

describe("deleting a conversation (Agent: Delete Conversation…)", () => {
  it("sends agent/endSession for the one picked; the one on screen deleted, a new one is shown", async () => {
    const { server, sink, session } = setup();
    const first = session.send("first", { folder: FOLDER_A });
    (await server.next(Methods.newSession)).resolve({ sessionId: "s1", workspaceFolder: FOLDER_A });
    (await server.next(Methods.ask)).resolve(result());
    await first;
    // Another saved conversation: the one on screen stays.
    const other = session.deleteSession("s0");
    const ended = await server.next(Methods.endSession);
    assert.deepEqual(ended.params, { sessionId: "s0" });
    ended.resolve(null);
    assert.deepEqual(await other, { kind: "deleted", current: false });
    assert.equal(session.sessionId, "s1");
    assert.equal(session.conversation.entries.length, 1);
    // The one on screen: the view starts over (nothing of it stays to be asked in).
    const resets = sink.resets;
    const shown = session.deleteSession("s1");
    (await server.next(Methods.endSession)).resolve(null);
    assert.deepEqual(await shown, { kind: "deleted", current: true });
    assert.equal(session.sessionId, undefined);
    assert.equal(session.conversation.entries.length, 0);
    assert.equal(sink.resets, resets + 1);
  });

  it("does not delete the conversation an ask runs in, and a refusal keeps it shown", async () => {
    const { server, session } = setup();
    const running = session.send("first", { folder: FOLDER_A });
    (await server.next(Methods.newSession)).resolve({ sessionId: "s1", workspaceFolder: FOLDER_A });
    const ask = await server.next(Methods.ask);
    assert.deepEqual(await session.deleteSession("s1"), { kind: "busy" });
    assert.equal(server.calls.filter((c) => c.method === Methods.endSession).length, 0);
    ask.resolve(result());
    await running;
    const refused = session.deleteSession("s1");
    (await server.next(Methods.endSession)).reject({ code: -32603, message: "disk full" });
    await assert.rejects(refused);
    assert.equal(session.sessionId, "s1");
  });

  it("asks in a modal that names the conversation and says what goes", () => {
    const question = deleteQuestion("  fix the \u001b[2J parser ");
    assert.equal(question.message, 'Delete the conversation "fix the \\e[2J parser" for good?');
    assert.match(question.detail, /checkpoints are deleted.*can no longer be undone\. Files it changed stay as they are\./);
    assert.equal(deleteQuestion(undefined).message, "Delete the conversation (untitled) for good?");
  });
});

describe("the model's pieces", () => {
  it("progress text comes from the structured phase", () => {
    assert.equal(phaseText({ phase: "tools", turn: 3 }), "turn 3: running tools");
    assert.equal(phaseText({ phase: "permission", turn: 1 }), "turn 1: waiting for your permission");
    assert.equal(phaseText({ phase: "new-phase", turn: 0 }), "working");
    // A phase this client does not know shows the server's message (escaped).
    const starting = { phase: "starting", turn: 0, message: "MCP servers still starting: db\u001b[2J" };
    assert.equal(phaseText(starting), "MCP servers still starting: db\\e[2J");
  });

  it("a running call's progress shows on its row, in the server's words", () => {
    const entry = newEntry("p");
    applyActivity(entry, { sessionId: "s", callId: "c", name: "mcp__idx__reindex", arguments: "{}", status: "started" });
    const message = "turn 1: mcp__idx__reindex 3/10 src/";
    const text = "mcp__idx__reindex 3/10 src/";
    const changes = applyProgress(entry, { sessionId: "s", turn: 1, phase: "tools", message, text, callId: "c", progress: 3, total: 10 });
    const item = entry.items[0];
    assert.ok(item?.kind === "tool");
    assert.equal(item.progress, text);
    assert.deepEqual(changes.map((c) => c.part), ["item", "tail"]);
    const done = { title: "mcp__idx__reindex", durationText: "5 ms; 0.7 s waiting for permission", outputHead: "ok" };
    applyActivity(entry, { sessionId: "s", callId: "c", name: "mcp__idx__reindex", arguments: "{}", status: "completed", ...done });
    assert.deepEqual([item.title, item.durationText, item.outputHead], [done.title, done.durationText, done.outputHead]);
    applyProgress(entry, { sessionId: "s", turn: 1, phase: "tools", message, text: "mcp__idx__reindex 4/10", callId: "c", progress: 4, total: 10 });
    assert.equal(item.progress, text); // a finished call takes no more
  });

  it("the MCP servers an ask goes without stay in its entry; the wait for them is status only", () => {
    const entry = newEntry("p");
    const waiting = "starting MCP servers (waiting up to 10 s): time, slow";
    const first = applyProgress(entry, { sessionId: "s", turn: 0, phase: "starting", message: waiting, servers: ["time", "slow"] });
    assert.deepEqual(first.map((c) => c.part), ["tail"]);
    assert.equal(entry.status, waiting);
    assert.equal(entry.items.length, 0);
    const missing = "this ask goes without the tools of MCP servers not ready: slow (still starting after 10 s)\u001b[2J";
    const second = applyProgress(entry, { sessionId: "s", turn: 0, phase: "starting", message: missing, servers: ["slow"] });
    assert.deepEqual(second.map((c) => c.part), ["item", "tail"]);
    const note = entry.items[0];
    assert.ok(note?.kind === "note");
    assert.equal(note.text, "this ask goes without the tools of MCP servers not ready: slow (still starting after 10 s)\\e[2J");
    // The model's progress that follows replaces the status line, not the note.
    applyProgress(entry, { sessionId: "s", turn: 1, phase: "model", message: "turn 1: waiting for the model" });
    assert.deepEqual(entry.items.map((i) => i.kind), ["note"]);
    assert.match(renderNoteItem(entry, note), /⚠ this ask goes without the tools of MCP servers not ready: slow/);
  });

  it("a result adds calls the client missed and the answer once", () => {
    const entry = newEntry("p");
    applyActivity(entry, { sessionId: "s", callId: "a", name: "glob", arguments: "{}", status: "started" });
    applyResult(entry, result({ answer: "A", toolCalls: [
      { id: "a", name: "glob", arguments: "{}", ok: true, output: "1" },
      { id: "b", name: "bash", arguments: "{}", ok: false, output: "Error: x", title: "bash {}", subject: "{}", durationText: "3 ms", outputHead: "Error: x" },
    ] }), 50, "gpt");
    assert.deepEqual(entry.items.map((i) => `${i.kind}:${i.kind === "tool" ? i.state : i.kind === "text" ? i.text : ""}`), ["tool:ok", "tool:failed", "text:A"]);
    // The row added from the result carries the server's words, as live activity does.
    const added = entry.items[1];
    assert.ok(added?.kind === "tool");
    assert.deepEqual([added.title, added.subject, added.durationText, added.outputHead], ["bash {}", "{}", "3 ms", "Error: x"]);
    assert.deepEqual(entry.footer, { elapsedMs: 50, model: "gpt", turns: 1 });
  });

  it("an answer that streamed already is not added twice", () => {
    const entry = newEntry("p");
    entry.items.push({ kind: "text", id: "t", text: "Hello", channel: "answer", turn: 1 });
    applyResult(entry, result({ answer: "Hello" }), 1);
    assert.equal(entry.items.length, 1);
  });

  it("rebuilds a reopened conversation from the server's history", () => {
    const entries = entriesFromHistory([
      { role: "user", content: "one" },
      {
        role: "assistant",
        content: "Looking.",
        toolCalls: [{ id: "c1", name: "bash", arguments: '{"command":"ls"}', ok: false, output: "Error: exit 1", title: "bash ls", subject: "ls", outputHead: "Error: exit 1" }],
      },
      { role: "assistant", content: "Answer one." },
      { role: "user", content: "two" },
      { role: "assistant", content: "Answer two." },
    ]);
    assert.deepEqual(entries.map((e) => e.prompt), ["one", "two"]);
    assert.deepEqual(entries[0]?.items.map((i) => (i.kind === "tool" ? `${i.name}:${i.state}` : i.kind === "text" ? i.text : "")), ["Looking.", "bash:failed", "Answer one."]);
    assert.equal(entries[1]?.state, "done");
    const call = entries[0]?.items[1];
    assert.ok(call?.kind === "tool");
    assert.deepEqual([call.title, call.subject, call.outputHead], ["bash ls", "ls", "Error: exit 1"]);
  });

  it("reads only the last ask's messages for turn texts, and skips known text", () => {
    const call = (id: string) => ({ id, name: "n", arguments: "", ok: true, output: "" });
    const messages = [
      { role: "user", content: "a" },
      { role: "assistant", content: "old", toolCalls: [call("x")] },
      { role: "user", content: "b" },
      { role: "assistant", content: "new", toolCalls: [call("y")] },
    ];
    assert.deepEqual(lastAskMessages(messages).map((m) => m.content), ["new"]);
    const entry = newEntry("b");
    entry.items.push({ kind: "tool", id: "y", name: "n", arguments: "", state: "ok" });
    assert.equal(applyTurnTexts(entry, lastAskMessages(messages)).length, 1);
    assert.equal(applyTurnTexts(entry, lastAskMessages(messages)).length, 0, "not twice");
  });
});

describe("what the client keeps across reloads", () => {
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

  it("keeps shown conversations newest first, capped, running asks marked stopped", () => {
    const store = new ChatStore(new MemoryMemento(), 2);
    const make = (id: string): Conversation => {
      const entry = newEntry(`prompt ${id}`);
      entry.items.push({ kind: "tool", id: "c", name: "bash", arguments: "{}", state: "running", output: "y".repeat(5000) });
      return { sessionId: id, entries: [entry] };
    };
    store.save(make("a"));
    store.save(make("b"));
    store.save(make("c"));
    assert.equal(store.load("a"), undefined, "the oldest dropped");
    const c = store.load("c");
    assert.equal(c?.entries[0]?.state, "cancelled");
    const item = c?.entries[0]?.items[0];
    assert.equal(item?.kind === "tool" && item.state, "failed");
    assert.equal(item?.kind === "tool" && item.output?.length, 2000);
    store.save({ entries: [] });
    assert.equal(compactConversation({ entries: [] }).entries.length, 0);
  });

  it("keeps prompts for recall without repeating the last one", () => {
    const store = new ChatStore(new MemoryMemento());
    store.addPrompt("a");
    store.addPrompt("a");
    store.addPrompt("b");
    assert.deepEqual(store.prompts, ["a", "b"]);
    store.setCurrent("s1");
    assert.equal(store.currentSessionId, "s1");
  });
});

describe("a conversation the server no longer has", () => {
  it("says so, and Retry starts a new one", async () => {
    const { server, session } = setup();
    session.conversation.sessionId = "gone";
    session.conversation.folder = FOLDER_A;
    const sent = session.send("hello");
    (await server.next(Methods.ask)).reject({ code: -32602, message: "Invalid params: sessionId: unknown session", data: { field: "sessionId" } });
    await sent;
    const entry = session.conversation.entries[0];
    assert.match(entry?.error?.message ?? "", /no longer has this conversation/);
    assert.deepEqual(entry?.error?.buttons.map((b) => b.action), ["retry"]);
    const retry = session.send("hello", { folder: FOLDER_B });
    assert.deepEqual((await server.next(Methods.newSession)).params, { workspaceFolder: FOLDER_B });
    session.stop();
    await retry;
  });
});

describe("what later features put into the view", () => {
  it("streamed deltas append to that turn's text, reasoning apart, one item redrawn each", () => {
    const entry = newEntry("p");
    applyDelta(entry, { sessionId: "s", turn: 1, delta: "Hel", channel: "answer" });
    const changes = applyDelta(entry, { sessionId: "s", turn: 1, delta: "lo", channel: "answer" });
    applyDelta(entry, { sessionId: "s", turn: 2, delta: "hmm", channel: "reasoning" });
    assert.equal(changes.length, 1);
    assert.deepEqual(entry.items.map((i) => (i.kind === "text" ? `${i.channel}:${i.text}` : "")), ["answer:Hello", "reasoning:hmm"]);
    applyResult(entry, result({ answer: "Hello" }), 1);
    assert.equal(entry.items.filter((i) => i.kind === "text" && i.channel === "answer").length, 1, "the streamed answer is not added again");
  });

  it("an answered permission card is one line: what was asked, what was chosen", () => {
    assert.deepEqual(answeredCard("permission-c1", "Run outside the sandbox", "Always Allow"), {
      kind: "card", id: "permission-c1", title: "Run outside the sandbox — You chose: Always Allow.", body: "", tone: "info", buttons: [],
    });
    assert.equal(answeredCard("p", "Run", undefined).title, "Run — Not answered (withdrawn or dismissed).");
  });

  it("a card is added once and replaced by id", () => {
    const entry = newEntry("p");
    const card = { kind: "card" as const, id: "perm-1", title: "Run bash?", body: "rm -rf build", buttons: [] };
    applyCard(entry, card);
    applyCard(entry, { ...card, body: "answered" });
    assert.equal(entry.items.length, 1);
    assert.equal(entry.items[0]?.kind === "card" && entry.items[0].body, "answered");
  });
});

describe("restoring after a reload", () => {
  const conv = (...prompts: [string, "done" | "error" | "cancelled"][]): Conversation => ({
    entries: prompts.map(([prompt, state]) => ({ ...newEntry(prompt), state })),
  });
  it("adds the asks the server has after the last one the copy shows", () => {
    const local = conv(["a", "done"], ["b", "error"]);
    const server = conv(["a", "done"], ["c", "done"]);
    assert.deepEqual(missingEntries(local, server).add.map((e) => e.prompt), ["c"]);
    assert.deepEqual(missingEntries(conv(["a", "done"], ["c", "done"]), server), { add: [] });
    assert.deepEqual(missingEntries(conv(["x", "done"]), server), { add: [] }, "another conversation: nothing");
  });

  it("an ask the server died in is the server's too: its copy replaces the local one, never shown twice", () => {
    const local = conv(["a", "done"], ["b", "error"]);
    local.entries[1]!.interrupted = true; // serverLost marked it
    const server = conv(["a", "done"], ["b", "done"]);
    const missing = missingEntries(local, server);
    assert.deepEqual(missing.add, [], "b is not added again");
    assert.equal(missing.replace?.index, 1);
    assert.equal(missing.replace?.entry, server.entries[1]);
    // An ask after it the copy missed is added after it.
    const later = conv(["a", "done"], ["b", "done"], ["c", "done"]);
    assert.deepEqual(missingEntries(local, later).add.map((e) => e.prompt), ["c"]);
    // Cut short by the reload itself (saved as working, kept as cancelled): nothing added.
    assert.deepEqual(missingEntries(conv(["a", "done"], ["b", "cancelled"]), server), { add: [] });
  });
});
