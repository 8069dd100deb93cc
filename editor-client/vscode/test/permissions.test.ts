import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  answerPermission,
  callSubject,
  type CancelSignal,
  PERMISSION_CAPABILITY,
  type PermissionRequest,
  PermissionRequests,
  permissionCapabilityFeature,
  type PermissionCard,
  permissionCard,
  permissionDialog,
  type PermissionUi,
  QUOTE_CHARS,
  QUOTE_LINES,
  quote,
} from "../src/permissions";

function request(overrides: Partial<PermissionRequest> = {}): PermissionRequest {
  return {
    sessionId: "s1",
    callId: "call_1",
    toolName: "bash",
    arguments: { command: "npm ci --no-audit", escalation: "network", justification: "install" },
    title: "Run with network access: npm ci --no-audit",
    reason: "install the dependencies",
    options: [
      { optionId: "allow_once", name: "Allow once", kind: "allow_once" },
      { optionId: "allow_always", name: "Allow always", kind: "allow_always" },
      { optionId: "reject_once", name: "Reject", kind: "reject_once" },
      { optionId: "reject_always", name: "Reject always", kind: "reject_always" },
    ],
    alwaysScope: "This exact command, for this conversation (a changed command asks again)",
    ...overrides,
  };
}

/** A user at the dialog: records what was shown, clicks `label` (or never answers). */
function user(label: string | undefined | "never"): PermissionUi & { shown: Array<{ message: string; detail: string; buttons: string[] }> } {
  const shown: Array<{ message: string; detail: string; buttons: string[] }> = [];
  return {
    shown,
    ask(message, detail, buttons) {
      shown.push({ message, detail, buttons });
      if (label === "never") return new Promise(() => {});
      return Promise.resolve(label);
    },
  };
}

class Token implements CancelSignal {
  isCancellationRequested = false;
  private listeners: Array<() => void> = [];
  onCancellationRequested(listener: () => void) {
    this.listeners.push(listener);
    return { dispose: () => (this.listeners = this.listeners.filter((l) => l !== listener)) };
  }
  cancel() {
    this.isCancellationRequested = true;
    for (const listener of this.listeners) listener();
  }
}

describe("the permission dialog", () => {
  it("shows the command in full, the reason and the four choices", () => {
    const dialog = permissionDialog(request());
    assert.equal(dialog.message, "The agent asks: Run with network access: npm ci --no-audit");
    assert.match(dialog.detail, /^Command:\nnpm ci --no-audit\n\nReason: install the dependencies\n/);
    assert.deepEqual(
      dialog.buttons.map((b) => b.label),
      ["Allow Once", "Always Allow", "Reject", "Always Reject"],
    );
  });

  it("names the file of a write", () => {
    const dialog = permissionDialog(
      request({ toolName: "write_file", arguments: { path: "src/a.ts", content: "x" }, title: "Write file: src/a.ts", reason: "" }),
    );
    assert.match(dialog.detail, /^File: src\/a\.ts\n/);
    assert.doesNotMatch(dialog.detail, /Reason/);
  });
});

describe("what a write or an edit under approval \"always\" shows", () => {
  it("quotes an edit's old text and its replacement", () => {
    const dialog = permissionDialog(
      request({
        toolName: "edit_file",
        arguments: { path: "src/a.ts", old_text: "const x = 1;", new_text: "const x = 2;\nconst y = 3;" },
        title: "Edit file: src/a.ts",
        reason: "",
      }),
    );
    assert.match(dialog.detail, /^File: src\/a\.ts\nReplaces:\nconst x = 1;\nWith:\nconst x = 2;\nconst y = 3;\n\n/);
  });

  it("says when an edit replaces every occurrence", () => {
    const lines = callSubject("edit_file", { path: "a", old_text: "a", new_text: "b", replace_all: true });
    assert.deepEqual(lines, ["File: a", "Replaces (every occurrence):", "a", "With:", "b"]);
  });

  it("gives a write's size and first lines, and says it shortened them", () => {
    const content = Array.from({ length: 40 }, (_, i) => `line ${i + 1}`).join("\n") + "\n";
    const lines = callSubject("write_file", { path: "notes.txt", content });
    const bytes = new TextEncoder().encode(content).length;
    assert.deepEqual(lines.slice(0, 3), ["File: notes.txt", `Writes 40 lines (${bytes} bytes):`, "line 1"]);
    assert.equal(lines.length, 2 + QUOTE_LINES + 1);
    assert.equal(lines[1 + QUOTE_LINES], `line ${QUOTE_LINES}`);
    assert.match(lines.at(-1) ?? "", /^… \(shortened: 29 more lines, \d+ more characters\)$/);
  });

  it("cuts one very long line by characters", () => {
    const long = "x".repeat(QUOTE_CHARS + 500);
    assert.deepEqual(quote(long), ["x".repeat(QUOTE_CHARS), "… (shortened: 500 more characters)"]);
    assert.deepEqual(quote("short\ntext"), ["short", "text"]);
  });

  it("counts bytes, not characters, and says an empty write is empty", () => {
    assert.equal(callSubject("write_file", { path: "u", content: "é\n" })[1], "Writes 1 line (3 bytes):");
    assert.equal(callSubject("write_file", { path: "e", content: "" })[1], "Writes 0 lines (0 bytes):");
  });
});

describe("answerPermission", () => {
  for (const [label, optionId] of [
    ["Allow Once", "allow_once"],
    ["Always Allow", "allow_always"],
    ["Reject", "reject_once"],
    ["Always Reject", "reject_always"],
  ] as const) {
    it(`answers ${optionId} for "${label}"`, async () => {
      assert.deepEqual(await answerPermission(request(), user(label)), {
        outcome: { outcome: "selected", optionId },
      });
    });
  }

  it("treats Cancel/Escape as a dismissed request", async () => {
    assert.deepEqual(await answerPermission(request(), user(undefined)), { outcome: { outcome: "cancelled" } });
  });

  it("answers at once when the server withdraws the request while the dialog is open", async () => {
    const token = new Token();
    const ui = user("never");
    const answer = answerPermission(request(), ui, token);
    await Promise.resolve();
    assert.equal(ui.shown.length, 1);
    token.cancel();
    assert.deepEqual(await answer, { outcome: { outcome: "cancelled" } });
  });

  it("does not show a request that was withdrawn before it arrived", async () => {
    const token = new Token();
    token.cancel();
    const ui = user("Allow Once");
    assert.deepEqual(await answerPermission(request(), ui, token), { outcome: { outcome: "cancelled" } });
    assert.equal(ui.shown.length, 0);
  });
});

describe("the chat's permission card", () => {
  it("shows the command once (in the code block, not the title), the reason, what always covers, the four choices", () => {
    const card = permissionCard(request());
    assert.equal(card.title, "Run with network access");
    assert.equal(card.code, "npm ci --no-audit");
    assert.equal(card.body, "Reason: install the dependencies\n“Always” allows: This exact command, for this conversation (a changed command asks again)");
    assert.deepEqual(card.buttons.map((b) => b.label), ["Allow Once", "Always Allow", "Reject", "Always Reject"]);
  });

  it("says what “always” allows in the server's words only: a network grant covers any command to that host", () => {
    const scope = "Network access to localhost for any command, through the proxy, for this conversation";
    const card = permissionCard(request({ title: "Run with network access to localhost only: curl localhost:8000", arguments: { command: "curl localhost:8000" }, alwaysScope: scope }));
    assert.equal(card.body, `Reason: install the dependencies\n“Always” allows: ${scope}`);
    assert.doesNotMatch(card.body, /exact call|changed command/);
    assert.deepEqual(card.buttons.map((b) => b.label), ["Allow Once", "Always Allow", "Reject", "Always Reject"]);
    assert.match(permissionDialog(request({ alwaysScope: scope })).detail, /\n\n“Always” allows: Network access to localhost for any command/);
    // An MCP tool's grant: the server's sentence, not a label of the client's.
    const mcp = permissionCard(request({ toolName: "mcp__time__set", arguments: { tz: "UTC" }, title: "Run set on MCP server time", alwaysScope: "Any call of set on MCP server time, with any arguments, for this conversation" }));
    assert.match(mcp.body, /“Always” allows: Any call of set on MCP server time, with any arguments, for this conversation$/);
    // No scope sent (an older server): no sentence made up in its place; escaped when sent.
    assert.doesNotMatch(permissionCard(request({ alwaysScope: null })).body, /Always/);
    assert.match(permissionCard(request({ alwaysScope: "x\u001b[8my" })).body, /“Always” allows: x\\e\[8my$/);
  });

  it("keeps a multi-line command's lines and the server's title when it does not end with the command", () => {
    const card = permissionCard(request({ arguments: { command: "a\nb" }, title: "Run without a sandbox: a⏎b", reason: "" }));
    assert.equal(card.title, "Run without a sandbox");
    assert.equal(card.code, "a\nb");
    const other = permissionCard(request({ title: "Something else", reason: "" }));
    assert.equal(other.title, "Something else");
  });

  it("names the file of a write in the body, with no code block", () => {
    const card = permissionCard(request({ toolName: "write_file", arguments: { path: "src/a.ts", content: "x" }, title: "Write file: src/a.ts", reason: "" }));
    assert.equal(card.code, undefined);
    assert.match(card.body, /^File: src\/a\.ts\nWrites 1 line \(1 byte\):\nx\n/);
  });

  it("shows a write to what git obeys with its file, why, and the whole new content (issue 33)", () => {
    const content = "[core]\n\tfsmonitor = touch /tmp/x\u202e\n";
    const req = request({
      toolName: "write_file",
      arguments: { path: ".git/config", content },
      title: "Write a file git obeys: .git/config",
      reason: `.git/config is a git configuration. Git runs what such a file names (a hook, core.fsmonitor, a filter) whenever you run git, outside the sandbox, with your rights. New content:\n${content}`,
      alwaysScope: "This exact call, for this conversation",
    });
    const card = permissionCard(req);
    assert.equal(card.title, "Write a file git obeys: .git/config");
    assert.equal(card.code, undefined);
    assert.match(card.body, /^File: \.git\/config\n/);
    assert.match(card.body, /fsmonitor = touch \/tmp\/x\\u202e/); // the bidi override spelled out
    assert.match(card.body, /outside the sandbox, with your rights/);
    assert.deepEqual(card.buttons.map((b) => b.label), ["Allow Once", "Always Allow", "Reject", "Always Reject"]);
    const dialog = permissionDialog(req);
    assert.match(dialog.message, /Write a file git obeys: \.git\/config/);
    assert.match(dialog.detail, /fsmonitor = touch/);
  });

  it("is answered on the card when the chat shows it: the clicked label is the answer, the modal never opens", async () => {
    const ui = user("Allow Once");
    const cards: PermissionCard[] = [];
    const inline: PermissionUi = { ...ui, inline: (_req, card) => (cards.push(card), Promise.resolve("Reject")) };
    assert.deepEqual(await answerPermission(request(), inline), { outcome: { outcome: "selected", optionId: "reject_once" } });
    assert.equal(cards.length, 1);
    assert.equal(ui.shown.length, 0);
  });

  it("falls back to the modal when no card can show it, and a withdrawn card answers cancelled", async () => {
    const ui = user("Allow Once");
    assert.deepEqual(await answerPermission(request(), { ...ui, inline: () => undefined }), { outcome: { outcome: "selected", optionId: "allow_once" } });
    assert.equal(ui.shown.length, 1);
    const token = new Token();
    let withdrawnSeen = false;
    const answer = answerPermission(request(), { ...ui, inline: (_r, _c, withdrawn) => (void withdrawn.then(() => (withdrawnSeen = true)), new Promise(() => {})) }, token);
    token.cancel();
    assert.deepEqual(await answer, { outcome: { outcome: "cancelled" } });
    await Promise.resolve();
    assert.ok(withdrawnSeen);
  });
});

describe("PermissionRequests", () => {
  it("tells listeners (the Agent view) of each request and its answer", async () => {
    const requests = new PermissionRequests(user("Reject"));
    const seen: string[] = [];
    const subscription = requests.onRequest((req, answer) => {
      void answer.then((result) => seen.push(`${req.callId}:${JSON.stringify(result.outcome)}`));
    });
    await requests.handle(request());
    subscription.dispose();
    await requests.handle(request({ callId: "call_2" }));
    assert.deepEqual(seen, ['call_1:{"outcome":"selected","optionId":"reject_once"}']);
  });

  it("declares the client capability", () => {
    const capabilities: { experimental?: unknown } = { experimental: { other: 1 } };
    permissionCapabilityFeature().fillClientCapabilities(capabilities);
    assert.deepEqual(capabilities.experimental, { other: 1, ...PERMISSION_CAPABILITY });
  });
});
