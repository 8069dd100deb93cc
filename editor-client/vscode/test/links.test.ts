import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { joinWorkspacePath, resolveLink } from "../src/links";

describe("resolveLink", () => {
  it("opens web links externally", () => {
    assert.deepEqual(resolveLink("https://example.com/x"), { kind: "external", url: "https://example.com/x" });
  });

  it("resolves relative and absolute file paths", () => {
    assert.deepEqual(resolveLink("src/app.py"), { kind: "file", path: "src/app.py" });
    assert.deepEqual(resolveLink("/w/src/app.py"), { kind: "file", path: "/w/src/app.py" });
    assert.deepEqual(resolveLink("file:///w/my%20app.py"), { kind: "file", path: "/w/my app.py" });
  });

  it("reads line numbers from :N, :N:C and #LN", () => {
    assert.deepEqual(resolveLink("src/app.py:12"), { kind: "file", path: "src/app.py", line: 12 });
    assert.deepEqual(resolveLink("src/app.py:12:5"), { kind: "file", path: "src/app.py", line: 12, column: 5 });
    assert.deepEqual(resolveLink("src/app.py#L7"), { kind: "file", path: "src/app.py", line: 7 });
    assert.deepEqual(resolveLink("src/app.py#L7C3"), { kind: "file", path: "src/app.py", line: 7, column: 3 });
  });

  it("never follows other schemes or bare anchors", () => {
    for (const href of ["command:workbench.action.quit", "javascript:alert(1)", "vscode:extension/x", "#top", ""]) {
      assert.deepEqual(resolveLink(href), { kind: "none" }, href);
    }
  });

  it("keeps Windows drive paths", () => {
    assert.deepEqual(resolveLink("C:/w/app.py:3"), { kind: "file", path: "C:/w/app.py", line: 3 });
    assert.deepEqual(resolveLink("file:///C:/w/app.py"), { kind: "file", path: "C:/w/app.py" });
  });
});

describe("joinWorkspacePath", () => {
  it("joins relative paths and keeps absolute ones", () => {
    assert.equal(joinWorkspacePath("/w/", "./src/a.py"), "/w/src/a.py");
    assert.equal(joinWorkspacePath("/w", "src/a.py"), "/w/src/a.py");
    assert.equal(joinWorkspacePath("/w", "/etc/hosts"), "/etc/hosts");
  });
});
