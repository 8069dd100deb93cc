import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { firstLine, formatDuration, summarizeArguments, truncate } from "../src/summary";

describe("summarizeArguments", () => {
  it("shows a bash command alone, on one line", () => {
    assert.equal(summarizeArguments('{"command": "ls -la\\n  src"}'), "ls -la ⏎ src");
  });

  it("puts the path first and labels the other keys", () => {
    assert.equal(
      summarizeArguments('{"offset": 10, "path": "src/app.py", "limit": 20}'),
      "src/app.py offset=10 limit=20",
    );
  });

  it("shows bulk text as a size, never inline", () => {
    const args = JSON.stringify({ path: "a.py", content: "x = 1\ny = 2\nprint(x)\n" });
    assert.equal(summarizeArguments(args), "a.py content=4 lines");
    const edit = JSON.stringify({ path: "a.py", old_text: "foo", new_text: "bar\nbaz", replace_all: true });
    assert.equal(summarizeArguments(edit), "a.py old_text=3 chars new_text=2 lines replace_all=true");
  });

  it("leads with the tool's own summary argument when the server names it", () => {
    const args = '{"path": "docs", "query": "sandbox limits", "limit": 3}';
    assert.equal(summarizeArguments(args), "docs sandbox limits limit=3");
    assert.equal(summarizeArguments(args, 100, "query"), "sandbox limits docs limit=3");
    assert.equal(summarizeArguments('{"symbol": "x"}', 100, "symbol"), "x");
    // A key the model left out changes nothing.
    assert.equal(summarizeArguments('{"path": "a.txt"}', 100, "symbol"), "a.txt");
  });

  it("keeps the glob pattern before the folder", () => {
    assert.equal(summarizeArguments('{"path": "src", "pattern": "**/*.py"}'), "src **/*.py");
  });

  it("shows invalid JSON as collapsed text", () => {
    assert.equal(summarizeArguments('{"command": "ls\n'), '{"command": "ls');
  });

  it("handles non-object JSON and empty objects", () => {
    assert.equal(summarizeArguments("[1,2]"), "[1,2]");
    assert.equal(summarizeArguments("{}"), "");
    assert.equal(summarizeArguments('{"nested": {"a": [1, 2]}}'), 'nested={"a":[1,2]}');
  });

  it("truncates long summaries with an ellipsis", () => {
    const long = JSON.stringify({ command: "echo " + "x".repeat(300) });
    const summary = summarizeArguments(long, 40);
    assert.equal(Array.from(summary).length, 40);
    assert.ok(summary.endsWith("…"));
    assert.ok(summary.startsWith("echo xxx"));
  });
});

describe("helpers", () => {
  it("truncate never splits a surrogate pair", () => {
    assert.equal(truncate("😀😀😀😀", 3), "😀😀…");
    assert.equal(truncate("short", 10), "short");
  });

  it("firstLine skips blank lines", () => {
    assert.equal(firstLine("\n\n  Error: boom\nmore"), "Error: boom");
    assert.equal(firstLine(undefined), "");
  });

  it("formatDuration picks a readable unit", () => {
    assert.equal(formatDuration(12.4), "12ms");
    assert.equal(formatDuration(1234), "1.23s");
    assert.equal(formatDuration(12_345), "12.3s");
    assert.equal(formatDuration(119_600), "2m00s");
    assert.equal(formatDuration(61_000), "1m01s");
    assert.equal(formatDuration(undefined), "");
    assert.equal(formatDuration(-1), "");
  });
});
