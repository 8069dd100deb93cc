import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { AskResult, ToolActivity } from "../src/protocol";
import {
  formatActivityLine,
  formatAnswerLine,
  formatAskLine,
  formatCompactionLine,
  formatNoteLine,
  formatOutcomeLine,
  formatTime,
  shortSession,
} from "../src/trace";

const at = new Date(2025, 0, 2, 14, 3, 7, 120);

function activity(overrides: Partial<ToolActivity>): ToolActivity {
  return {
    sessionId: "3f2a9c1e-77aa-4b1c-9a00-000000000000",
    callId: "call_1",
    name: "bash",
    arguments: '{"command": "ls -la src"}',
    status: "started",
    turn: 2,
    title: "bash ls -la src",
    ...overrides,
  };
}

describe("trace lines", () => {
  it("formats local time with milliseconds", () => {
    assert.equal(formatTime(at), "14:03:07.120");
  });

  it("shortens session ids", () => {
    assert.equal(shortSession("3f2a9c1e-77aa"), "3f2a9c1e");
    assert.equal(shortSession("session-abcdef123456"), "abcdef12");
    assert.equal(shortSession(undefined), "--------");
  });

  // The words are the server's (title, durationText, outputHead: tests/test_wording.py);
  // the trace adds the time, the session, the turn, the mark and the status.
  it("writes a line for a call waiting for the user's permission", () => {
    assert.equal(
      formatActivityLine(activity({ status: "waiting" }), at),
      "14:03:07.120 [3f2a9c1e] turn 2 … bash ls -la src — waiting for your permission",
    );
  });

  it("writes a start line: time, session, turn, the server's title of the call", () => {
    assert.equal(formatActivityLine(activity({}), at), "14:03:07.120 [3f2a9c1e] turn 2 ▶ bash ls -la src");
  });

  it("writes an end line with status and the server's duration", () => {
    const line = formatActivityLine(activity({ status: "completed", durationMs: 290, durationText: "290 ms", output: "a\nb", outputHead: "a" }), at);
    assert.equal(line, "14:03:07.120 [3f2a9c1e] turn 2 ✓ bash ls -la src — ok 290 ms");
  });

  it("adds the server's output head for failures only", () => {
    const line = formatActivityLine(
      activity({ title: "read_file nope.py", status: "failed", durationText: "3 ms", outputHead: "Error: no such file: nope.py" }),
      at,
    );
    assert.equal(line, "14:03:07.120 [3f2a9c1e] turn 2 ✗ read_file nope.py — failed 3 ms: Error: no such file: nope.py");
  });

  it("escapes what it shows again: a title never breaks the line", () => {
    const line = formatActivityLine(activity({ title: "bash a\nb\x1b[8m" }), at);
    assert.equal(line, "14:03:07.120 [3f2a9c1e] turn 2 ▶ bash a⏎b\\e[8m");
  });

  it("omits the turn when the server sends none", () => {
    const { turn: _turn, ...withoutTurn } = activity({ title: "bash" });
    const line = formatActivityLine(withoutTurn, at);
    assert.equal(line, "14:03:07.120 [3f2a9c1e] ▶ bash");
  });

  it("writes client notes in the same layout", () => {
    assert.equal(formatNoteLine("new\nconversation", at), "14:03:07.120 [--------] new conversation");
  });

  it("writes ask, answer and outcome lines", () => {
    assert.equal(formatAskLine("Why\ndoes it fail?", undefined, at), "14:03:07.120 [new] ask: Why does it fail?");
    const result: AskResult = {
      answer: "x",
      sessionId: "abcdef0123",
      stopReason: "max_turns",
      toolCalls: [{ id: "1", name: "bash", arguments: "{}", ok: true }],
      usage: { total_tokens: 42 },
    };
    assert.equal(
      formatAnswerLine(result, 1500, at),
      "14:03:07.120 [abcdef01] answered (1 tool call, stopped: max_turns, 42 tokens, 1.50s)",
    );
    assert.equal(
      formatOutcomeLine("abcdef0123", "cancelled", "", at),
      "14:03:07.120 [abcdef01] ask cancelled by user",
    );
    assert.equal(
      formatOutcomeLine(undefined, "error", "Model not configured:\nset MODEL_API_KEY", at),
      "14:03:07.120 [--------] ask error: Model not configured: set MODEL_API_KEY",
    );
  });
});

describe("TraceWriter", () => {
  const { TraceWriter } = require("../src/trace") as typeof import("../src/trace");
  function writer() {
    const lines: string[] = [];
    const timers: { fn: () => void; ms: number; cleared: boolean }[] = [];
    const w = new TraceWriter(
      (l) => lines.push(l),
      1000,
      {
        set: (fn, ms) => {
          const t = { fn, ms, cleared: false };
          timers.push(t);
          return t;
        },
        clear: (t) => {
          (t as { cleared: boolean }).cleared = true;
        },
      },
      () => at,
    );
    return { w, lines, timers };
  }

  it("writes one line for a quick call: the end line only", () => {
    const { w, lines, timers } = writer();
    w.activity(activity({ status: "started" }));
    w.activity(activity({ status: "completed", durationMs: 20, durationText: "20 ms" }));
    assert.deepEqual(lines, ["14:03:07.120 [3f2a9c1e] turn 2 ✓ bash ls -la src — ok 20 ms"]);
    assert.equal(timers[0]?.cleared, true);
  });

  it("writes a start line for a call still running after a second", () => {
    const { w, lines, timers } = writer();
    const title = "bash cd src ⏎ pytest -q";
    w.activity(activity({ status: "started", title }));
    assert.equal(timers[0]?.ms, 1000);
    timers[0]?.fn();
    w.activity(activity({ status: "failed", title, durationText: "5000 ms", outputHead: "Error: 1 failed" }));
    assert.deepEqual(lines, [
      "14:03:07.120 [3f2a9c1e] turn 2 ▶ bash cd src ⏎ pytest -q",
      "14:03:07.120 [3f2a9c1e] turn 2 ✗ bash cd src ⏎ pytest -q — failed 5000 ms: Error: 1 failed",
    ]);
  });
});

describe("the trace line of a compaction", () => {
  it("says what was compacted, in the trace's layout", () => {
    const line = formatCompactionLine(
      { sessionId: "3f2a9c1e-77aa", tokensBefore: 30512, tokensAfter: 9880, contextWindow: 32000, elidedOutputs: 12, summarizedMessages: 0, turn: 4, trigger: "threshold", durationMs: 1,
        summary: "compacted: 30,512 → 9,880 tokens of 32,000 (12 outputs elided)" },
      at,
    );
    assert.equal(line, "14:03:07.120 [3f2a9c1e] ⇣ compacted: 30,512 → 9,880 tokens of 32,000 (12 outputs elided)");
  });

  it("says when older turns were summarized because the model said the conversation was too long", () => {
    const line = formatCompactionLine(
      { sessionId: "3f2a9c1e-77aa", tokensBefore: 40100, tokensAfter: 6100, contextWindow: 32000, elidedOutputs: 1, summarizedMessages: 18, turn: 4, trigger: "overflow", durationMs: 1,
        summary: "compacted: 40,100 → 6,100 tokens of 32,000 (1 output elided, 18 messages summarized, the model said the conversation was too long)" },
      at,
    );
    assert.equal(
      line,
      "14:03:07.120 [3f2a9c1e] ⇣ compacted: 40,100 → 6,100 tokens of 32,000 (1 output elided, 18 messages summarized, the model said the conversation was too long)",
    );
  });
});
