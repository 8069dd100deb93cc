import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  type Conversation,
  renderConversationBody,
  renderMarkdown,
  renderPage,
  toolCallViews,
} from "../src/panel-render";

const conversation: Conversation = {
  sessionId: "s1",
  entries: [
    {
      prompt: "List the <py> files",
      state: "done",
      answer: "Found **2** files:\n\n- [app.py](src/app.py)\n- `util.py`\n\n```python\nprint(1)\n```",
      stopReason: "end_turn",
      usage: { total_tokens: 321 },
      toolCalls: toolCallViews([
        { id: "c1", name: "glob", arguments: '{"pattern": "**/*.py"}', ok: true, durationMs: 12 },
        { id: "c2", name: "read_file", arguments: '{"path": "nope.py"}', ok: false, durationMs: 3, output: "Error: no such file" },
      ]),
    },
    { prompt: "And the tests?", state: "working", progress: "turn 1: waiting for the model", toolCalls: [] },
  ],
};

describe("renderConversationBody", () => {
  const html = renderConversationBody(conversation);

  it("shows each prompt escaped, in order", () => {
    const first = html.indexOf("List the &lt;py&gt; files");
    const second = html.indexOf("And the tests?");
    assert.ok(first >= 0 && second > first);
    assert.ok(!html.includes("<py>"));
  });

  it("renders the answer as Markdown", () => {
    assert.match(html, /<strong>2<\/strong>/);
    assert.match(html, /<a href="src\/app.py">app.py<\/a>/);
    assert.match(html, /<code>util.py<\/code>/);
    assert.match(html, /<pre><code class="language-python">print\(1\)/);
  });

  it("lists the tool calls collapsed, with arguments, status and duration", () => {
    assert.match(html, /<details class="tools" data-key="tools-0"><summary>2 tool calls \(1 failed\)<\/summary>/);
    assert.ok(!/<details[^>]* open/.test(html), "collapsed by default");
    assert.match(html, /<li class="call ok"><span class="mark">✓<\/span> <code class="tool">glob<\/code> <span class="args">\*\*\/\*.py<\/span> <span class="status">ok · 12ms<\/span><\/li>/);
    assert.match(html, /<li class="call failed" title="Error: no such file">.*read_file.*nope.py.*failed · 3ms/);
  });

  it("shows progress for the running ask and the token count of finished ones", () => {
    assert.match(html, /Working… turn 1: waiting for the model/);
    assert.match(html, /321 tokens/);
  });

  it("explains cancelled, failed and turn-limited entries", () => {
    const body = renderConversationBody({
      entries: [
        { prompt: "a", state: "cancelled", toolCalls: [] },
        { prompt: "b", state: "error", error: "Model not configured: set <MODEL_API_KEY>", toolCalls: [] },
        { prompt: "c", state: "done", answer: "partial", stopReason: "max_turns", toolCalls: [] },
      ],
    });
    assert.match(body, /Cancelled\./);
    assert.match(body, /Error: Model not configured: set &lt;MODEL_API_KEY&gt;/);
    assert.match(body, /reached the turn limit/);
  });

  it("has a hint when empty and shows a notice", () => {
    assert.match(renderConversationBody({ entries: [] }), /Agent: Ask/);
    assert.match(renderConversationBody({ entries: [], notice: "server restarted" }), /class="notice">server restarted/);
  });
});

describe("sanitizing the model's answer", () => {
  it("escapes raw HTML and scripts", () => {
    const html = renderMarkdown('<script>alert(1)</script><img src=x onerror="alert(2)"> hi');
    assert.ok(!html.includes("<script>"));
    assert.ok(!html.includes("<img"));
    assert.match(html, /&lt;script&gt;/);
  });

  it("drops javascript: and data: links but keeps file links", () => {
    const html = renderMarkdown("[a](javascript:alert(1)) [b](data:text/html,x) [c](file:///w/a.py)");
    assert.ok(!html.includes('href="javascript:'));
    assert.ok(!html.includes('href="data:'));
    assert.match(html, /<a href="file:\/\/\/w\/a.py">c<\/a>/);
  });
});

describe("renderPage", () => {
  const page = renderPage(conversation, { cspSource: "vscode-webview://abc", nonce: "N0nce" });

  it("locks the page down with a CSP that admits only the nonce", () => {
    assert.match(
      page,
      /Content-Security-Policy" content="default-src 'none'; img-src vscode-webview:\/\/abc data:; style-src 'nonce-N0nce'; script-src 'nonce-N0nce'"/,
    );
    const scripts = page.match(/<script[^>]*>/g) ?? [];
    assert.deepEqual(scripts, ['<script nonce="N0nce">']);
  });

  it("embeds the conversation", () => {
    assert.match(page, /<main id="conversation"><section class="entry done"/);
  });
});
