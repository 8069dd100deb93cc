import assert from "node:assert/strict";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { findExecutable } from "../src/which";

describe("findExecutable", () => {
  const dir = mkdtempSync(join(tmpdir(), "which-"));
  after(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(join(dir, "bin"));
  const program = join(dir, "bin", "agent-lsp");
  writeFileSync(program, "#!/bin/sh\n");
  chmodSync(program, 0o755);
  const plain = join(dir, "bin", "not-executable");
  writeFileSync(plain, "");
  chmodSync(plain, 0o644);

  it("searches PATH for a bare name", () => {
    assert.equal(findExecutable("agent-lsp", `/nonexistent:${join(dir, "bin")}`, "/", [""]), program);
    assert.equal(findExecutable("agent-lsp", "/nonexistent", "/", [""]), undefined);
    assert.equal(findExecutable("agent-lsp", undefined, "/", [""]), undefined);
  });

  it("checks paths with a slash directly, relative to cwd", () => {
    assert.equal(findExecutable(program, "", "/", [""]), program);
    assert.equal(findExecutable("bin/agent-lsp", "", dir, [""]), program);
    assert.equal(findExecutable(join(dir, "missing"), "", "/", [""]), undefined);
  });

  it("skips files that are not executable and folders", { skip: process.platform === "win32" }, () => {
    assert.equal(findExecutable(plain, "", "/", [""]), undefined);
    assert.equal(findExecutable("bin", dir, "/", [""]), undefined);
  });
});
