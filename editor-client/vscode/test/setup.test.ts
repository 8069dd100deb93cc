import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  describeCheck,
  describeModelStatus,
  KEY_SOURCE_LABEL,
  modelPickItems,
  serverEnvironment,
  validateApiKey,
} from "../src/setup";

describe("serverEnvironment", () => {
  it("adds the stored key to a copy of VS Code's environment", () => {
    const base = { PATH: "/usr/bin", HOME: "/home/u", UNSET: undefined, MODEL_API_KEY: "from-the-shell" };
    const env = serverEnvironment(base, "  sk-stored  ");
    assert.deepEqual(env, {
      PATH: "/usr/bin",
      HOME: "/home/u",
      MODEL_API_KEY: "sk-stored",
      AGENT_LSP_API_KEY_SOURCE: KEY_SOURCE_LABEL,
    });
    assert.equal(base.MODEL_API_KEY, "from-the-shell", "VS Code's own environment is untouched");
  });

  it("leaves the environment alone without a stored key", () => {
    assert.equal(serverEnvironment({ PATH: "/bin" }, undefined), undefined);
    assert.equal(serverEnvironment({ PATH: "/bin" }, "  "), undefined);
  });
});

describe("validateApiKey", () => {
  it("accepts a key and says what is wrong otherwise", () => {
    assert.equal(validateApiKey(" sk-abc "), undefined);
    assert.match(validateApiKey("") ?? "", /Paste/);
    assert.match(validateApiKey("sk a") ?? "", /no spaces/);
  });
});

describe("modelPickItems", () => {
  it("puts the current model first, then the others, then a way to type one", () => {
    const items = modelPickItems({ models: [{ id: "a" }, { id: "cur" }, { id: "b" }, { id: "a" }], current: "cur" });
    assert.deepEqual(items.map((i) => [i.label, i.description, i.id]), [
      ["cur", "current", "cur"],
      ["a", undefined, "a"],
      ["b", undefined, "b"],
      ["$(edit) Type a model name…", "one the endpoint does not list", undefined],
    ]);
  });

  it("offers to type a name when the endpoint lists none", () => {
    const items = modelPickItems({ models: [], current: "gpt-4o-mini" });
    assert.equal(items.length, 1);
    assert.equal(items[0]?.id, undefined);
    assert.equal(items[0]?.description, "the endpoint lists no models");
  });
});

describe("describeModelStatus", () => {
  it("shows the setting, else what the server said, else the server's default", () => {
    assert.equal(describeModelStatus("deepseek-chat", "other").text, "$(sparkle) deepseek-chat");
    assert.match(describeModelStatus("deepseek-chat", undefined).tooltip, /agentLsp\.model/);
    assert.equal(describeModelStatus(" ", "qwen").text, "$(sparkle) qwen");
    assert.equal(describeModelStatus(undefined, undefined).text, "$(sparkle) default model");
  });
});

describe("describeCheck", () => {
  const configured = { name: "configuration", ok: true, message: "Key from VS Code." };
  it("reports success with the request's timing", () => {
    const report = describeCheck({
      ok: true,
      checks: [configured, { name: "models", ok: true, message: "lists 2 models." }, { name: "request", ok: true, message: "m answered in 0.1 s." }],
    });
    assert.equal(report.ok, true);
    assert.equal(report.headline, "The model endpoint works: m answered in 0.1 s.");
    assert.deepEqual(report.lines, ["✓ configuration: Key from VS Code.", "✓ models: lists 2 models.", "✓ request: m answered in 0.1 s."]);
  });

  it("leads with the first failure and offers the fix for its kind", () => {
    const refused = describeCheck({ ok: false, checks: [configured, { name: "models", ok: false, kind: "auth", message: "The endpoint refused the API key." }] });
    assert.equal(refused.headline, "The endpoint refused the API key.");
    assert.deepEqual(refused.actions.map((a) => a.action), ["setApiKey", "openEndpointSettings", "showLog"]);
    // Nothing answers (a refused connection, an unknown host, a timeout): the endpoint's settings, not the key.
    const nothing = describeCheck({
      ok: false,
      checks: [configured, { name: "models", ok: false, kind: "unreachable", message: "Nothing answers at http://127.0.0.1:9/v1 (Connection refused). Check the base URL." }],
    });
    assert.deepEqual(nothing.actions.map((a) => a.title), ["Open Settings", "Show Details"]);
    assert.equal(nothing.actions[0]?.action, "openEndpointSettings");
    const noList = describeCheck({ ok: false, checks: [configured, { name: "models", ok: false, kind: "url", message: "http://x/models did not give a model list (HTTP 404)." }] });
    assert.deepEqual(noList.actions.map((a) => a.action), ["openEndpointSettings", "showLog"]);
    const badModel = describeCheck({
      ok: false,
      checks: [configured, { name: "models", ok: true, message: "" }, { name: "request", ok: false, kind: "model", message: "The test request for gpt-x failed (HTTP 404: no such model)." }],
    });
    assert.deepEqual(badModel.actions.map((a) => a.action), ["selectModel", "openEndpointSettings", "showLog"]);
    const unknown = describeCheck({
      ok: false,
      checks: [configured, { name: "models", ok: true, message: "" }, { name: "model", ok: false, kind: "model", message: "x is not served." }, { name: "request", ok: false, kind: "model", message: "404" }],
    });
    assert.equal(unknown.headline, "x is not served.");
    assert.equal(unknown.actions[0]?.action, "selectModel");
    const noKey = describeCheck({ ok: false, checks: [{ name: "configuration", ok: false, kind: "auth", message: "No model API key." }] });
    assert.deepEqual(noKey.actions.map((a) => a.title), ["Set API Key", "Open Settings", "Show Details"]);
    const noUrl = describeCheck({ ok: false, checks: [{ name: "configuration", ok: false, kind: "url", message: "No model base URL." }] });
    assert.equal(noUrl.actions[0]?.action, "openEndpointSettings");
    const limited = describeCheck({ ok: false, checks: [configured, { name: "request", ok: false, kind: "other", message: "rate-limiting (HTTP 429)" }] });
    assert.deepEqual(limited.actions.map((a) => a.action), ["openSettings", "showLog"]);
  });

  it("goes by the check's action first, then its kind", () => {
    const byAction = describeCheck({
      ok: false,
      checks: [{ name: "configuration", ok: false, kind: "other", action: "setApiKey", message: "No model API key." }],
    });
    assert.deepEqual(byAction.actions.map((a) => a.title), ["Set API Key", "Open Settings", "Show Details"]);
    const model = describeCheck({ ok: false, checks: [configured, { name: "model", ok: false, kind: "model", action: "setModel", message: "x" }] });
    assert.equal(model.actions[0]?.action, "selectModel");
  });

  it("goes by the kind, not the words", () => {
    // The words of one failure under the kind of another: the kind decides.
    const byKind = describeCheck({ ok: false, checks: [configured, { name: "models", ok: false, kind: "unreachable", message: "The endpoint refused the API key (HTTP 401)." }] });
    assert.equal(byKind.actions[0]?.action, "openEndpointSettings");
    const reworded = describeCheck({ ok: false, checks: [configured, { name: "request", ok: false, kind: "model", message: "Unbekanntes Modell gpt-x." }] });
    assert.equal(reworded.actions[0]?.action, "selectModel");
    // No kind (a check that names none) or one this client does not know: nothing to guess from.
    for (const kind of [undefined, null, "quota"]) {
      const failed = { name: "models", ok: false, message: "Nothing answers at http://x (refused the API key).", ...(kind === undefined ? {} : { kind }) };
      const report = describeCheck({ ok: false, checks: [configured, failed] });
      assert.deepEqual(report.actions.map((a) => a.action), ["openSettings", "showLog"], String(kind));
    }
  });
});
