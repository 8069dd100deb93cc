// A streamed answer rendered block by block (MarkdownStream, PagePatcher): what the page ends up
// showing is exactly the full render of the text so far, and a delta's work stays the size of
// the block being written however long the answer grows. Path lookups are remembered until
// files may have changed.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { MarkdownStream, renderMarkdown } from "../src/chat/markdown";
import type { ToView } from "../src/chat/messages";
import { applyDelta, applyResult, type Entry, newEntry } from "../src/chat/model";
import { PathExistsCache } from "../src/chat/path-cache";
import { PagePatcher } from "../src/chat/patches";

const exists = (p: string) => p === "src/app.py";

// Everything a model writes: headings, a table, lists, a fence (opened mid-stream), a rule,
// a quote, `path:line` references in text and inline code, a paragraph that a `#` or `***`
// line only seems to end while it is being written.
const ANSWER = [
  "## What I found",
  "",
  "The entry point src/app.py:12 calls **main()**, see `src/app.py:3`.",
  "A second line of the same paragraph",
  "#not a heading, a continuation",
  "***still the paragraph***",
  "",
  "```python",
  "def main():",
  "    config = load_config()",
  "```",
  "Text right after the fence.",
  "",
  "| file | role |",
  "|---|---|",
  "| `src/app.py` | entry |",
  "",
  "- one",
  "- two",
  "",
  "  still item two",
  "",
  "> quoted",
  "lazy line",
  "",
  "---",
  "1. first",
  "2. second",
  "",
].join("\n");

function* pieces(text: string, sizes: number[]): Generator<string> {
  let at = 0;
  for (let k = 0; at < text.length; k++) {
    const size = sizes[k % sizes.length] ?? 1;
    yield text.slice(at, at + size);
    at += size;
  }
}

describe("a streamed answer, block by block", () => {
  it("shows at every delta exactly what the full render of the text so far shows", () => {
    for (const sizes of [[1], [3, 7, 2], [21], [50, 1, 13]]) {
      const stream = new MarkdownStream();
      let text = "";
      let page = "";
      for (const piece of pieces(ANSWER.repeat(2), sizes)) {
        text += piece;
        const r = text === piece ? stream.update(text, exists) : stream.append(text, piece, exists);
        page = r.restarted ? r.appended : page + r.appended;
        assert.equal(page + r.open, renderMarkdown(text, exists), `after ${JSON.stringify(text.slice(-30))} (deltas of ${sizes})`);
      }
    }
  });

  it("re-renders only the block being written, however long the answer", () => {
    const stream = new MarkdownStream();
    let text = "";
    let longestOpen = 0;
    for (const piece of pieces(ANSWER.repeat(Math.ceil(40_500 / ANSWER.length)), [21])) {
      text += piece;
      longestOpen = Math.max(longestOpen, stream.append(text, piece, exists).open.length);
    }
    assert.ok(text.length > 40_000);
    assert.ok(longestOpen < 2_000, `the open block's HTML stays small: ${longestOpen} characters`);
  });

  it("starts over when the text is not the one it saw plus the delta", () => {
    const stream = new MarkdownStream();
    stream.update("First paragraph.\n\nSecond", exists);
    const r = stream.append("Another answer.\n\nWith two paragraphs", " paragraphs", exists);
    assert.equal(r.restarted, true);
    assert.equal(r.appended + r.open, renderMarkdown("Another answer.\n\nWith two paragraphs", exists));
  });
});

describe("the page's patches while an answer streams", () => {
  const options = { toolOutput: false, exists };

  it("first draws the text in streaming form, then sends only the open block and what got done", () => {
    const patcher = new PagePatcher();
    const entry: Entry = newEntry("explain");
    const messages: ToView[] = [];
    for (const piece of pieces(ANSWER.repeat(20), [21])) {
      messages.push(...patcher.messages(applyDelta(entry, { sessionId: "s", turn: 1, channel: "answer", delta: piece }), options));
    }
    const [first, ...rest] = messages;
    assert.equal(first?.type, "upsert");
    assert.match(first?.type === "upsert" ? first.html : "", /<div class="md-open" id="part:[^"]+\/open"/);
    assert.ok(rest.length > 100 && rest.every((m) => m.type === "stream"), "every later delta is a stream patch");
    const biggest = Math.max(...rest.map((m) => (m.type === "stream" ? m.html.length + m.append.length : 0)));
    assert.ok(biggest < 3_000, `a patch stays the size of a block or two: ${biggest}`);

    // The ask ends: the streamed text gets its full render once, in place.
    const text = entry.items[0]?.kind === "text" ? entry.items[0].text : "";
    const done = patcher.messages(applyResult(entry, { answer: text, sessionId: "s", stopReason: "end_turn", toolCalls: [], turns: 1 }, 10), options);
    const full = done.filter((m) => m.type === "upsert" && m.id.endsWith(`/text/${entry.items[0]?.id}`));
    assert.equal(full.length, 1);
    assert.ok(full[0]?.type === "upsert" && full[0].html.includes(renderMarkdown(text, exists)) && !full[0].html.includes("md-open"));
  });

  it("draws the streaming form again after the page was reset", () => {
    const patcher = new PagePatcher();
    const entry = newEntry("explain");
    const delta = (d: string) => patcher.messages(applyDelta(entry, { sessionId: "s", turn: 1, channel: "answer", delta: d }), options);
    delta("Hello ");
    assert.equal(delta("there")[0]?.type, "stream");
    patcher.reset();
    assert.equal(delta("!")[0]?.type, "upsert", "the reset page has no open block to patch");
  });
});

describe("path lookups while answers render", () => {
  it("are remembered until files may have changed, so a file created later becomes a link", () => {
    const disk = new Set<string>(["/w/src/app.py"]);
    let lookups = 0;
    const cache = new PathExistsCache((p) => {
      lookups += 1;
      return disk.has(p);
    });
    for (let i = 0; i < 50; i++) {
      assert.equal(cache.exists("/w/src/app.py"), true);
      assert.equal(cache.exists("/w/src/new.py"), false);
    }
    assert.equal(lookups, 2, "one lookup per path, not one per render");
    disk.add("/w/src/new.py");
    cache.forget(); // a watcher event or a tool call
    assert.equal(cache.exists("/w/src/new.py"), true);
  });
});
