import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { describeAskError } from "../src/errors";
import { ErrorActions, ErrorCodes } from "../src/protocol";
import { describeStatus } from "../src/status";
import { toolPickItems } from "../src/tools-view";

describe("describeAskError", () => {
  it("recognises a cancelled request", () => {
    const report = describeAskError({ code: -32800, message: "Request cancelled" });
    assert.equal(report.cancelled, true);
    assert.equal(report.message, "Agent request cancelled.");
  });

  it("keeps the server's message and offers the key, the check and settings when unconfigured", () => {
    const report = describeAskError({ code: -32001, message: "No API key: set MODEL_API_KEY in the server's .env" });
    assert.equal(report.cancelled, false);
    assert.equal(report.message, "No API key: set MODEL_API_KEY in the server's .env");
    assert.deepEqual(report.actions.map((a) => a.action), ["setApiKey", "checkConnection", "openSettings"]);
  });

  it("words the error's action as this client's buttons (the server's message names no editor)", () => {
    const noKey = describeAskError({
      code: ErrorCodes.modelNotConfigured,
      message: "No model API key. Run `agent-lsp config set-key`; or set MODEL_API_KEY.",
      data: { action: ErrorActions.setApiKey },
    });
    assert.equal(noKey.kind, "notConfigured");
    assert.deepEqual(noKey.actions.map((a) => a.title), ["Set API Key", "Check Connection", "Open Settings"]);
    const noUrl = describeAskError({ code: ErrorCodes.modelNotConfigured, message: "No model base URL.", data: { action: "setBaseUrl" } });
    assert.deepEqual(noUrl.actions.map((a) => a.action), ["openEndpointSettings", "checkConnection"]);
    const noModel = describeAskError({ code: ErrorCodes.modelNotConfigured, message: "No model.", data: { action: "setModel" } });
    assert.equal(noModel.actions[0]?.action, "selectModel");
    // An action this client does not know yet: the key first, as without one.
    const unknown = describeAskError({ code: ErrorCodes.modelNotConfigured, message: "x", data: { action: "setSomething" } });
    assert.equal(unknown.actions[0]?.action, "setApiKey");
  });

  it("points an authentication failure to the key, not to settings that cannot hold it", () => {
    const report = describeAskError({ code: -32002, message: "HTTP 401: invalid key", data: { status: 401, kind: "status", attempts: 1 } });
    assert.equal(report.kind, "auth");
    assert.deepEqual(report.actions.map((a) => a.action), ["setApiKey", "checkConnection"]);
    assert.ok(!report.actions.some((a) => a.action === "openSettings"));
  });

  it("says how often a 5xx or a timeout was tried and offers Retry", () => {
    const report = describeAskError({
      code: -32002,
      message: "The model request timed out",
      data: { status: null, kind: "timeout", attempts: 3, elapsedMs: 365_000 },
    });
    assert.equal(report.kind, "transient");
    assert.equal(report.message, "The model request timed out (3 attempts over 6m05s)");
    assert.equal(report.actions[0]?.action, "retry");
    const server = describeAskError({ code: -32002, message: "HTTP 503 after 2 attempts", data: { status: 503, attempts: 2 } });
    assert.equal(server.message, "HTTP 503 after 2 attempts", "not said twice");
    assert.equal(server.actions[0]?.action, "retry");
  });

  it("points a refused connection or an unknown host to the endpoint's settings, a 404 to the model picker", () => {
    const refused = describeAskError({ code: -32002, message: "Cannot reach http://127.0.0.1:9/v1: Connection refused", data: { status: null, kind: "connection", attempts: 3 } });
    assert.deepEqual(refused.actions.map((a) => a.title), ["Open Settings", "Retry", "Check Connection", "Show Server Log"]);
    assert.equal(refused.actions[0]?.action, "openEndpointSettings");
    const missing = describeAskError({ code: -32002, message: "HTTP 404: model gpt-x does not exist", data: { status: 404, kind: "status" } });
    assert.deepEqual(missing.actions.map((a) => a.action), ["selectModel", "openEndpointSettings", "checkConnection"]);
  });

  it("offers to open a folder when none is open, the log otherwise", () => {
    assert.deepEqual(describeAskError({ code: -32003, message: "no folder" }).actions.map((a) => a.action), ["openFolder"]);
    assert.deepEqual(describeAskError({ code: -32002, message: "bad request", data: { status: 400 } }).actions.map((a) => a.action), ["retry", "checkConnection", "openSettings"]);
    assert.deepEqual(describeAskError(new Error("boom")).actions.map((a) => a.action), ["showLog"]);
    assert.equal(describeAskError(undefined).message, "Unknown error");
  });
});

describe("status", () => {
  it("describes each state", () => {
    assert.equal(describeStatus({ kind: "idle" }).text, "$(hubot) Agent: idle");
    assert.equal(describeStatus({ kind: "working", turn: 2 }).text, "$(sync~spin) Agent: working: turn 2");
    assert.equal(describeStatus({ kind: "working" }).text, "$(sync~spin) Agent: working");
    const error = describeStatus({ kind: "error", message: "401 Unauthorized" });
    assert.equal(error.isError, true);
    assert.match(error.tooltip, /401 Unauthorized/);
  });

});

describe("toolPickItems", () => {
  it("marks read-only and destructive tools", () => {
    const items = toolPickItems([
      { name: "read_file", description: "Read a file.", annotations: { readOnlyHint: true } },
      { name: "bash", title: "Run a command", description: "Run\n a shell command.", annotations: { readOnlyHint: false, destructiveHint: true } },
      { name: "write_file", description: "Write.", annotations: { readOnlyHint: false, destructiveHint: false } },
    ]);
    assert.deepEqual(items, [
      { label: "$(eye) read_file", description: "read-only", detail: "Read a file." },
      { label: "$(warning) bash", description: "destructive · Run a command", detail: "Run a shell command." },
      { label: "$(edit) write_file", description: "writes", detail: "Write." },
    ]);
  });
});
