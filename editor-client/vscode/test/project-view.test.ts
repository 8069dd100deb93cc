import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { type BuiltContext, MAX_PICKED_DOCUMENTS, type PickedDocument, withDocuments } from "../src/editor-context";
import { commandChoices, fileChoices, instructionChips, isInstructionPath, skillItems, skillsChip } from "../src/project-view";
import type { InstructionsResult } from "../src/protocol";
import { BUILTIN_COMMANDS } from "../src/slash-commands";

const result: InstructionsResult = {
  instructions: [
    { path: "/home/u/.config/agent-lsp/AGENTS.md", uri: "file:///home/u/.config/agent-lsp/AGENTS.md", name: "~/.config/agent-lsp/AGENTS.md", source: "user", bytes: 120, cut: false },
    { path: "/ws/AGENTS.md", uri: "file:///ws/AGENTS.md", name: "AGENTS.md", source: "workspace", bytes: 40_000, cut: true },
    { path: "/ws/sub/AGENTS.md", uri: "file:///ws/sub/AGENTS.md", name: "sub/\u001b[8mAGENTS.md\u202e", source: "nested", bytes: 10, cut: false },
  ],
  skills: [
    { name: "pdf", description: "Read and fill PDF forms", path: "/ws/.agents/skills/pdf/SKILL.md", source: "workspace" },
    { name: "deploy\u0007", description: "Ship it", path: "/u/skills/deploy/SKILL.md", source: "user" },
  ],
  warnings: [],
};

describe("the instruction chips", () => {
  it("one chip per file in force, in order, the cut one marked, each opening its file", () => {
    const chips = instructionChips(result);
    assert.deepEqual(chips.map((c) => c.name), ["~/.config/agent-lsp/AGENTS.md", "AGENTS.md", "sub/\\e[8mAGENTS.md\\u202e"]);
    assert.deepEqual(chips.map((c) => c.cut), [false, true, false]);
    assert.equal(chips[1]?.uri, "file:///ws/AGENTS.md");
    assert.match(chips[1]?.title ?? "", /\/ws\/AGENTS\.md\nthe folder's instructions, 39 KB\nCut: only its first part/);
    assert.match(chips[2]?.title ?? "", /subfolder/);
  });

  it("spells out control characters of file-derived names", () => {
    for (const chip of instructionChips(result)) {
      assert.ok(!/[\u0000-\u001f\u202e]/.test(chip.name), JSON.stringify(chip.name));
    }
  });

  it("the skills as one chip, each named in its tooltip", () => {
    const chip = skillsChip(result);
    assert.equal(chip?.label, "2 skills");
    assert.match(chip?.title ?? "", /pdf: Read and fill PDF forms\ndeploy\\x07: Ship it/);
    assert.equal(skillsChip({ ...result, skills: [] }), undefined);
    assert.equal(skillsChip({ ...result, skills: result.skills.slice(0, 1) })?.label, "1 skill");
    assert.match(chip?.title ?? "", /Click to open one\.$/);
  });

  it("a click on the skills chip offers each skill, opening its SKILL.md", () => {
    assert.deepEqual(skillItems(result), [
      { label: "pdf", description: "this folder's", detail: "Read and fill PDF forms", path: "/ws/.agents/skills/pdf/SKILL.md" },
      { label: "deploy\\x07", description: "your own", detail: "Ship it", path: "/u/skills/deploy/SKILL.md" },
    ]);
  });
});

describe("the commands and files offered", () => {
  it("the server's commands, escaped, with their hints; the built-ins without a server's list", () => {
    const choices = commandChoices({
      commands: [
        { name: "undo", description: "Undo", source: "builtin", argumentHint: "[checkpoint id]" },
        { name: "review", description: "Review\u001b[2J it", source: "workspace", path: "/ws/.agents/commands/review.md" },
      ],
    });
    assert.deepEqual(choices, [
      { name: "undo", description: "Undo", source: "builtin", argumentHint: "[checkpoint id]" },
      { name: "review", description: "Review\\e[2J it", source: "workspace" },
    ]);
    assert.deepEqual(commandChoices(undefined), BUILTIN_COMMANDS);
  });

  it("file paths escaped, URIs kept", () => {
    assert.deepEqual(fileChoices([{ path: "a\rb.py", uri: "file:///ws/a%0Db.py" }]), [{ path: "a\\rb.py", uri: "file:///ws/a%0Db.py" }]);
  });

  it("knows which saved files may change the instructions", () => {
    assert.ok(isInstructionPath("/ws/AGENTS.md"));
    assert.ok(isInstructionPath("/ws/sub/deep/CLAUDE.md"));
    assert.ok(isInstructionPath("/ws/.github/copilot-instructions.md"));
    assert.ok(isInstructionPath("/ws/.agents/skills/pdf/SKILL.md"));
    assert.ok(!isInstructionPath("/ws/README.md"));
    assert.ok(!isInstructionPath("/ws/NOTAGENTS.md"));
    assert.ok(isInstructionPath("/ws/docs/RULES.md", ["docs/RULES.md"]));
    assert.ok(!isInstructionPath("/ws/AGENTS.md", ["RULES.md"]));
  });
});

describe("files picked with @ as context.documents", () => {
  const doc = (path: string, scheme = "file"): PickedDocument => ({ uri: `${scheme}:///ws/${path}`, scheme, fsPath: `/ws/${path}`, shown: path });

  it("adds the URIs beside the active editor's context and says so in the label", () => {
    const active: BuiltContext = { context: { activeDocument: { uri: "file:///ws/src/app.py" } }, label: "file: src/app.py" };
    const built = withDocuments(active, [doc("src/greet.py"), doc("README.md")], "/ws");
    assert.deepEqual(built.context, { activeDocument: { uri: "file:///ws/src/app.py" }, documents: ["file:///ws/src/greet.py", "file:///ws/README.md"] });
    assert.equal(built.label, "file: src/app.py; @src/greet.py, @README.md");
    assert.equal(built.skipped, undefined);
  });

  it("alone, once each; files outside the folder or of another scheme are not sent, and said", () => {
    const outside: PickedDocument = { uri: "file:///elsewhere/x.py", scheme: "file", fsPath: "/elsewhere/x.py", shown: "/elsewhere/x.py" };
    const built = withDocuments({}, [doc("a.py"), doc("a.py"), outside, doc("b.py", "untitled")], "/ws");
    assert.deepEqual(built.context, { documents: ["file:///ws/a.py"] });
    assert.equal(built.label, "@a.py");
    assert.match(built.skipped ?? "", /\/elsewhere\/x\.py, b\.py: not in the conversation's folder/);
  });

  it("nothing picked: the context as it was; no folder: nothing sent", () => {
    const active: BuiltContext = { label: "x" };
    assert.equal(withDocuments(active, [], "/ws"), active);
    assert.equal(withDocuments({}, [doc("a.py")], undefined).context, undefined);
  });

  it("at most MAX_PICKED_DOCUMENTS", () => {
    const many = Array.from({ length: MAX_PICKED_DOCUMENTS + 3 }, (_, i) => doc(`f${i}.py`));
    assert.equal(withDocuments({}, many, "/ws").context?.documents?.length, MAX_PICKED_DOCUMENTS);
  });
});
