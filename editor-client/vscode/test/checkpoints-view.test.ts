import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { changesText, checkpointItems, createdFiles, fileSummary, undoOutcome, undoQuestion } from "../src/checkpoints-view";
import type { Checkpoint, RewindResult } from "../src/protocol";

const NOW = new Date("2026-12-01T10:30:00Z");

function checkpoint(id: string, extra: Partial<Checkpoint> = {}): Checkpoint {
  return {
    id,
    prompt: `ask number ${id}`,
    time: "2026-12-01T10:25:00Z",
    state: "done",
    coverage: "all",
    notes: [],
    files: [],
    ...extra,
  };
}

function rewind(extra: Partial<RewindResult> = {}): RewindResult {
  return { restored: [], inEditor: [], conflicts: [], conversationTruncated: true, dryRun: true, ...extra };
}

describe("checkpointItems", () => {
  it("lists the newest ask first, with its files and counts", () => {
    const items = checkpointItems(
      [
        checkpoint("1"),
        checkpoint("2", {
          files: [
            { path: "src/app.py", status: "modified", added: 3, removed: 1 },
            { path: "new.txt", status: "added", added: 1, removed: 0 },
            { path: "logo.png", status: "deleted", added: null, removed: null },
          ],
        }),
      ],
      NOW,
    );
    assert.deepEqual(
      items.map((i) => i.checkpointId),
      ["2", "1"],
    );
    const [newest, oldest] = items;
    assert.ok(newest && oldest);
    assert.equal(newest.label, "Ask 2: ask number 2");
    assert.equal(newest.description, "5 min ago");
    assert.equal(newest.detail, "M src/app.py +3 \u22121 \u00b7 A new.txt +1 \u00b7 D logo.png");
    assert.equal(oldest.detail, "no files changed");
  });

  it("says when bash changes were not recorded and when an ask was interrupted", () => {
    const [item] = checkpointItems([checkpoint("3", { coverage: "fileTools", state: "interrupted" })], NOW);
    assert.ok(item);
    assert.match(item.detail, /bash changes not recorded/);
    assert.match(item.description, /\(interrupted\)/);
  });
});

describe("fileSummary", () => {
  it("leaves out zero counts", () => {
    assert.equal(fileSummary({ path: "a", status: "modified", added: 0, removed: 2 }), "M a \u22122");
  });
});

describe("undoQuestion", () => {
  it("lists what will be put back and what is kept", () => {
    const question = undoQuestion(
      "4",
      rewind({
        restored: ["a.py", "b.py"],
        inEditor: ["b.py"],
        conflicts: [{ path: "c.py", reason: "it was changed after the agent's last change to it" }],
      }),
    );
    assert.equal(question.message, "Undo ask 4 and every later one?");
    assert.equal(
      question.detail,
      [
        "Will be put back:",
        "  a.py",
        "  b.py (in its editor, unsaved: Undo works there)",
        "",
        "Kept as they are (changed after the agent):",
        "  c.py: it was changed after the agent's last change to it",
        "",
        "The conversation goes back to before this ask: the agent forgets it and every later one.",
      ].join("\n"),
    );
    assert.equal(question.actionable, true);
  });

  it("has nothing to confirm when nothing would change", () => {
    const question = undoQuestion("1", rewind({ conversationTruncated: false }));
    assert.equal(question.detail, "No files to put back.");
    assert.equal(question.actionable, false);
  });
});

describe("undoOutcome", () => {
  it("counts what was put back and names what was kept", () => {
    const text = undoOutcome(
      "2",
      rewind({ restored: ["a", "b"], inEditor: ["b"], conflicts: [{ path: "c", reason: "x" }], dryRun: false }),
    );
    assert.equal(text, "Undid ask 2: 2 files put back (1 in open editors, unsaved); kept 1 you changed since: c.");
  });
});

describe("changesText", () => {
  it("counts the files an ask changed", () => {
    assert.equal(changesText(1), "1 file changed");
    assert.equal(changesText(2), "2 files changed");
  });
});

describe("an undo that deletes what the agent created", () => {
  it("says the created files will be deleted, not put back, numbered as the chat shows the ask", () => {
    const checkpoints = [
      checkpoint("3", { files: [{ path: "new.txt", status: "added", added: 1, removed: 0 }, { path: "README.md", status: "modified", added: 1, removed: 1 }] }),
      checkpoint("4", { files: [{ path: "new.txt", status: "modified", added: 1, removed: 0 }, { path: "later.txt", status: "added", added: 1, removed: 0 }] }),
    ];
    const created = createdFiles(checkpoints, "3");
    assert.deepEqual([...created].sort(), ["later.txt", "new.txt"]);
    assert.deepEqual([...createdFiles(checkpoints, "4")], ["later.txt"], "new.txt existed before ask 4");
    const question = undoQuestion("3", rewind({ restored: ["README.md", "new.txt"] }), created, "1");
    assert.equal(question.message, "Undo ask 1 and every later one?");
    assert.match(question.detail, /^Will be put back:\n  README\.md\n\nWill be deleted \(the agent created them\):\n  new\.txt\n/);
    assert.equal(undoOutcome("1", rewind({ restored: ["README.md", "new.txt"], dryRun: false }), created), "Undid ask 1: 1 file put back, 1 deleted.");
  });
});
