// What the chat view benchmarks share: a finished entry's Markdown answer, a finished entry
// built through the view's own model (`lib`: the bench build of src/chat/model.ts), and where
// tests/e2e_vscode/run.sh left playwright-core.

import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";

export const ANSWER = [
  "## What I found",
  "",
  "The entry point `src/app.py:12` calls **main()**, which reads the config and starts the server.",
  "",
  "```python",
  "def main():",
  "    config = load_config()",
  "    serve(config, port=8080)",
  "```",
  "",
  "| file | role |",
  "|---|---|",
  "| `src/app.py` | entry |",
  "| `src/config.py` | settings |",
].join("\n");

/** A finished entry like a real one: a prompt, three tool rows, a Markdown answer. */
export function finishedEntry(lib, i) {
  const entry = lib.newEntry(`Question ${i}: what does the app do, and where is it configured?`);
  for (let c = 0; c < 3; c++) {
    const callId = `c${i}-${c}`;
    lib.applyActivity(entry, { sessionId: "s", callId, name: "read_file", arguments: JSON.stringify({ path: `src/file${c}.py` }), status: "completed", durationMs: 3, output: "x = 1\n".repeat(40) });
  }
  entry.items.push({ kind: "text", id: `t${i}`, text: ANSWER, channel: "answer" });
  entry.state = "done";
  entry.footer = { model: "gpt-4o-mini", elapsedMs: 4200, usage: { total_tokens: 1234 } };
  return entry;
}

/** `node_modules/NAME` in the E2E run's cache (AGENT_LSP_E2E_CACHE, else ~/.cache/agent-lsp-e2e). */
export function findE2eCache(name) {
  const base = process.env.AGENT_LSP_E2E_CACHE ?? join(process.env.HOME ?? "", ".cache", "agent-lsp-e2e");
  if (!existsSync(base)) return undefined;
  for (const key of readdirSync(base)) {
    const candidate = join(base, key, "app", "node_modules", name);
    if (existsSync(candidate)) return candidate;
  }
  return undefined;
}
