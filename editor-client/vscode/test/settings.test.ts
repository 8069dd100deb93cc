import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  type ConfigReader,
  serverCommand,
  toDidChangeConfigurationParams,
  toInitializationOptions,
} from "../src/settings";

function reader(values: Record<string, unknown>): ConfigReader {
  return { get: <T>(key: string) => values[key] as T | undefined };
}

describe("toInitializationOptions", () => {
  it("maps every setting the server reads", () => {
    const options = toInitializationOptions(
      reader({
        model: "deepseek-chat",
        baseUrl: " https://api.deepseek.com/v1 ",
        maxTurns: 12,
        enabledTools: ["read_file", "glob"],
        bashTimeout: 30,
        systemPrompt: "Be brief.\n",
        requestTimeout: 90,
        "server.command": ["agent-lsp"],
        "trace.revealOnFirstAsk": true,
      }),
    );
    assert.deepEqual(options, {
      model: "deepseek-chat",
      baseUrl: "https://api.deepseek.com/v1",
      maxTurns: 12,
      enabledTools: ["read_file", "glob"],
      bashTimeout: 30,
      systemPrompt: "Be brief.\n",
      requestTimeout: 90,
    });
  });

  it("omits settings left at 'server default' so the server's env / .env apply", () => {
    const options = toInitializationOptions(
      reader({ model: "", baseUrl: "   ", bashTimeout: 0, requestTimeout: 0, systemPrompt: " " }),
    );
    assert.deepEqual(options, {});
  });

  it("never carries an API key, even if one is configured", () => {
    const options = toInitializationOptions(reader({ apiKey: "sk-secret", model: "m" }));
    assert.deepEqual(options, { model: "m" });
    assert.ok(!JSON.stringify(options).includes("sk-secret"));
  });

  it("drops bad values instead of sending them", () => {
    const options = toInitializationOptions(
      reader({ maxTurns: -3, bashTimeout: Number.NaN, model: 42, enabledTools: "bash" }),
    );
    assert.deepEqual(options, {});
  });

  it("keeps an explicitly empty tool list, dedupes and trims names", () => {
    assert.deepEqual(toInitializationOptions(reader({ enabledTools: [] })), { enabledTools: [] });
    assert.deepEqual(
      toInitializationOptions(reader({ enabledTools: ["bash", " bash", 3, "glob"] })),
      { enabledTools: ["bash", "glob"] },
    );
  });

  it("floors a fractional maxTurns", () => {
    assert.deepEqual(toInitializationOptions(reader({ maxTurns: 7.9 })), { maxTurns: 7 });
  });

  it("wraps the same options for didChangeConfiguration", () => {
    assert.deepEqual(toDidChangeConfigurationParams(reader({ model: "m", maxTurns: 3 })), {
      settings: { agentLsp: { model: "m", maxTurns: 3 } },
    });
  });
});

describe("serverCommand", () => {
  it("defaults to agent-lsp on PATH", () => {
    assert.deepEqual(serverCommand(reader({})), { ok: true, command: "agent-lsp", args: [] });
  });

  it("splits program and arguments", () => {
    assert.deepEqual(
      serverCommand(reader({ "server.command": ["uv", "run", "--directory", "/repo", "agent-lsp"] })),
      { ok: true, command: "uv", args: ["run", "--directory", "/repo", "agent-lsp"] },
    );
  });

  it("accepts a string typed by hand and expands ~", () => {
    const home = process.env.HOME;
    process.env.HOME = "/home/me";
    try {
      assert.deepEqual(serverCommand(reader({ "server.command": " ~/bin/agent-lsp  --verbose" })), {
        ok: true,
        command: "/home/me/bin/agent-lsp",
        args: ["--verbose"],
      });
    } finally {
      process.env.HOME = home;
    }
  });

  it("explains what is wrong with a bad value", () => {
    for (const bad of [[], [""], [1, 2], {}, ""]) {
      const result = serverCommand(reader({ "server.command": bad }));
      assert.equal(result.ok, false, JSON.stringify(bad));
      if (!result.ok) assert.match(result.error, /agentLsp\.server\.command/);
    }
  });
});
