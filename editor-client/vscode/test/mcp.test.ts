import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { configLocations, userConfigFile } from "../src/mcp-config";
import {
  describeMcpStatus,
  McpRefresher,
  type McpServerItem,
  type McpServersUi,
  mcpServerItems,
  newlyAwaiting,
  awaitingNotice,
  showMcpServers,
  STARTING_RECHECKS_MS,
  type Timers,
} from "../src/mcp";
import { permissionDialog, type PermissionRequest } from "../src/permissions";
import type { McpServerInfo, ToolInfo } from "../src/protocol";
import { type ConfigReader, SECTION, toInitializationOptions } from "../src/settings";
import { disabledAfterPick, isTurnedOff, toolPickItems, toolsTitle, toolToggleItems } from "../src/tools-view";
import { FakeServer } from "./fake-server";

function server(overrides: Partial<McpServerInfo> = {}): McpServerInfo {
  return {
    name: "time",
    origin: "user",
    transport: "stdio",
    target: "uvx mcp-server-time",
    state: "ready",
    tools: ["mcp__time__get_current_time", "mcp__time__convert_time"],
    trusted: false,
    warnings: [],
    ...overrides,
  };
}

const FAILED = server({
  name: "tracker",
  state: "failed",
  tools: [],
  error: "\nconnection refused\x1b[8m hidden\nstderr: Traceback (most recent call last):\n  boom",
});
const AWAITING = server({ name: "repo", origin: "workspace", target: "node tools/mcp.js", state: "awaiting-approval", tools: [] });

describe("the MCP status bar item", () => {
  it("is hidden without servers", () => {
    assert.equal(describeMcpStatus([]), undefined);
  });

  it("counts the ready ones of those not disabled, and says each server's state", () => {
    const view = describeMcpStatus([server(), server({ name: "off", state: "disabled", tools: [] }), server({ name: "slow", state: "starting", tools: [] })]);
    assert.equal(view?.text, "$(loading~spin) MCP 1/2");
    assert.equal(view?.attention, "none");
    assert.deepEqual(view?.tooltip.split("\n").slice(1), ["time: ready, 2 tools", "off: disabled", "slow: starting"]);
  });

  it("marks a failure (with its first line, escaped) before an approval", () => {
    const view = describeMcpStatus([server(), FAILED, AWAITING]);
    assert.equal(view?.text, "$(error) MCP 1/3");
    assert.equal(view?.attention, "error");
    assert.ok(view?.tooltip.includes("tracker: failed: connection refused\\e[8m hidden"), view?.tooltip);
    assert.ok(view?.tooltip.includes("repo: awaiting your approval"));
    assert.equal(describeMcpStatus([server(), AWAITING])?.attention, "warning");
    assert.equal(describeMcpStatus([server(), AWAITING])?.text, "$(shield) MCP 1/2");
  });
});

describe("Agent: MCP Servers", () => {
  it("lists each server with its state, tools, origin and error, escaped", () => {
    const hostile = server({ name: "x\u202ey", target: "evil\x1b[2Jcmd", warnings: ["w1", "w2"], trusted: true });
    const items = mcpServerItems([server(), FAILED, AWAITING, hostile]);
    assert.deepEqual(
      items.map(({ label, description, detail }) => ({ label, description, detail })),
      [
        { label: "$(check) time", description: "ready, 2 tools · user file", detail: "uvx mcp-server-time" },
        { label: "$(error) tracker", description: "failed · user file", detail: "connection refused\\e[8m hidden" },
        { label: "$(shield) repo", description: "awaiting your approval · this folder's own", detail: "choose to approve: node tools/mcp.js" },
        { label: "$(check) x\\u202ey", description: "ready, 2 tools · user file · trusted · 2 warnings", detail: "evil\\e[2Jcmd" },
      ],
    );
  });

  function ui(choose: (items: McpServerItem[]) => McpServerItem | undefined, act?: (actions: string[]) => string | undefined) {
    const said: Array<[string, string, string?]> = [];
    const listed: McpServerInfo[][] = [];
    const offered: string[][] = [];
    const shown: McpServersUi = {
      pick: async (items) => choose(items),
      details: (message, detail, actions) => (said.push(["details", message, detail]), offered.push(actions), act?.(actions)),
      failed: (message, detail, actions) => (said.push(["failed", message, detail]), offered.push(actions), act?.(actions)),
      output: (name, text) => void said.push(["output", name, text]),
      none: (message) => void said.push(["none", message]),
      info: (message) => void said.push(["info", message]),
      error: (message) => void said.push(["error", message]),
    };
    return { shown, said, listed, offered, onListed: (servers: McpServerInfo[]) => void listed.push(servers) };
  }

  it("a ready server can be restarted or stopped, a stopped one started; its own output shown", async () => {
    const fake = new FakeServer([]);
    let user = ui((items) => items[0], () => "Stop");
    let done = showMcpServers(fake, { workspaceFolder: "file:///p" }, user.shown, user.onListed);
    (await fake.next("agent/mcpServers")).resolve({ servers: [server()] });
    const stop = await fake.next("agent/controlMcpServer");
    assert.deepEqual(stop.params, { workspaceFolder: "file:///p", name: "time", action: "stop" });
    stop.resolve(server({ state: "stopped", tools: [] }));
    (await fake.next("agent/mcpServers")).resolve({ servers: [server({ state: "stopped", tools: [] })] });
    await done;
    assert.deepEqual(user.offered, [["Restart", "Stop", "Show Output"]]);
    assert.deepEqual(user.said.at(-1), ["info", "Agent: MCP server time stopped: stopped by you."]);
    assert.equal(describeMcpStatus([server({ state: "stopped", tools: [] })])?.text, "$(plug) MCP 0/0");

    user = ui((items) => items[0], (actions) => actions[0]);
    done = showMcpServers(fake, {}, user.shown, user.onListed);
    (await fake.next("agent/mcpServers")).resolve({ servers: [server({ state: "stopped", tools: [] })] });
    const start = await fake.next("agent/controlMcpServer");
    assert.equal((start.params as { action: string }).action, "start");
    start.resolve(server({ state: "starting", tools: [] }));
    (await fake.next("agent/mcpServers")).resolve({ servers: [server({ state: "starting", tools: [] })] });
    await done;
    assert.deepEqual(user.offered, [["Start", "Show Output"]]);

    user = ui((items) => items[0], () => "Show Output");
    done = showMcpServers(fake, {}, user.shown, user.onListed);
    (await fake.next("agent/mcpServers")).resolve({ servers: [server()] });
    (await fake.next("agent/mcpServerLog")).resolve({ name: "time", text: "12:00:00 MCP server time is ready\n--- its stderr ---\nboom\x1b[8m" });
    await done;
    assert.deepEqual(user.said.at(-1), ["output", "time", "12:00:00 MCP server time is ready\n--- its stderr ---\nboom\\e[8m"]);
  });

  it("approves an awaiting server through agent/approveMcpServer, then lists again", async () => {
    const fake = new FakeServer([]);
    const user = ui((items) => items.find((i) => i.server.state === "awaiting-approval"));
    const done = showMcpServers(fake, { workspaceFolder: "file:///p" }, user.shown, user.onListed);
    const first = await fake.next("agent/mcpServers");
    assert.deepEqual(first.params, { workspaceFolder: "file:///p" });
    first.resolve({ servers: [server(), AWAITING] });
    const approve = await fake.next("agent/approveMcpServer");
    assert.deepEqual(approve.params, { workspaceFolder: "file:///p", name: "repo" });
    approve.resolve({ approved: true, state: "starting" });
    (await fake.next("agent/mcpServers")).resolve({ servers: [server(), { ...AWAITING, state: "starting" }] });
    await done;
    assert.deepEqual(user.said, [["info", "Agent: MCP server repo approved: starting."]]);
    assert.deepEqual(user.listed.map((l) => l.map((s) => s.state)), [["ready", "awaiting-approval"], ["ready", "starting"]]);
  });

  it("says so when the user rejects the approval", async () => {
    const fake = new FakeServer([]);
    const user = ui((items) => items[0]);
    const done = showMcpServers(fake, {}, user.shown, user.onListed);
    (await fake.next("agent/mcpServers")).resolve({ servers: [AWAITING] });
    (await fake.next("agent/approveMcpServer")).resolve({ approved: false, state: "awaiting-approval" });
    (await fake.next("agent/mcpServers")).resolve({ servers: [AWAITING] });
    await done;
    assert.deepEqual(user.said, [["info", "Agent: MCP server repo not approved; it is not started."]]);
  });

  it("a rejection for good says so; a rejected server can be approved after all", async () => {
    const fake = new FakeServer([]);
    const user = ui((items) => items[0]);
    const done = showMcpServers(fake, {}, user.shown, user.onListed);
    (await fake.next("agent/mcpServers")).resolve({ servers: [AWAITING] });
    (await fake.next("agent/approveMcpServer")).resolve({ approved: false, state: "rejected" });
    (await fake.next("agent/mcpServers")).resolve({ servers: [{ ...AWAITING, state: "rejected" }] });
    await done;
    assert.match(user.said[0]?.[1] ?? "", /^Agent: MCP server repo rejected; you will not be asked again until its definition changes/);
    const rejected = { ...AWAITING, state: "rejected" };
    assert.equal(mcpServerItems([rejected])[0]?.detail, "choose to approve after all: node tools/mcp.js");
    assert.equal(describeMcpStatus([server(), rejected])?.text, "$(plug) MCP 1/1");
    const again = showMcpServers(fake, {}, user.shown, user.onListed);
    (await fake.next("agent/mcpServers")).resolve({ servers: [rejected] });
    (await fake.next("agent/approveMcpServer")).resolve({ approved: true, state: "starting" });
    (await fake.next("agent/mcpServers")).resolve({ servers: [{ ...AWAITING, state: "starting" }] });
    await again;
    assert.equal(user.said[1]?.[1], "Agent: MCP server repo approved: starting.");
  });

  it("announces a server that starts waiting for approval once, a changed definition again", () => {
    const seen = new Set<string>();
    assert.deepEqual(newlyAwaiting(seen, [server(), AWAITING]).map((s) => s.name), ["repo"]);
    assert.deepEqual(newlyAwaiting(seen, [server(), AWAITING]), []); // the next list: said already
    const changed = { ...AWAITING, target: "node tools/other.js" };
    assert.deepEqual(newlyAwaiting(seen, [changed]).map((s) => s.target), ["node tools/other.js"]);
    assert.deepEqual(newlyAwaiting(seen, [{ ...changed, state: "rejected" }]), []); // a no for good: quiet
    assert.equal(
      awaitingNotice({ ...AWAITING, name: "re\x1b[8mpo" }),
      "Agent: this folder's MCP server re\\e[8mpo is new or changed and waits for your approval (node tools/mcp.js); until then its tools are not available.",
    );
  });

  it("shows a failed server's whole error, its lines kept and escaped", async () => {
    const fake = new FakeServer([]);
    const user = ui((items) => items.find((i) => i.server.state === "failed"));
    const done = showMcpServers(fake, {}, user.shown, user.onListed);
    (await fake.next("agent/mcpServers")).resolve({ servers: [FAILED] });
    await done;
    const [[kind, message, detail]] = user.said as [[string, string, string]];
    assert.equal(kind, "failed");
    assert.equal(message, "Agent: MCP server tracker failed: connection refused\\e[8m hidden");
    assert.ok(detail.includes("Traceback (most recent call last):\n  boom"), detail);
    assert.ok(detail.startsWith("Command: uvx mcp-server-time\nDefined in: user file"), detail);
  });

  it("shows a ready server's tools; says where servers are defined when there are none", async () => {
    const fake = new FakeServer([]);
    const user = ui((items) => items[0]);
    let done = showMcpServers(fake, {}, user.shown, user.onListed);
    (await fake.next("agent/mcpServers")).resolve({ servers: [server()] });
    await done;
    assert.equal(user.said[0]?.[1], "Agent: MCP server time is ready, 2 tools");
    assert.ok(user.said[0]?.[2]?.includes("Tools: mcp__time__get_current_time, mcp__time__convert_time"));
    done = showMcpServers(fake, {}, user.shown, user.onListed);
    (await fake.next("agent/mcpServers")).resolve({ servers: [] });
    await done;
    assert.deepEqual(user.said[1], ["none", "Agent: no MCP server is defined for this folder."]);
  });
});

/** Timers the test fires by hand. */
class ManualTimers implements Timers {
  pending: Array<{ callback: () => void; ms: number }> = [];
  set(callback: () => void, ms: number) {
    const entry = { callback, ms };
    this.pending.push(entry);
    return entry;
  }
  clear(handle: unknown) {
    this.pending = this.pending.filter((p) => p !== handle);
  }
  fire() {
    const next = this.pending.shift();
    assert.ok(next, "no timer pending");
    next.callback();
  }
}

const settle = () => new Promise((r) => setImmediate(r));

describe("McpRefresher", () => {
  it("looks again by itself only while a server is starting, less and less often", async () => {
    const answers = [[server({ state: "starting" })], [server({ state: "starting" })], [server()]];
    let loads = 0;
    const shown: Array<string | undefined> = [];
    const timers = new ManualTimers();
    const refresher = new McpRefresher(
      async () => answers[loads++],
      (servers) => void shown.push(servers?.map((s) => s.state).join()),
      timers,
    );
    await refresher.refresh();
    assert.deepEqual(timers.pending.map((p) => p.ms), [STARTING_RECHECKS_MS[0]]);
    timers.fire();
    await settle();
    assert.deepEqual(timers.pending.map((p) => p.ms), [STARTING_RECHECKS_MS[1]]);
    timers.fire();
    await settle();
    assert.deepEqual(shown, ["starting", "starting", "ready"]);
    assert.equal(timers.pending.length, 0, "ready: no more looking");
    refresher.clear();
    assert.equal(shown.at(-1), undefined);
  });

  it("shares refreshes asked for while one runs: one more after it", async () => {
    let release: () => void = () => {};
    let loads = 0;
    const refresher = new McpRefresher(
      () => {
        loads++;
        return new Promise((resolve) => (release = () => resolve([server()])));
      },
      () => {},
      new ManualTimers(),
    );
    const first = refresher.refresh();
    void refresher.refresh();
    void refresher.refresh();
    release();
    await settle();
    release();
    await first;
    assert.equal(loads, 2);
  });

  it("hides the item when the server cannot answer", async () => {
    const shown: unknown[] = [];
    const refresher = new McpRefresher(() => Promise.reject(new Error("not running")), (s) => void shown.push(s), new ManualTimers());
    await refresher.refresh();
    assert.deepEqual(shown, [undefined]);
  });
});

describe("Agent: List Tools with MCP tools", () => {
  const tools: ToolInfo[] = [
    { name: "read_file", description: "Read.", annotations: { readOnlyHint: true }, source: { kind: "builtin" } },
    { name: "mcp__tb__echo", title: "Echo", description: "[tb] Echo\x1b[8m.", annotations: { readOnlyHint: true }, source: { kind: "mcp", server: "tb" } },
    { name: "mcp__tb__write_note", description: "[tb] Note.", annotations: { readOnlyHint: false, destructiveHint: true }, source: { kind: "mcp", server: "tb" } },
  ];

  it("groups them under their server, built-ins first", () => {
    assert.deepEqual(toolPickItems(tools), [
      { separator: "built-in" },
      { label: "$(eye) read_file", description: "read-only", detail: "Read." },
      { separator: "tb (MCP)" },
      { label: "$(eye) mcp__tb__echo", description: "read-only · Echo · tb (MCP)", detail: "[tb] Echo\\e[8m." },
      { label: "$(warning) mcp__tb__write_note", description: "destructive · tb (MCP)", detail: "[tb] Note." },
    ]);
    assert.equal(toolsTitle(tools), "Agent tools (3: 1 built-in, 2 from MCP servers)");
  });

  it("Configure Tools: the same groups, each checked unless this conversation turned it off", () => {
    const items = toolToggleItems(tools, ["mcp__tb__write_note"]);
    assert.deepEqual(
      items.map((i) => ("separator" in i ? i.separator : `${i.name}:${i.picked}`)),
      ["built-in", "read_file:true", "tb (MCP)", "mcp__tb__echo:true", "mcp__tb__write_note:false"],
    );
    const all = toolToggleItems(tools, ["mcp__tb__*"]);
    assert.deepEqual(all.flatMap((i) => ("separator" in i || i.picked ? [] : [i.name])), ["mcp__tb__echo", "mcp__tb__write_note"]);
    assert.equal(isTurnedOff("mcp__tbx__echo", ["mcp__tb__*"]), false);
  });

  it("Configure Tools: what is unchecked becomes disabledTools, a server with every tool off as mcp__SERVER__*", () => {
    assert.deepEqual(disabledAfterPick(tools, new Set(["read_file", "mcp__tb__echo"])), ["mcp__tb__write_note"]);
    assert.deepEqual(disabledAfterPick(tools, new Set(["read_file"])), ["mcp__tb__*"]);
    assert.deepEqual(disabledAfterPick(tools, new Set()), ["mcp__tb__*", "read_file"]);
    assert.deepEqual(disabledAfterPick(tools, new Set(tools.map((t) => t.name))), []);
  });

  it("lists built-ins alone as before, a tool without source among them", () => {
    const builtin = [{ name: "glob", description: "Find." }];
    assert.deepEqual(toolPickItems(builtin), [{ label: "$(edit) glob", description: "", detail: "Find." }]);
    assert.equal(toolsTitle(builtin), "Agent tools (1)");
  });
});

describe("permission dialogs of MCP", () => {
  const options = ["allow_once", "allow_always", "reject_once", "reject_always"].map((kind) => ({ optionId: kind, name: kind, kind }));

  it("an MCP tool: its arguments in full, 'always' covering the tool", () => {
    const request: PermissionRequest = {
      sessionId: "s",
      callId: "c",
      toolName: "mcp__tb__write_note",
      arguments: { text: "n1\x1b[8m" },
      title: 'Run mcp__tb__write_note on MCP server tb: {"text": "n1\\e[8m"}',
      reason: "MCP servers run outside the sandbox, with your rights; tb does not declare it read-only.",
      options,
      alwaysScope: "Any call of write_note on MCP server tb, with any arguments, for this conversation",
    };
    const dialog = permissionDialog(request);
    assert.deepEqual(dialog.buttons.map((b) => b.label), ["Allow Once", "Always Allow", "Reject", "Always Reject"]);
    assert.ok(dialog.detail.startsWith('Arguments:\n{\n  "text": "n1\\u001b[8m"\n}'), dialog.detail);
    assert.ok(!/\x1b/.test(dialog.detail));
    assert.ok(dialog.detail.includes("“Always” allows: Any call of write_note on MCP server tb, with any arguments"));
  });

  it("a workspace server's approval: what it runs, all of it; approve or reject", () => {
    const request: PermissionRequest = {
      sessionId: "",
      callId: "mcp-approval-1",
      toolName: "mcp_server",
      arguments: { name: "repo", folder: "/p", transport: "stdio", command: "node", args: ["tools/mcp.js", "a b"], env: { LD_PRELOAD: "/p/x.so" }, cwd: "/p" },
      title: "Start MCP server repo of /p: node tools/mcp.js a b",
      reason: "The folder's own MCP definitions name the command node tools/mcp.js a b; …",
      options,
    };
    const dialog = permissionDialog(request);
    // The user asked (not "The agent asks"); Reject first, so the focused button starts nothing.
    assert.equal(dialog.message, "Approve? Start MCP server repo of /p: node tools/mcp.js a b");
    assert.deepEqual(dialog.buttons, [
      { label: "Reject", optionId: "reject_once" },
      { label: "Approve and Start", optionId: "allow_once" },
      { label: "Reject, Don't Ask Again", optionId: "reject_always" },
    ]);
    const lines = dialog.detail.split("\n");
    for (const line of ["Command: node", 'Arguments: ["tools/mcp.js","a b"]', "Environment:", "  LD_PRELOAD=/p/x.so", "Working folder: /p"]) {
      assert.ok(lines.includes(line), `${line}\n${dialog.detail}`);
    }
    assert.ok(!dialog.detail.includes("“Always”"));
    const http = permissionDialog({ ...request, arguments: { transport: "http", url: "https://x/mcp", headers: { "X-Team": "core" } } });
    assert.ok(http.detail.startsWith("URL: https://x/mcp\nHeaders:\n  X-Team=core"), http.detail);
  });
});

describe("Agent: Open MCP Configuration", () => {
  it("finds the user file as the server does", () => {
    assert.equal(userConfigFile({ XDG_CONFIG_HOME: "/x/config", HOME: "/home/me" }), "/x/config/agent-lsp/config.toml");
    assert.equal(userConfigFile({ XDG_CONFIG_HOME: "relative", HOME: "/home/me" }), "/home/me/.config/agent-lsp/config.toml");
    assert.equal(userConfigFile({}), undefined);
  });

  it("offers the user file, the setting and each folder's files, in the order they are read", () => {
    const locations = configLocations({ path: "/home/me/.config/agent-lsp/config.toml", exists: false }, [
      { name: "app", path: "/w/app", vscodeMcpJson: true, mcpJson: true },
      { name: "lib", path: "/w/lib", vscodeMcpJson: false, mcpJson: false },
    ]);
    assert.deepEqual(
      locations.map((l) => [l.where, l.label, "path" in l ? l.path : undefined]),
      [
        ["userFile", "$(file) User configuration file", "/home/me/.config/agent-lsp/config.toml"],
        ["setting", "$(settings-gear) Setting agentLsp.mcpServers", undefined],
        ["workspaceFile", "$(folder) app: .vscode/mcp.json", "/w/app/.vscode/mcp.json"],
        ["workspaceFile", "$(folder) app: .mcp.json", "/w/app/.mcp.json"],
        ["workspaceFile", "$(folder) lib: .vscode/mcp.json", "/w/lib/.vscode/mcp.json"],
      ],
    );
    assert.match(locations[0]?.description ?? "", /not created yet/);
    assert.match(locations[4]?.description ?? "", /unsaved/);
  });
});

describe("the mcpServers setting", () => {
  it("is forwarded from the user's settings only, never a workspace's", () => {
    const servers = { time: { command: "uvx", args: ["mcp-server-time"] } };
    const reader = (user: Record<string, unknown>, workspace: Record<string, unknown>): ConfigReader => ({
      get: <T>(key: string) => (workspace[key] ?? user[key]) as T | undefined,
      inspect: <T>(key: string) => ({
        key: `${SECTION}.${key}`,
        ...(key in user ? { globalValue: user[key] as T } : {}),
        ...(key in workspace ? { workspaceValue: workspace[key] as T } : {}),
      }),
    });
    assert.deepEqual(toInitializationOptions(reader({ mcpServers: servers }, {})).mcpServers, servers);
    assert.equal(toInitializationOptions(reader({}, { mcpServers: { evil: { command: "sh" } } })).mcpServers, undefined);
  });
});
