// What goes with an ask as editor context (agent/ask `context`), and what the view says was attached.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { buildContext, chipLabel, type EditorSnapshot, insideFolder, lineSpan } from "../src/editor-context";
import { renderEntry } from "../src/chat/render";
import { newEntry } from "../src/chat/model";

const range = (l1: number, c1: number, l2: number, c2: number) => ({ start: { line: l1, character: c1 }, end: { line: l2, character: c2 } });
const editor = (selection = range(4, 2, 4, 2), path = "/w/src/app.py", scheme = "file"): EditorSnapshot => ({
  uri: `${scheme}://${path}`,
  scheme,
  fsPath: path,
  selection,
});
const auto = { auto: true, attach: [] };
const manual = (...attach: string[]) => ({ auto: false, attach });

describe("the active editor with every ask (agentLsp.sendActiveEditor)", () => {
  it("sends the file, and its selection only when something is selected", () => {
    assert.deepEqual(buildContext(editor(), "/w", auto, "src/app.py"), {
      context: { activeDocument: { uri: "file:///w/src/app.py" } },
      label: "file: src/app.py",
    });
    const selected = buildContext(editor(range(2, 0, 9, 0)), "/w", auto, "src/app.py");
    assert.deepEqual(selected.context, { activeDocument: { uri: "file:///w/src/app.py", selection: range(2, 0, 9, 0) } });
    assert.equal(selected.label, "selection: src/app.py, lines 3-9", "whole lines end at the next line's start");
  });

  it("sends nothing for a document outside the conversation's folder, untitled, or no editor", () => {
    assert.deepEqual(buildContext(editor(range(1, 0, 2, 3), "/other/x.py"), "/w", auto, "/other/x.py"), {});
    assert.deepEqual(buildContext(editor(range(1, 0, 2, 3), "/w-sibling/x.py"), "/w", auto, "x.py"), {}, "a folder that only shares the prefix");
    assert.deepEqual(buildContext(editor(undefined, "Untitled-1", "untitled"), "/w", auto, "Untitled-1"), {});
    assert.deepEqual(buildContext(undefined, "/w", auto, ""), {});
    assert.deepEqual(buildContext(editor(), undefined, auto, "src/app.py"), {}, "no folder known");
  });

  it("with the setting off sends only what was ticked, and says why a tick was not sent", () => {
    assert.deepEqual(buildContext(editor(range(0, 0, 0, 5)), "/w", manual(), "src/app.py"), {});
    assert.equal(buildContext(editor(range(0, 0, 0, 5)), "/w", manual("selection"), "src/app.py").label, "selection: src/app.py, line 1");
    assert.equal(buildContext(editor(range(0, 0, 0, 5)), "/w", manual("file"), "src/app.py").label, "file: src/app.py");
    assert.equal(buildContext(editor(), "/w", manual("selection"), "src/app.py").skipped, "the selection is empty");
    assert.match(buildContext(editor(range(0, 0, 0, 5), "/o/y.py"), "/w", manual("file"), "/o/y.py").skipped ?? "", /not in the conversation's folder/);
  });

  it("counts lines from 1, and a backwards selection the same way", () => {
    assert.equal(lineSpan(range(2, 4, 2, 9)), "line 3");
    assert.equal(lineSpan(range(8, 3, 2, 1)), "lines 3-9");
    assert.equal(lineSpan(range(2, 0, 3, 0)), "line 3");
    assert.ok(insideFolder("/w", "/w") && insideFolder("/w/a/b", "/w") && !insideFolder("/wx/a", "/w"));
  });

  it("the user's message shows what was attached", () => {
    const entry = { ...newEntry("Explain <this>"), attached: "selection: src/app.py, lines 3-9" };
    const html = renderEntry(entry, { toolOutput: false });
    assert.match(html, /<div class="prompt"><div class="prompt-text">Explain &lt;this&gt;<\/div><div class="attached">selection: src\/app.py, lines 3-9<\/div><\/div>/);
    assert.ok(!renderEntry(newEntry("plain"), { toolOutput: false }).includes("attached"));
  });
});

describe("the active file's chip", () => {
  it("names the file, and the selection's lines when there is one", () => {
    const at = (l1: number, c1: number, l2: number, c2: number) => ({ start: { line: l1, character: c1 }, end: { line: l2, character: c2 } });
    const snap = (selection: ReturnType<typeof at>) => ({ uri: "file:///w/src/app.py", scheme: "file", fsPath: "/w/src/app.py", selection });
    assert.equal(chipLabel("src/app.py", snap(at(4, 2, 4, 2))), "app.py");
    assert.equal(chipLabel("src/app.py", snap(at(2, 0, 8, 5))), "app.py · lines 3-9");
  });
});
