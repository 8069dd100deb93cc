import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import type { SandboxStatus } from "../src/protocol";
import { describeSandbox, type SandboxUi, type SandboxView, showSandboxStatus } from "../src/sandbox";
import { describeStatus } from "../src/status";
import { FakeServer } from "./fake-server";

interface Case {
  name: string;
  status: SandboxStatus;
  kind: string;
  summary: string;
  lines: string[];
}

// out/test/sandbox.test.js -> the repository's tests/support: the lines every client shows.
const { cases } = JSON.parse(
  readFileSync(join(__dirname, "..", "..", "..", "..", "tests", "support", "sandbox_cases.json"), "utf8"),
) as { cases: Case[] };
const byName = (name: string): Case => {
  const found = cases.find((c) => c.name === name);
  assert.ok(found, name);
  return found;
};

function user() {
  const shown: SandboxView[] = [];
  const errors: string[] = [];
  const ui: SandboxUi = {
    show: (view) => void shown.push(view),
    error: (message) => void errors.push(message),
  };
  return { ui, shown, errors };
}

describe("Agent: Sandbox Status", () => {
  it("shows each status as every client does: its kind, summary and lines", () => {
    assert.ok(cases.length >= 5);
    for (const c of cases) {
      assert.deepEqual(describeSandbox(c.status), { kind: c.kind, summary: c.summary, lines: c.lines }, c.name);
    }
  });

  it("asks the server about the current folder and shows its answer", async () => {
    const server = new FakeServer([]);
    const { ui, shown, errors } = user();
    const done = showSandboxStatus(server, { workspaceFolder: "file:///home/me/project" }, ui);
    const request = await server.next("agent/sandboxStatus");
    assert.deepEqual(request.params, { workspaceFolder: "file:///home/me/project" });
    request.resolve(byName("fallback").status);
    const view = await done;
    assert.equal(view?.kind, "weakened");
    assert.deepEqual(shown, [view]);
    assert.ok(view?.lines.includes("weaker than the full sandbox: bwrap: setting up uid map: Permission denied"));
    assert.deepEqual(errors, []);
  });

  it("says why when the server cannot answer", async () => {
    const server = new FakeServer([]);
    const { ui, shown, errors } = user();
    const done = showSandboxStatus(server, {}, ui);
    (await server.next("agent/sandboxStatus")).reject({ code: -32601, message: "Method Not Found: agent/sandboxStatus" });
    assert.equal(await done, undefined);
    assert.deepEqual(shown, []);
    assert.deepEqual(errors, ["Agent: could not get the sandbox status: Method Not Found: agent/sandboxStatus"]);
  });
});

describe("the status bar's sandbox mark", () => {
  it("marks a weakened, absent or switched-off sandbox, and says so in the tooltip", () => {
    for (const name of ["fallback", "none", "off"]) {
      const view = describeSandbox(byName(name).status);
      const status = describeStatus({ kind: "idle" }, view);
      assert.equal(status.text, "$(hubot) Agent: idle $(warning)", name);
      assert.ok(status.tooltip.startsWith("agent-lsp is ready"), name);
      assert.match(status.tooltip, /\(Agent: Sandbox Status says more\)$/, name);
    }
    const weakened = describeStatus({ kind: "working", turn: 2 }, describeSandbox(byName("fallback").status));
    assert.equal(weakened.text, "$(sync~spin) Agent: working: turn 2 $(warning)");
    assert.match(weakened.tooltip, /\n\nSandbox: workspace-write, weaker here: bwrap: setting up uid map/);
  });

  it("shows no mark for the full sandbox, nor while the server is stopped", () => {
    const full = describeStatus({ kind: "idle" }, describeSandbox(byName("full").status));
    assert.equal(full.text, "$(hubot) Agent: idle");
    assert.match(full.tooltip, /\n\nSandbox: workspace-write, every layer in force$/);
    const stopped = describeStatus({ kind: "stopped", message: "gone" }, describeSandbox(byName("off").status));
    assert.deepEqual(stopped, describeStatus({ kind: "stopped", message: "gone" }));
    assert.deepEqual(describeStatus({ kind: "idle" }), {
      text: "$(hubot) Agent: idle",
      tooltip: "agent-lsp is ready — click to open the Agent chat",
      isError: false,
    });
  });
});
