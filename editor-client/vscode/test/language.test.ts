import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  type CodeDiagnostic,
  LANGUAGE_CAPABILITY,
  LanguageAnswers,
  type LanguageEditor,
  languageCapabilityFeature,
  toLsp,
} from "../src/language";
import { permissionCapabilityFeature } from "../src/permissions";
import type { LanguageDiagnosticsParams, LanguageRequestParams } from "../src/protocol.generated";

const uri = (name: string) => ({ toString: () => `file:///p/${name}` });
const range = (line: number, from: number, to: number) => ({
  start: { line, character: from },
  end: { line, character: to },
});

/** An editor whose "language server" publishes when the test says. */
class FakeEditor implements LanguageEditor {
  known = new Map<string, CodeDiagnostic[]>();
  opened: string[] = [];
  executed: Array<{ method: string; params: Record<string, unknown> }> = [];
  answer: unknown = undefined;
  private listeners: Array<(uris: string[]) => void> = [];
  diagnostics(u: string): CodeDiagnostic[] {
    return this.known.get(u) ?? [];
  }
  onDidChangeDiagnostics(listener: (uris: string[]) => void) {
    this.listeners.push(listener);
    return { dispose: () => (this.listeners = this.listeners.filter((l) => l !== listener)) };
  }
  publish(u: string, found: CodeDiagnostic[]): void {
    this.known.set(u, found);
    for (const l of this.listeners) l([u]);
  }
  async open(u: string): Promise<boolean> {
    this.opened.push(u);
    return !u.endsWith(".txt"); // plain text: no server
  }
  async execute(method: string, params: Record<string, unknown>): Promise<unknown> {
    this.executed.push({ method, params });
    if (this.answer instanceof Error) throw this.answer;
    return this.answer;
  }
}

const typeError: CodeDiagnostic = {
  range: range(1, 18, 23),
  message: "Type 'string' is not assignable to type 'number'.",
  severity: 0,
  code: 2322,
  source: "ts",
};

const ask = (uris: string[], waitMs: number) => ({ uris, waitMs }) as LanguageDiagnosticsParams;

describe("agent/languageDiagnostics", () => {
  it("waits for the file's diagnostics to change, loads it first, answers them as LSP's", async () => {
    const editor = new FakeEditor();
    const answers = new LanguageAnswers(editor, 20);
    const pending = answers.diagnostics(ask(["file:///p/a.ts"], 2000));
    await new Promise((r) => setTimeout(r, 30));
    editor.publish("file:///p/a.ts", []); // TypeScript's syntax pass: nothing yet
    await new Promise((r) => setTimeout(r, 5));
    editor.publish("file:///p/a.ts", [typeError]); // then its semantic one
    const result = await pending;
    assert.deepEqual(editor.opened, ["file:///p/a.ts"]);
    assert.deepEqual(result.files, [
      {
        uri: "file:///p/a.ts",
        answered: true,
        diagnostics: [
          {
            range: { start: { line: 1, character: 18 }, end: { line: 1, character: 23 } },
            severity: 1,
            code: 2322,
            source: "ts",
            message: "Type 'string' is not assignable to type 'number'.",
          },
        ],
      },
    ]);
  });

  it("answers false after the wait when nothing changed (no server handles the file)", async () => {
    const editor = new FakeEditor();
    const answers = new LanguageAnswers(editor, 20);
    const started = Date.now();
    const result = await answers.diagnostics(ask(["file:///p/a.md"], 100));
    assert.ok(Date.now() - started >= 90);
    assert.deepEqual(result.files, [{ uri: "file:///p/a.md", answered: false, diagnostics: [] }]);
  });

  it("a file no server can handle (plain text) is answered false at once, not after the wait", async () => {
    const editor = new FakeEditor();
    const answers = new LanguageAnswers(editor, 20);
    const started = Date.now();
    const result = await answers.diagnostics(ask(["file:///p/notes.txt"], 5000));
    assert.ok(Date.now() - started < 1000);
    assert.deepEqual(result.files, [{ uri: "file:///p/notes.txt", answered: false, diagnostics: [] }]);
  });

  it("waitMs 0: what is known at once, answered for a file a server reported on", async () => {
    const editor = new FakeEditor();
    const answers = new LanguageAnswers(editor, 20);
    editor.publish("file:///p/a.ts", [{ ...typeError, code: { value: "2322" } }]);
    const result = await answers.diagnostics(ask(["file:///p/a.ts", "file:///p/a.md"], 0));
    assert.equal(result.files[0]?.answered, true);
    assert.equal(result.files[0]?.diagnostics[0]?.code, "2322");
    assert.equal(result.files[1]?.answered, false);
  });
});

describe("agent/languageRequest", () => {
  it("runs the editor's provider and converts its answer to LSP JSON", async () => {
    const editor = new FakeEditor();
    const answers = new LanguageAnswers(editor);
    editor.answer = [{ targetUri: uri("lib.ts"), targetRange: range(0, 0, 40), targetSelectionRange: range(1, 16, 21) }];
    const params = {
      method: "textDocument/definition",
      params: { textDocument: { uri: "file:///p/main.ts" }, position: { line: 1, character: 7 } },
    } as LanguageRequestParams;
    const result = await answers.request(params);
    assert.deepEqual(result, { result: [{ uri: "file:///p/lib.ts", range: range(1, 16, 21) }] });
    assert.deepEqual(editor.opened, ["file:///p/main.ts"]);
    assert.equal(editor.executed[0]?.method, "textDocument/definition");
  });

  it("null where no provider answers, or for a method it does not forward", async () => {
    const editor = new FakeEditor();
    const answers = new LanguageAnswers(editor);
    editor.answer = new Error("no provider");
    const hover = { method: "textDocument/hover", params: {} } as LanguageRequestParams;
    assert.deepEqual(await answers.request(hover), { result: null });
    const other = { method: "textDocument/formatting", params: {} } as LanguageRequestParams;
    assert.deepEqual(await answers.request(other), { result: null });
    assert.equal(editor.executed.length, 1);
  });

  it("converts symbols (1-based kinds), hovers and rename edits", () => {
    const symbols = toLsp("textDocument/documentSymbol", [
      { name: "greet", kind: 11, range: range(1, 0, 40), selectionRange: range(1, 16, 21), children: [] },
    ]) as Array<Record<string, unknown>>;
    assert.equal(symbols[0]?.kind, 12); // Function
    assert.deepEqual(symbols[0]?.selectionRange, range(1, 16, 21));
    const found = toLsp("workspace/symbol", [
      { name: "greet", kind: 11, containerName: "lib", location: { uri: uri("lib.ts"), range: range(1, 16, 21) } },
    ]) as Array<Record<string, unknown>>;
    assert.deepEqual(found[0], {
      name: "greet",
      kind: 12,
      containerName: "lib",
      location: { uri: "file:///p/lib.ts", range: range(1, 16, 21) },
    });
    const hover = toLsp("textDocument/hover", [{ contents: [{ language: "ts", value: "function greet(): void" }, "Says hello."] }]);
    assert.deepEqual(hover, {
      contents: { kind: "markdown", value: "```ts\nfunction greet(): void\n```\n\nSays hello." },
    });
    assert.equal(toLsp("textDocument/hover", []), null);
    const edit = toLsp("textDocument/rename", {
      entries: () => [[uri("lib.ts"), [{ range: range(1, 16, 21), newText: "hello" }]]],
    });
    assert.deepEqual(edit, { changes: { "file:///p/lib.ts": [{ range: range(1, 16, 21), newText: "hello" }] } });
  });
});

describe("the capability", () => {
  it("is merged into experimental.agent beside requestPermission, whichever comes first", () => {
    const capabilities: { experimental?: unknown } = {};
    languageCapabilityFeature().fillClientCapabilities(capabilities);
    permissionCapabilityFeature().fillClientCapabilities(capabilities);
    assert.deepEqual(capabilities.experimental, {
      agent: { ...LANGUAGE_CAPABILITY.agent, requestPermission: true },
    });
  });
});
