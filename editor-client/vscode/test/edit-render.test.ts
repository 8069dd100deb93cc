import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { lineDiff, renderEditPreview } from "../src/chat/edit-render";
import type { Entry, ToolItem } from "../src/chat/model";

const entry: Entry = { id: "e1", prompt: "p", state: "done", items: [], actions: [] };
const call = (name: string, args: unknown, state: ToolItem["state"] = "ok"): ToolItem => ({
  kind: "tool",
  id: "c1",
  name,
  arguments: JSON.stringify(args),
  state,
});

describe("an edit's diff", () => {
  it("keeps the lines both texts share as context, the old middle removed, the new added", () => {
    assert.deepEqual(lineDiff("a\nb\nc", "a\nB\nB2\nc"), [
      { mark: " ", text: "a" },
      { mark: "-", text: "b" },
      { mark: "+", text: "B" },
      { mark: "+", text: "B2" },
      { mark: " ", text: "c" },
    ]);
    assert.deepEqual(lineDiff("", "x\n"), [{ mark: "+", text: "x" }]);
  });

  it("shows in the row: the file as a link to the diff editor, the counts, the coloured lines", () => {
    const html = renderEditPreview(entry, call("edit_file", { path: "src/greet.py", old_text: 'return "hello"', new_text: 'return "hi"\n# <b>' }));
    assert.match(html, /<a class="edit-file" role="link" href="#" data-action="openEditDiff" data-call-id="c1" data-entry-id="e1"[^>]*>src\/greet\.py<\/a>/);
    assert.match(html, /\+2 −1/);
    assert.match(html, /<span class="diff-line del">-return &quot;hello&quot;<\/span><span class="diff-line add">\+return &quot;hi&quot;<\/span><span class="diff-line add">\+# &lt;b&gt;<\/span>/);
  });

  it("spells out control characters of the model's text", () => {
    const html = renderEditPreview(entry, call("edit_file", { path: "a\u202eb", old_text: "x", new_text: "y\x1b[8m" }));
    assert.ok(!html.includes("\x1b") && !html.includes("\u202e"), html);
    assert.match(html, /y\\e\[8m/);
  });

  it("a write shows its size and first lines; a failed call or another tool nothing", () => {
    const content = Array.from({ length: 20 }, (_, i) => `l${i}`).join("\n") + "\n";
    const html = renderEditPreview(entry, call("write_file", { path: "new.txt", content }));
    assert.match(html, /20 lines, 70 bytes/);
    assert.match(html, /<span class="diff-line add">\+l0<\/span>/);
    assert.ok(!html.includes("+l8<"), "only the first lines");
    assert.match(html, /… 12 more lines/);
    assert.equal(renderEditPreview(entry, call("edit_file", { path: "a", old_text: "x", new_text: "y" }, "failed")), "");
    assert.equal(renderEditPreview(entry, call("bash", { command: "ls" })), "");
  });
});
