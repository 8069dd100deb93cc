import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { REQUEST_PERMISSION } from "../src/permissions";
import { ErrorActions, ErrorCodes, Methods } from "../src/protocol";

// out/test/ -> the package, and the schema in the repository's docs/.
const pkg = join(__dirname, "..", "..");
const script = join(pkg, "scripts", "generate-protocol.mjs");
const generated = join(pkg, "src", "protocol.generated.ts");
const schema = JSON.parse(readFileSync(join(pkg, "..", "..", "docs", "protocol.schema.json"), "utf8")) as {
  methods: Record<string, { kind: string; direction: string }>;
  errorCodes: Record<string, number>;
  errorActions: string[];
};

function check(file: string): { status: number | null; stderr: string } {
  const run = spawnSync(process.execPath, [script, "--check", file], { cwd: pkg, encoding: "utf8" });
  return { status: run.status, stderr: run.stderr };
}

describe("src/protocol.generated.ts", () => {
  const scratch = mkdtempSync(join(tmpdir(), "protocol-generated-"));
  after(() => rmSync(scratch, { recursive: true, force: true }));

  it("is what the schema generates now", () => {
    const { status, stderr } = check(generated);
    assert.equal(status, 0, `${stderr}run: node scripts/generate-protocol.mjs`);
  });

  it("is found stale when it differs from the schema by one field", () => {
    const stale = join(scratch, "stale.ts");
    const text = readFileSync(generated, "utf8");
    assert.match(text, /export interface AskParams \{\n {2}prompt: string;/);
    writeFileSync(stale, text.replace("  prompt: string;", "  prompt: number;"));
    const { status, stderr } = check(stale);
    assert.equal(status, 1);
    assert.match(stderr, /is stale/);
  });

  it("declares a type for every method of the schema", () => {
    const text = readFileSync(generated, "utf8");
    for (const method of Object.keys(schema.methods)) {
      assert.ok(text.includes(`  "${method}": {`), method);
    }
  });
});

describe("Methods", () => {
  it("names every method of the schema, and the error codes and actions it declares", () => {
    assert.deepEqual(Object.values(Methods), Object.keys(schema.methods));
    assert.equal(Methods.newSession, "agent/newSession");
    assert.deepEqual(ErrorCodes, schema.errorCodes);
    assert.deepEqual(Object.values(ErrorActions), schema.errorActions);
    assert.equal(REQUEST_PERMISSION, Methods.requestPermission);
  });

  it("the generator refuses arguments it does not know", () => {
    assert.throws(() => execFileSync(process.execPath, [script, "--bogus"], { stdio: "pipe" }), {
      status: 2,
    });
  });
});
