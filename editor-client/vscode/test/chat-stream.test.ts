// The answer while it streams (agent/answerDelta), compaction in the conversation (agent/compact,
// agent/compaction), as the chat session and the view's renderer see them.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { compactionSummary } from "../src/compaction";
import { describeAskError } from "../src/errors";
import type { Entry, Item } from "../src/chat/model";
import { renderEntry, renderTail } from "../src/chat/render";
import { ChatSession } from "../src/chat/session";
import { type AnswerDelta, type AskResult, Methods } from "../src/protocol";
import { formatCompactionLine } from "../src/trace";
import { FakeServer, RecordingSink } from "./fake-server";

const ALL = [Methods.ask, Methods.newSession, Methods.sessionHistory, Methods.answerDelta, Methods.compact, Methods.compaction];
const options = { toolOutput: false };

function setup(methods: readonly string[] = ALL) {
  const server = new FakeServer(methods);
  const sink = new RecordingSink();
  const session = new ChatSession(server, sink, { now: () => 1000 });
  return { server, sink, session };
}

function result(overrides: Partial<AskResult> = {}): AskResult {
  return { answer: "", sessionId: "s1", stopReason: "end_turn", toolCalls: [], turns: 1, ...overrides };
}

const delta = (turn: number, text: string, channel = "answer", sessionId = "s1"): AnswerDelta => ({ sessionId, turn, delta: text, channel });

/** An ask in session s1, past agent/newSession: the test answers its agent/ask. */
async function started(s: ReturnType<typeof setup>, prompt = "explain") {
  const sent = s.session.send(prompt, { folder: "file:///w" });
  (await s.server.next(Methods.newSession)).resolve({ sessionId: "s1", workspaceFolder: "file:///w" });
  const ask = await s.server.next(Methods.ask);
  return { sent, ask, entry: s.session.conversation.entries[0] as Entry };
}

const shown = (entry: Entry) =>
  entry.items.map((i: Item) => (i.kind === "text" ? `${i.channel}:${i.text}` : i.kind === "tool" ? `tool:${i.id}` : `${i.kind}`));

describe("a streamed answer", () => {
  it("appears as it is written: each delta redraws only the streaming text", async () => {
    const s = setup();
    const { sent, ask, entry } = await started(s);
    s.sink.changes = [];
    s.session.onDelta(delta(1, "The file "));
    s.session.onDelta(delta(1, "defines `main`."));
    assert.deepEqual(shown(entry), ["answer:The file defines `main`."], "shown before the ask is done");
    assert.equal(entry.state, "working");
    assert.deepEqual(s.sink.changes.map((c) => c.part), ["item", "item"], "no entry or conversation rebuilt per delta");
    const streamed = s.sink.changes[0]?.part === "item" ? s.sink.changes[0].item.id : "";
    assert.ok(s.sink.changes.every((c) => c.part === "item" && c.item.id === streamed), "the same block each time");
    ask.resolve(result({ answer: "The file defines `main`." }));
    await sent;
    assert.deepEqual(shown(entry), ["answer:The file defines `main`."], "the answer is not added again");
  });

  it("keeps every turn's text in order between the tool rows, reasoning apart", async () => {
    const s = setup();
    const { sent, ask, entry } = await started(s);
    s.session.onDelta(delta(1, "Let me think", "reasoning"));
    s.session.onDelta(delta(1, "First I read it."));
    s.session.onActivity({ sessionId: "s1", callId: "c1", name: "read_file", arguments: "{}", status: "started", turn: 1 });
    s.session.onActivity({ sessionId: "s1", callId: "c1", name: "read_file", arguments: "{}", status: "completed", turn: 1 });
    s.session.onDelta(delta(2, "It prints "));
    s.session.onDelta(delta(2, "hello."));
    ask.resolve(result({ answer: "It prints hello.", turns: 2 }));
    await sent;
    assert.deepEqual(shown(entry), ["reasoning:Let me think", "answer:First I read it.", "tool:c1", "answer:It prints hello."]);
    assert.equal(s.server.calls.length, 0, "streamed turn texts need no agent/sessionHistory");
    const html = renderEntry(entry, options);
    assert.match(html, /<div class="reasoning disclosure"[^>]*><div class="disclosure-head"[^>]*>Reasoning<\/div><div class="disclosure-body"><div class="markdown-body"><p>Let me think<\/p>/);
    assert.ok(!/class="reasoning disclosure open"/.test(html), "reasoning is collapsed");
    const order = ["Reasoning", "First I read it.", "e1", "It prints hello."].map((t, i) => (i === 2 ? html.indexOf("/tool/c1") : html.indexOf(t)));
    assert.deepEqual([...order].sort((a, b) => a - b), order);
  });

  it("the final answer replaces the streamed text of the last turn where they differ", async () => {
    const s = setup();
    const { sent, ask, entry } = await started(s);
    s.session.onDelta(delta(1, "Draft answ"));
    ask.resolve(result({ answer: "The final answer." }));
    await sent;
    assert.deepEqual(shown(entry), ["answer:The final answer."]);
    assert.equal(entry.state, "done");
  });

  it("works with a server that streams nothing: the answer comes with the result", async () => {
    const s = setup([Methods.ask, Methods.newSession]);
    const { sent, ask, entry } = await started(s);
    assert.deepEqual(shown(entry), []);
    ask.resolve(result({ answer: "Whole answer." }));
    await sent;
    assert.deepEqual(shown(entry), ["answer:Whole answer."]);
    assert.match(renderEntry(entry, options), /<p>Whole answer.<\/p>/);
  });

  it("cancelled mid-stream keeps what streamed, marked cancelled", async () => {
    const s = setup();
    const { sent, entry } = await started(s);
    s.session.onDelta(delta(1, "Half of the ans"));
    s.session.stop();
    await sent;
    assert.equal(entry.state, "cancelled");
    assert.deepEqual(shown(entry), ["answer:Half of the ans"]);
    assert.match(renderTail(entry), /Cancelled\./);
    assert.match(renderEntry(entry, options), /class="entry cancelled"[\s\S]*Half of the ans/);
  });

  it("an empty stop removes the whitespace that streamed", async () => {
    const s = setup();
    const { sent, ask, entry } = await started(s);
    s.session.onDelta(delta(1, "\n\n"));
    const stopNote = "the model returned nothing (no text and no tool calls)";
    ask.resolve(result({ answer: "", stopReason: "empty", stopNote }));
    await sent;
    assert.deepEqual(shown(entry), []);
    assert.ok(s.sink.changes.some((c) => c.part === "removed"), "the view is told to remove it");
    // The tail says why, in the server's words.
    assert.match(renderTail(entry), /<div class="stop-note">the model returned nothing \(no text and no tool calls\)<\/div>/);
  });

  it("goes only to the entry of its session, and not after New Conversation", async () => {
    const s = setup();
    const { entry } = await started(s);
    s.session.onDelta(delta(1, "another session's text", "answer", "s2"));
    assert.deepEqual(shown(entry), []);
    s.session.replace({ entries: [] });
    s.session.onDelta(delta(1, "late"));
    assert.deepEqual(shown(entry), []);
  });
});

describe("compaction in the conversation", () => {
  const compaction = {
    tokensBefore: 30512,
    tokensAfter: 9880,
    contextWindow: 32000,
    elidedOutputs: 12,
    summarizedMessages: 0,
    summary: "compacted: 30,512 → 9,880 tokens of 32,000 (12 outputs elided)",
  };

  it("shows a compaction in the server's words", () => {
    assert.equal(compactionSummary(compaction), "compacted: 30,512 → 9,880 tokens of 32,000 (12 outputs elided)");
    assert.equal(compactionSummary({ summary: "a\nb" }), "a⏎b"); // escaped again: one line
    const line = formatCompactionLine({ sessionId: "5f0c1a2b99", ...compaction } as never, new Date(2026, 0, 1, 14, 3, 9));
    assert.match(line, /^14:03:09(\.\d+)? \[5f0c1a2b\] ⇣ compacted: 30,512 → 9,880 tokens of 32,000 \(12 outputs elided\)$/);
  });

  it("an agent/compaction during an ask is a one-line note in that ask's entry", async () => {
    const s = setup();
    const { sent, ask, entry } = await started(s);
    s.session.onCompaction({ sessionId: "s2", ...compaction });
    assert.equal(entry.items.length, 0, "another session's compaction");
    s.session.onCompaction({ sessionId: "s1", turn: 3, trigger: "threshold", ...compaction });
    ask.resolve(result({ answer: "ok", usage: { total_tokens: 50, contextTokens: 12345, contextWindow: 128000 } }));
    await sent;
    const html = renderEntry(entry, options);
    assert.match(html, /<div class="note"[^>]*>⇣ compacted: 30,512 → 9,880 tokens of 32,000 \(12 outputs elided\)<\/div>/);
    assert.match(html, /<div class="footer">[^<]*context 12,345 of 128,000 tokens<\/div>/);
  });

  it("Compact Conversation sends agent/compact for this session and shows its result", async () => {
    const s = setup();
    const { sent, ask, entry } = await started(s);
    ask.resolve(result({ answer: "ok", usage: { contextTokens: 30512, contextWindow: 32000 } }));
    await sent;
    const compacting = s.session.compact();
    const request = await s.server.next(Methods.compact);
    assert.deepEqual(request.params, { sessionId: "s1" });
    assert.match(renderEntry(entry, options), /compacting the conversation…/);
    assert.equal((await s.session.send("meanwhile")).kind, "busy", "no ask while it compacts");
    request.resolve(compaction);
    const outcome = await compacting;
    assert.equal(outcome.kind, "compacted");
    const html = renderEntry(entry, options);
    assert.match(html, /⇣ compacted: 30,512 → 9,880 tokens of 32,000/);
    assert.ok(!html.includes("compacting the conversation…"), "the progress note is replaced");
    assert.match(html, /context 9,880 of 32,000 tokens/, "the footer shows the context now");
  });

  it("Compact Conversation: nothing to compact, an ask running, a server without it", async () => {
    assert.equal((await setup().session.compact()).kind, "empty");
    assert.equal((await setup([Methods.ask]).session.compact()).kind, "unsupported");
    const s = setup();
    await started(s);
    assert.equal((await s.session.compact()).kind, "busy");
  });

  it("a failed compaction says why in the note", async () => {
    const s = setup();
    const { sent, ask, entry } = await started(s);
    ask.resolve(result({ answer: "ok" }));
    await sent;
    const compacting = s.session.compact();
    (await s.server.next(Methods.compact)).reject({ code: -32002, message: "HTTP 503 from the model", data: { status: 503 } });
    assert.equal((await compacting).kind, "failed");
    assert.match(renderEntry(entry, options), /compaction failed: HTTP 503 from the model/);
  });

  it("the conversation too large for the window (-32005): its message and a Compact button", async () => {
    const message = "The conversation does not fit the model's context window (40,000 tokens of 32,000) even compacted.";
    const report = describeAskError({ code: -32005, message, data: { contextTokens: 40000, contextWindow: 32000 } });
    assert.equal(report.message, message);
    assert.deepEqual(report.actions.map((a) => a.action), ["compact", "retry"]);
    const s = setup();
    const { sent, ask, entry } = await started(s);
    ask.reject({ code: -32005, message, data: { contextTokens: 40000, contextWindow: 32000 } });
    await sent;
    const tail = renderTail(entry);
    assert.match(tail, /does not fit the model&#39;s context window|does not fit the model's context window/);
    assert.match(tail, /<button class="button primary" data-action="compact"[^>]*>Compact<\/button>/);
  });
});
