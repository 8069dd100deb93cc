import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { findPathRefs, renderCodeBlock, renderMarkdown, renderPlainText } from "../src/chat/markdown";
import { applyActivity, type Entry, entriesFromHistory, type ToolItem } from "../src/chat/model";
import { renderPage } from "../src/chat/page";
import { cutCount, formatFooter, renderArguments, renderConversation, renderEntry, renderTail, renderToolItem } from "../src/chat/render";

const files = new Set(["src/app.py", "README.md", "pkg/mod.ts"]);
const exists = (p: string) => files.has(p.replace(/^\.\//, ""));
const options = { toolOutput: true, exists };

function entry(overrides: Partial<Entry> = {}): Entry {
  return { id: "e1", prompt: "List the <py> files", state: "done", items: [], actions: [], ...overrides };
}

function tool(overrides: Partial<ToolItem> = {}): ToolItem {
  return { kind: "tool", id: "call_1", name: "bash", arguments: '{"command": "ls"}', state: "ok", ...overrides };
}

describe("answers as Markdown", () => {
  it("renders Markdown and escapes raw HTML", () => {
    const html = renderMarkdown("Found **2** files <script>alert(1)</script> [app](src/app.py)");
    assert.match(html, /<strong>2<\/strong>/);
    assert.match(html, /&lt;script&gt;alert\(1\)&lt;\/script&gt;/);
    assert.match(html, /<a href="src\/app.py">app<\/a>/);
    assert.ok(!html.includes("<script>"));
  });

  it("refuses script and data links", () => {
    const html = renderMarkdown("[x](javascript:alert(1)) [y](data:text/html,hi)");
    assert.ok(!/href="(javascript|data):/.test(html), html);
  });

  it("highlights a code block as one block with Copy and Insert at Cursor", () => {
    const html = renderMarkdown("```python\ndef f():\n    return 1\n```");
    assert.equal(html.match(/<pre>/g)?.length, 1, "one block, not one per line");
    assert.match(html, /<span class="hljs-keyword">def<\/span>/);
    assert.match(html, /data-action="copyCode"[^>]*>Copy</);
    assert.match(html, /data-action="insertCode"[^>]*>Insert at Cursor</);
    assert.match(html, /class="code-lang">python</);
  });

  it("escapes code in an unknown language or none", () => {
    assert.match(renderCodeBlock("<b>x</b>", "nosuchlang"), /&lt;b&gt;x&lt;\/b&gt;/);
    assert.match(renderMarkdown("    indented <i>\n"), /&lt;i&gt;/);
  });
});

describe("path:line links", () => {
  it("links path:line in plain text when the file exists", () => {
    const html = renderMarkdown("See src/app.py:12 and src/gone.py:3, then README.md:1:5.", exists);
    assert.match(html, /<a href="src\/app.py:12" class="path-link">src\/app.py:12<\/a>/);
    assert.match(html, /<a href="README.md:1:5" class="path-link">README.md:1:5<\/a>/);
    assert.ok(!html.includes('href="src/gone.py'), "a file that does not exist stays text");
  });

  it("links inline code naming a file, with or without a line", () => {
    const html = renderMarkdown("Open `src/app.py:3` or `pkg/mod.ts`, not `print()`.", exists);
    assert.match(html, /<a href="src\/app.py:3" class="path-link"><code>src\/app.py:3<\/code><\/a>/);
    assert.match(html, /<a href="pkg\/mod.ts" class="path-link"><code>pkg\/mod.ts<\/code><\/a>/);
    assert.match(html, /<code>print\(\)<\/code>/);
  });

  it("leaves existing links, URLs and code blocks alone", () => {
    const html = renderMarkdown("[the app](src/app.py) https://example.com/src/app.py:1\n\n```\nsrc/app.py:2\n```", exists);
    assert.equal(html.match(/class="path-link"/g), null, html);
  });

  it("finds references with their line and column", () => {
    assert.deepEqual(findPathRefs("at ./src/app.py:7:2.", exists), [{ start: 3, end: 19, path: "./src/app.py", line: 7, column: 2 }]);
    assert.deepEqual(findPathRefs("http://x/src/app.py:7 time 10:30", exists), []);
  });
});

describe("plain text", () => {
  it("escapes and makes URLs clickable", () => {
    assert.equal(
      renderPlainText("401 <bad>: see https://platform.example.com/keys."),
      '401 &lt;bad&gt;: see <a href="https://platform.example.com/keys">https://platform.example.com/keys</a>.',
    );
  });
});

describe("tool rows", () => {
  it("show name, the server's subject, status and duration, collapsed", () => {
    const html = renderToolItem(entry(), tool({ title: "bash ls", subject: "ls", durationText: "12 ms" }), options);
    assert.match(html, /^<div class="call ok disclosure" id="part:e1\/tool\/call_1" data-id="e1\/tool\/call_1">/);
    assert.match(html, /<code class="tool">bash<\/code> <span class="args">ls<\/span> <span class="status">ok · 12 ms<\/span>/);
    assert.ok(!/class="[^"]*\bopen\b/.test(html), "collapsed");
    assert.match(html, /<div class="disclosure-head" data-toggle role="button" tabindex="0" aria-expanded="false" title="bash ls">/);
    assert.ok(!html.includes("<details"), "no <details>: its cost in Chromium grows with their number");
  });

  it("an MCP tool is named as the server names it for people, its registry name in the tooltip", () => {
    const e = entry();
    e.items = [];
    applyActivity(e, { sessionId: "s", callId: "m", name: "mcp__time__get_current_time", arguments: "{\"timezone\":\"UTC\"}", status: "started", displayName: "get_current_time — time (MCP server)" });
    applyActivity(e, { sessionId: "s", callId: "m", name: "mcp__time__get_current_time", arguments: "{}", status: "completed", durationMs: 3, output: "12:00" });
    const item = e.items[0] as ToolItem;
    const html = renderToolItem(e, item, options);
    assert.match(html, /<code class="tool" title="mcp__time__get_current_time">get_current_time — time \(MCP server\)<\/code>/);
    assert.doesNotMatch(html, />mcp__time__get_current_time</);
  });

  it("a reopened conversation names its MCP calls as live activity does (the history's displayName)", () => {
    const [reopened] = entriesFromHistory([
      { role: "user", content: "time?" },
      {
        role: "assistant",
        content: "",
        toolCalls: [
          { id: "m", name: "mcp__time__get_current_time", arguments: "{}", ok: true, output: "12:00", displayName: "get_current_time — time (MCP server)" },
          { id: "b", name: "bash", arguments: "{}", ok: true, output: "", displayName: null },
        ],
      },
    ]);
    assert.ok(reopened);
    const [mcp, bash] = reopened.items as ToolItem[];
    assert.ok(mcp && bash);
    assert.match(renderToolItem(reopened, mcp, options), /<code class="tool" title="mcp__time__get_current_time">get_current_time — time \(MCP server\)<\/code>/);
    assert.equal(bash.displayName, undefined);
    assert.match(renderToolItem(reopened, bash, options), /<code class="tool">bash<\/code>/);
  });

  it("a call that waited for permission says so beside its own time (the server's durationText)", () => {
    const html = renderToolItem(entry(), tool({ durationText: "12 ms; 8.0 s waiting for permission" }), options);
    assert.match(html, /<span class="status">ok · 12 ms; 8.0 s waiting for permission<\/span>/);
  });

  it("a row saved before the server sent its words shows the tool's name, no made-up summary", () => {
    const html = renderToolItem(entry(), tool({ state: "failed", output: "Error: boom" }), options);
    const head = html.slice(0, html.indexOf('<div class="disclosure-body">'));
    assert.match(head, /<code class="tool">bash<\/code> <span class="args"><\/span> <span class="status">failed<\/span>/);
    assert.ok(!head.includes("call-error") && !head.includes("title="), head);
  });

  it("a header says what the server says the call is about: the command, not its escalation or justification", () => {
    const args = JSON.stringify({ command: `make test ${"x".repeat(200)}`, escalation: "network", justification: "fetch deps" });
    const subject = `make test ${"x".repeat(69)}…`; // as server/agent/activity.py cuts it
    const html = renderToolItem(entry(), tool({ arguments: args, subject }), options);
    const head = html.slice(0, html.indexOf('<div class="disclosure-body">'));
    assert.equal(/<span class="args">([^<]*)<\/span>/.exec(head)?.[1], subject);
    assert.ok(!/<span class="args">[^<]*(escalation|fetch deps)/.test(head), head);
    // The body has them all.
    assert.match(html, /<span class="arg-key">justification<\/span><pre class="arg-value">fetch deps<\/pre>/);
  });

  it("expand to the arguments as written: a multi-line command keeps its lines", () => {
    const html = renderArguments(JSON.stringify({ command: "cd src\npytest -q", timeout: 30 }));
    assert.match(html, /<span class="arg-key">command<\/span><pre class="arg-value">cd src\npytest -q<\/pre>/);
    assert.match(html, /<span class="arg-key">timeout<\/span><pre class="arg-value">30<\/pre>/);
    assert.equal(renderArguments("{not json"), '<pre class="arg-value">{not json</pre>');
  });

  it("show a failed call's error inline, without expanding", () => {
    const output = "\nError: no such file: nope.py\nmore";
    const html = renderToolItem(entry(), tool({ state: "failed", output, outputHead: "Error: no such file: nope.py" }), options);
    const summary = html.slice(0, html.indexOf('<div class="disclosure-body">'));
    // Under the one-line header, outside it: seen without expanding.
    assert.match(summary, /<\/div><div class="call-error">Error: no such file: nope.py<\/div>$/);
  });

  it("say when the preview was cut, and offer the full output", () => {
    const output = `${"x".repeat(100)}\n… [48000 more characters]`;
    assert.equal(cutCount(output), 48000);
    const html = renderToolItem(entry(), tool({ output }), options);
    // Its tail not fetched yet (an older server, a reopened conversation): the head, said so.
    assert.match(html, /<pre class="output" [^>]*>x{100}<\/pre><div class="output-bar cut-note"[^>]*><span>The first part only: 48,000 more characters.<\/span><button[^>]*data-action="showAllOutput"[^>]*>Show all</);
    assert.match(html, /data-action="openToolOutput" data-call-id="call_1" data-entry-id="e1"[^>]*>Open full output</);
    const without = renderToolItem(entry(), tool({ output }), { toolOutput: false });
    assert.ok(!without.includes("openToolOutput") && !without.includes("showAllOutput"), "no button when the server keeps no output");
  });

  it("show an output's last lines as a terminal does, with Show all and Copy output", () => {
    const output = Array.from({ length: 100 }, (_, i) => `line ${i + 1}`).join("\n") + "\n";
    const html = renderToolItem(entry(), tool({ output }), options);
    const pre = /<pre class="output from-end"[^>]*>([^<]*)<\/pre>/.exec(html)?.[1] ?? "";
    assert.equal(pre.split("\n")[0], "line 61");
    assert.equal(pre.split("\n").at(-1), "line 100");
    assert.match(html, /<span>The last 40 lines of 100.<\/span><button[^>]*data-action="showAllOutput"[^>]*>Show all<\/button>/);
    assert.match(html, />Copy output</);
    // A fetched tail (the preview was cut) is shown instead of the head.
    const cut = renderToolItem(entry(), tool({ output: "head\n… [5000 more characters]", full: { text: "last line", hiddenLines: 300, totalLines: 301 } }), options);
    assert.match(cut, /<pre class="output from-end"[^>]*>last line<\/pre>/);
    assert.match(cut, /The last 1 line of 301\./);
    // A short output: all of it, no bar.
    const short = renderToolItem(entry(), tool({ output: "ok\n" }), options);
    assert.ok(!short.includes("output-bar") && /<pre class="output from-end"[^>]*>ok<\/pre>/.test(short), short);
  });
});

describe("entries", () => {
  it("show the prompt escaped, then the items in order, then the tail", () => {
    const html = renderEntry(
      entry({
        items: [
          { kind: "text", id: "t1", text: "Let me look.", channel: "answer" },
          tool(),
          { kind: "text", id: "t2", text: "Done.", channel: "answer" },
        ],
        footer: { model: "scripted", elapsedMs: 3200, usage: { total_tokens: 1234 } },
      }),
      options,
    );
    assert.ok(html.includes("List the &lt;py&gt; files"));
    const order = ["Let me look.", 'data-id="e1/tool/call_1"', "Done.", 'class="footer"'].map((s) => html.indexOf(s));
    assert.deepEqual([...order].sort((a, b) => a - b), order, "in order");
    assert.ok(order.every((i) => i >= 0));
    assert.match(html, /<div class="footer">scripted · 3.20s · 1,234 tokens<\/div>/);
  });

  it("say why an answer stopped in the server's words, and where VS Code sets the turn limit", () => {
    const turns = renderTail(entry({ stopReason: "max_turns", stopNote: "stopped at the turn limit (maxTurns)" }));
    assert.match(turns, /<div class="stop-note">stopped at the turn limit \(maxTurns\)\. Raise agentLsp.maxTurns in Settings/);
    const cut = "the answer was cut off at the model's output token limit";
    assert.match(renderTail(entry({ stopReason: "max_tokens", stopNote: cut })), /the answer was cut off at the model&#39;s output token limit<\/div>/);
    // Saved before the server sent its words: the bare reason.
    assert.match(renderTail(entry({ stopReason: "empty" })), /<div class="stop-note">stopped: empty<\/div>/);
    assert.ok(!renderTail(entry({ stopReason: "end_turn" })).includes("stop-note"));
  });

  it("show errors with their buttons and clickable URLs", () => {
    const html = renderTail(
      entry({
        state: "error",
        error: { message: "HTTP 503 from https://api.example.com (3 attempts)", buttons: [{ title: "Retry", action: "retry", args: { entryId: "e1" }, primary: true }] },
      }),
    );
    assert.match(html, /<a href="https:\/\/api.example.com">/);
    assert.match(html, /<button class="button primary" data-action="retry" data-entry-id="e1">Retry<\/button>/);
  });

  it("show working status, and an empty conversation says how to start", () => {
    assert.match(renderTail(entry({ state: "working", status: "turn 2: running tools" })), /turn 2: running tools/);
    const changed = renderTail(entry({ changes: "2 files changed", actions: [{ title: "Show changes", action: "showChanges" }] }));
    assert.match(changed, /<span class="changes">2 files changed<\/span><button[^>]*>Show changes<\/button>/);
    assert.ok(!renderTail(entry()).includes("class=\"buttons\""), "an answer with no changes and no buttons gets no button row");
    assert.match(renderConversation({ entries: [] }, options), /press <b>Enter<\/b>/);
  });

  it("footer leaves out what is unknown", () => {
    assert.equal(formatFooter({ elapsedMs: 900 }), "900ms");
    assert.equal(formatFooter({ model: "m", usage: { total_tokens: 0 } }), "m");
    assert.equal(
      formatFooter({ usage: { total_tokens: 876, contextTokens: 1290, contextWindow: 128000 } }),
      "876 tokens · context 1,290 of 128,000 tokens",
    );
  });
});

describe("the page", () => {
  it("admits only its nonce'd style and script", () => {
    const html = renderPage({ cspSource: "vscode-webview:", nonce: "abc", scriptUri: "https://x/webview.js", body: "" });
    assert.match(html, /script-src 'nonce-abc'/);
    assert.match(html, /<script nonce="abc" src="https:\/\/x\/webview.js"><\/script>/);
    assert.match(html, /id="conversation"/);
    assert.match(html, /<textarea id="input"/);
  });
});
