import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { BUILTIN_COMMANDS, builtinRoute, type CommandChoice, filterCommands, parseBuiltin } from "../src/slash-commands";
import { completionAt, insertCommand, moveSelection, removeMention, triggerKey } from "../src/webview/completion";

const commands: CommandChoice[] = [
  ...BUILTIN_COMMANDS,
  { name: "review", description: "Review the staged changes", source: "workspace", argumentHint: "[focus]" },
  { name: "explain-code", description: "Explain a piece of code", source: "user" },
];
const names = (list: CommandChoice[]) => list.map((c) => c.name);

describe("the / commands offered", () => {
  it("lists all of them for a bare /, built-ins first as the server sends them", () => {
    assert.deepEqual(names(filterCommands(commands, "")), ["compact", "new", "checkpoints", "undo", "review", "explain-code"]);
  });

  it("filters as the user types: names starting with it, then containing it, then descriptions", () => {
    assert.deepEqual(names(filterCommands(commands, "re")), ["review"]);
    assert.deepEqual(names(filterCommands(commands, "RE")), ["review"]);
    assert.deepEqual(names(filterCommands(commands, "co")), ["compact", "explain-code", "new", "checkpoints"]);
    assert.deepEqual(names(filterCommands(commands, "staged")), ["review"]);
    assert.deepEqual(names(filterCommands(commands, "zzz")), []);
  });
});

describe("built-in routing", () => {
  it("finds a built-in at the start of a prompt, with its arguments", () => {
    assert.deepEqual(parseBuiltin("/compact"), { name: "compact", args: "" });
    assert.deepEqual(parseBuiltin("  /new  "), { name: "new", args: "" });
    assert.deepEqual(parseBuiltin("/undo 3f2a"), { name: "undo", args: "3f2a" });
    assert.deepEqual(parseBuiltin("/checkpoints\n"), { name: "checkpoints", args: "" });
  });

  it("leaves prompt files, unknown words and other prompts to be sent as typed", () => {
    assert.equal(parseBuiltin("/review the parser"), undefined);
    assert.equal(parseBuiltin("/compactly please"), undefined);
    assert.equal(parseBuiltin("please /compact"), undefined);
    assert.equal(parseBuiltin("/"), undefined);
    assert.equal(parseBuiltin("compact"), undefined);
  });

  it("routes each built-in to the extension's own action", () => {
    assert.deepEqual(builtinRoute("compact"), { run: "compact" });
    assert.deepEqual(builtinRoute("new"), { run: "new" });
    assert.deepEqual(builtinRoute("checkpoints"), { run: "checkpoints" });
    assert.deepEqual(builtinRoute("undo"), { run: "undo" });
    assert.deepEqual(builtinRoute("undo", " 7 extra"), { run: "undo", checkpointId: "7" });
    assert.equal(builtinRoute("review"), undefined);
  });
});

describe("what the input is completing", () => {
  it("a / command only at the very start, up to the caret", () => {
    assert.deepEqual(completionAt("/", 1, 1), { kind: "command", start: 0, query: "" });
    assert.deepEqual(completionAt("/rev", 4, 4), { kind: "command", start: 0, query: "rev" });
    assert.deepEqual(completionAt("/review", 3, 3), { kind: "command", start: 0, query: "re" });
    assert.equal(completionAt("/review the", 11, 11), undefined); // arguments: closed
    assert.equal(completionAt("see /rev", 8, 8), undefined);
    assert.equal(completionAt(" /rev", 5, 5), undefined);
    assert.equal(completionAt("/rev", 1, 4), undefined); // a selection
  });

  it("an @ file at the start or after a space", () => {
    assert.deepEqual(completionAt("@", 1, 1), { kind: "file", start: 0, query: "" });
    assert.deepEqual(completionAt("look at @src/ap", 15, 15), { kind: "file", start: 8, query: "src/ap" });
    assert.deepEqual(completionAt("a\n@gr", 5, 5), { kind: "file", start: 2, query: "gr" });
    assert.equal(completionAt("me@example.com", 14, 14), undefined);
    assert.equal(completionAt("@src done", 9, 9), undefined);
  });

  it("a trigger is the same while typing on it", () => {
    const a = completionAt("x @s", 4, 4);
    const b = completionAt("x @src", 6, 6);
    assert.ok(a && b);
    assert.equal(triggerKey(a), triggerKey(b));
  });

  it("a picked prompt file becomes `/name ` for the arguments", () => {
    assert.deepEqual(insertCommand("/rev", 4, "review"), { text: "/review ", caret: 8 });
    assert.deepEqual(insertCommand("/re the parser", 3, "review"), { text: "/review the parser", caret: 8 });
  });

  it("a picked file leaves the prompt (its @text removed, spaces kept tidy)", () => {
    const text = "look at @gre and fix it";
    const trigger = completionAt(text, 12, 12);
    assert.ok(trigger);
    assert.deepEqual(removeMention(text, trigger, 12), { text: "look at and fix it", caret: 8 });
    const start = completionAt("@gre", 4, 4);
    assert.ok(start);
    assert.deepEqual(removeMention("@gre", start, 4), { text: "", caret: 0 });
    const end = completionAt("fix @gre", 8, 8);
    assert.ok(end);
    assert.deepEqual(removeMention("fix @gre", end, 8), { text: "fix", caret: 3 });
  });

  it("↑/↓ wrap around the rows", () => {
    assert.equal(moveSelection(0, 3, 1), 1);
    assert.equal(moveSelection(2, 3, 1), 0);
    assert.equal(moveSelection(0, 3, -1), 2);
    assert.equal(moveSelection(0, 0, 1), 0);
  });
});
