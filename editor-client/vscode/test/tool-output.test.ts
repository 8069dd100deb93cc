import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { lineCount, pageOf, tailOf } from "../src/chat/tool-output";

const numbered = (n: number) => Array.from({ length: n }, (_, i) => `line ${i + 1}`).join("\n") + "\n";

describe("an output's tail", () => {
  it("is its last lines, a final newline not counting as a line", () => {
    assert.deepEqual(tailOf(numbered(100), 3), { text: "line 98\nline 99\nline 100", hiddenLines: 97, totalLines: 100 });
    assert.deepEqual(tailOf("a\nb", 40), { text: "a\nb", hiddenLines: 0, totalLines: 2 });
    assert.deepEqual(tailOf("", 40), { text: "", hiddenLines: 0, totalLines: 0 });
    assert.equal(lineCount(numbered(7)), 7);
  });

  it("keeps a one-line flood to its last characters", () => {
    const tail = tailOf(`start\n${"y".repeat(50_000)}`, 40, 1000);
    assert.equal(tail.text, "y".repeat(1000));
    assert.equal(tail.hiddenLines, 1);
  });
});

describe("an output's pages", () => {
  it("come in order, each saying where the next starts, the last saying none", () => {
    const text = numbered(5000);
    const first = pageOf(text, 0, 2000);
    assert.equal(first.text.split("\n").length, 2000);
    assert.equal(first.next, 2000);
    const last = pageOf(text, 4000, 2000);
    assert.equal(last.text.split("\n").at(-1), "line 5000");
    assert.equal(last.next, undefined);
    assert.equal(last.totalLines, 5000);
  });

  it("stop at the character budget, so 10 MB never reach the page at once", () => {
    const text = `${"z".repeat(1000)}\n`.repeat(10_000); // 10 MB
    const page = pageOf(text, 0, 2000, 200_000);
    assert.ok(page.text.length <= 200_000, `${page.text.length}`);
    assert.equal(page.next, 199);
    const long = pageOf("x".repeat(300_000), 0, 2000, 200_000);
    assert.match(long.text, /… \[100,000 more characters on this line\]$/);
  });
});
