// E2E scenarios for the VS Code client, run by run.sh (which installs everything and sets the
// environment below). Real parts only: code-server with the built .vsix, headless Chromium,
// the real Python server started by the extension, the scripted model server over HTTP.
// Prints one line per scenario and, last, "N passed, N failed".

import { spawn, spawnSync } from "node:child_process";
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { setTimeout as sleep } from "node:timers/promises";

const env = (name) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run tests/e2e_vscode/run.sh`);
  return value;
};
const CODE_SERVER = env("CODE_SERVER");
const CHROMIUM = env("CHROMIUM");
const VSIX = env("AGENT_LSP_VSIX");
const PYTHON = env("AGENT_LSP_PYTHON");
const ROOT = env("AGENT_LSP_ROOT");
const OUTPUT = env("E2E_OUTPUT");
const { chromium } = createRequire(import.meta.url)(env("PLAYWRIGHT_CORE"));

const only = process.argv.slice(2).filter((a) => !a.startsWith("-"));
const KEEP = process.argv.includes("--keep");
// Unique per run, so a process left by an earlier run can't be mistaken for this one's.
const CANCEL_MARK = `sleep ${9000 + Math.floor(Math.random() * 999)}`;
const INTERRUPT_MARK = `sleep ${8000 + Math.floor(Math.random() * 999)}`;

const tmp = mkdtempSync(join(tmpdir(), "agent-lsp-e2e-"));
rmSync(OUTPUT, { recursive: true, force: true }); // this run's screenshots and logs only
mkdirSync(OUTPUT, { recursive: true });
const children = [];
const log = (...args) => console.error("[e2e]", ...args);

// -- helpers: processes -------------------------------------------------------------------------

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

function start(command, args, options = {}) {
  const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"], detached: true, ...options });
  children.push(child);
  return child;
}

const running = (child) => child.exitCode === null && child.signalCode === null;

/** Stop a child as an editor would go away: the process first, then what is left of its group. */
async function stop(child) {
  if (!running(child)) return;
  try {
    process.kill(child.pid, "SIGTERM");
  } catch {
    return;
  }
  for (let i = 0; i < 30 && running(child); i++) await sleep(100);
  try {
    process.kill(-child.pid, "SIGTERM"); // its process group: code-server's children too
  } catch {
    // already gone
  }
}

async function stopAll() {
  for (const child of children.reverse()) await stop(child);
  // The long commands of the cancel and interrupt scenarios are ours: never leave them behind.
  for (const pid of [...pgrep(CANCEL_MARK), ...pgrep(INTERRUPT_MARK)]) {
    try {
      process.kill(Number(pid), "SIGKILL");
    } catch {
      // gone
    }
  }
}

async function startModelServer(script, name = "model", extraArgs = []) {
  const scriptFile = join(tmp, `${name}-script.json`);
  const recordFile = join(tmp, `${name}-requests.jsonl`);
  const httpFile = join(tmp, `${name}-http.jsonl`); // every request's method, path, headers
  writeFileSync(scriptFile, JSON.stringify(script, null, 2));
  const child = start(
    PYTHON,
    ["-m", "tests.support.model_server", "--script", scriptFile, "--record", recordFile, "--record-http", httpFile, ...extraArgs],
    { cwd: ROOT },
  );
  const url = await new Promise((resolve, reject) => {
    let buffer = "";
    const timer = setTimeout(() => reject(new Error("model server did not print READY")), 30_000);
    child.stdout.on("data", (chunk) => {
      buffer += chunk.toString();
      const m = /^READY (\S+)/m.exec(buffer);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    child.stderr.on("data", (chunk) => appendFileSync(join(OUTPUT, `${name}-server.log`), chunk));
    child.once("exit", (code) => reject(new Error(`model server exited (${code})`)));
  });
  return { url, recordFile, httpFile };
}

function httpRequests(httpFile) {
  if (!existsSync(httpFile)) return [];
  return readFileSync(httpFile, "utf8").split("\n").filter((l) => l.trim()).map((l) => JSON.parse(l));
}

function modelRequests(recordFile) {
  if (!existsSync(recordFile)) return [];
  return readFileSync(recordFile, "utf8").split("\n").filter((l) => l.trim()).map((l) => JSON.parse(l));
}

function lastUserText(body) {
  const users = body.messages.filter((m) => m.role === "user");
  const last = users[users.length - 1];
  return typeof last?.content === "string" ? last.content : JSON.stringify(last?.content);
}

function userSettings() {
  return {
    "chat.disableAIFeatures": true,
    "workbench.secondarySideBar.defaultVisibility": "hidden",
    "telemetry.telemetryLevel": "off",
    "update.mode": "none",
    "extensions.autoUpdate": false,
    "extensions.autoCheckUpdates": false,
    "extensions.ignoreRecommendations": true,
    "workbench.startupEditor": "none",
    "workbench.tips.enabled": false,
    "workbench.enableExperiments": false,
    "security.workspace.trust.enabled": false,
    "git.enabled": false,
    "workbench.colorTheme": "Default Dark Modern",
    "window.zoomLevel": 0,
    "files.autoSave": "off", // code-server's default saves after a delay; buffers stay unsaved here
  };
}

let extensionsInstalled = false;

/** A code-server of its own (user data, settings) whose processes inherit `agentEnv`. */
async function startCodeServer(name, workspace, agentEnv, serverCommand = [PYTHON, "-I", "-m", "server"], extraSettings = {}, machineSettings = {}) {
  const userData = join(tmp, name, "user-data");
  const extensions = join(tmp, "extensions");
  const config = join(tmp, "code-server.yaml");
  writeFileSync(config, "auth: none\ncert: false\n");
  mkdirSync(join(userData, "User"), { recursive: true });
  writeFileSync(join(userData, "User", "settings.json"), JSON.stringify({ ...userSettings(), ...extraSettings }, null, 2));
  // agentLsp.server.command is machine-scoped, and code-server's window is a remote one: VS Code
  // takes such settings from the remote ("Machine") settings and ignores the browser-side user
  // settings' value (as in Remote-SSH), so it goes where a user of a remote window puts it.
  mkdirSync(join(userData, "Machine"), { recursive: true });
  writeFileSync(join(userData, "Machine", "settings.json"), JSON.stringify({ "agentLsp.server.command": serverCommand, ...machineSettings }, null, 2));
  const common = ["--user-data-dir", userData, "--extensions-dir", extensions, "--config", config];
  if (!extensionsInstalled) {
    const install = spawnSync(CODE_SERVER, [...common, "--install-extension", VSIX], { encoding: "utf8" });
    if (install.status !== 0) throw new Error(`--install-extension failed: ${install.stderr}${install.stdout}`);
    extensionsInstalled = true;
  }
  const port = await freePort();
  const child = start(
    CODE_SERVER,
    [
      ...common,
      "--auth", "none",
      "--bind-addr", `127.0.0.1:${port}`,
      "--disable-telemetry",
      "--disable-update-check",
      "--disable-workspace-trust",
      // A reloaded window's old extension host (and so its agent server) is kept for a
      // reconnection that never comes: 3 hours by default. Short here, so the scenarios after the
      // reload see one server again (they wait for that; a CI run once saw both).
      "--reconnection-grace-time", "10",
      workspace,
    ],
    // The agent server's own .env, user configuration file and session files are this run's.
    {
      env: {
        ...process.env,
        AGENT_LSP_ENV_FILE: join(tmp, "no-such.env"),
        XDG_CONFIG_HOME: join(tmp, name, "xdg-config"),
        XDG_STATE_HOME: join(tmp, name, "state"),
        ...agentEnv,
      },
    },
  );
  const logFile = join(OUTPUT, `code-server-${name}.log`);
  writeFileSync(logFile, "");
  child.stdout.on("data", (c) => appendFileSync(logFile, c));
  child.stderr.on("data", (c) => appendFileSync(logFile, c));
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 120; i++) {
    try {
      const response = await fetch(`${url}/healthz`);
      if (response.ok) return { url, userData, child };
    } catch {
      // not listening yet
    }
    if (child.exitCode !== null) throw new Error(`code-server exited (${child.exitCode}); see ${logFile}`);
    await sleep(250);
  }
  throw new Error("code-server did not come up");
}

// -- helpers: the workbench --------------------------------------------------------------------

async function until(what, fn, timeout = 30_000, interval = 250) {
  const started = Date.now();
  const deadline = started + timeout;
  let last;
  for (;;) {
    try {
      const value = await fn();
      if (value) {
        if (process.env.E2E_DEBUG && Date.now() - started > 3000) log(`slow: ${what} took ${Date.now() - started}ms`);
        return value;
      }
    } catch (error) {
      last = error;
      if (process.env.E2E_DEBUG) log(`retry: ${what}: ${String(error?.message ?? error).split("\n")[0]}`);
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${last.message}` : ""}`);
    await sleep(interval);
  }
}

/** Open the command palette and run `label`; retries until the command is registered. */
async function runCommand(page, label, timeout = 60_000) {
  const input = page.locator(".quick-input-widget:visible input");
  await until(`command "${label}" in the palette`, async () => {
    await page.keyboard.press("Escape");
    await page.keyboard.press("F1");
    try {
      await input.waitFor({ state: "visible", timeout: 5000 });
    } catch (error) {
      if (process.env.E2E_DEBUG) {
        log("no palette", label, await page.evaluate(() => document.activeElement?.outerHTML.slice(0, 300)));
        await page.screenshot({ path: join(OUTPUT, "debug-no-palette.png") });
      }
      throw error;
    }
    // F1 focuses the palette's input; type into it (fill can wait on a second, hidden input).
    await page.keyboard.press("Control+A");
    await page.keyboard.type(`>${label}`);
    const row = page.locator(".quick-input-list .monaco-list-row", {
      has: page.locator(".label-name", { hasText: new RegExp(`^${label.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}$`) }),
    }).first();
    try {
      await row.waitFor({ state: "visible", timeout: 2500 });
    } catch {
      if (process.env.E2E_DEBUG) {
        log("palette miss", label, await page.locator(".quick-input-widget:visible").innerText().catch(() => "?"));
        await page.screenshot({ path: join(OUTPUT, "debug-palette.png") });
      }
      return false;
    }
    // The exact label ranks first and is focused: Enter runs it. (A click can be held up for
    // Playwright's whole actionability timeout by overlapping toasts.)
    const focused = page.locator(".quick-input-list .monaco-list-row.focused .label-name").first();
    const focusedLabel = await focused.textContent({ timeout: 1000 }).catch(() => "");
    if ((focusedLabel ?? "").trim() === label) await page.keyboard.press("Enter");
    else await row.click({ timeout: 5000 });
    return true;
  }, timeout, 500);
}

/** The text of the visible notification toasts. */
async function notifications(page) {
  return page.locator(".notifications-toasts .notification-toast").allInnerTexts();
}

async function waitForNotification(page, pattern, timeout = 30_000) {
  return until(`a notification matching ${pattern}`, async () => {
    const texts = await notifications(page);
    return texts.find((t) => pattern.test(t));
  }, timeout);
}

/** The frame of the Agent chat view (nested iframes; Playwright sees through them). */
async function panelFrame(page) {
  return until("the Agent chat view", async () => {
    for (const frame of page.frames()) {
      try {
        if (await frame.$("#conversation")) return frame;
      } catch {
        // frame navigated away
      }
    }
    return undefined;
  });
}

/** The Agent Tool Trace channel as the extension wrote it (VS Code backs output channels with files). */
function traceFileLines(userData) {
  return channelFileLines(userData, "Agent Tool Trace.log");
}

function channelFileLines(userData, fileName) {
  const found = [];
  const walk = (dir) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (name.endsWith(fileName)) found.push(path);
    }
  };
  walk(join(userData, "logs"));
  if (found.length === 0) return [];
  found.sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs);
  return readFileSync(found[0], "utf8").split("\n").filter((l) => l.trim() !== "");
}

/** The lines the Output view shows now, in order (Monaco positions lines absolutely). */
async function visibleOutputLines(page) {
  return page.evaluate(() => {
    const editor = document.querySelector(".part.panel .output-view .monaco-editor, .part.panel .monaco-editor");
    if (!editor) return [];
    return Array.from(editor.querySelectorAll(".view-lines .view-line"))
      .map((el) => ({ top: parseFloat(el.style.top || "0"), text: (el.textContent || "").replace(/\u00a0/g, " ") }))
      .sort((a, b) => a.top - b.top)
      .map((l) => l.text);
  });
}

/** Open a workspace file with Quick Open; resolves when its editor is the active one. */
async function openFile(page, relative) {
  const name = relative.split("/").pop();
  await until(`${relative} in Quick Open`, async () => {
    await page.keyboard.press("Escape");
    await page.keyboard.press("F1");
    await page.locator(".quick-input-widget:visible input").waitFor({ state: "visible", timeout: 5000 });
    await page.keyboard.press("Control+A");
    await page.keyboard.type(relative); // no ">": file mode
    const focused = page.locator(".quick-input-list .monaco-list-row.focused", { hasText: name }).first();
    await focused.waitFor({ state: "visible", timeout: 5000 });
    await page.keyboard.press("Enter");
    return true;
  }, 30_000, 500);
  await until(`${name} to be the active editor`, async () => (await page.locator(".tabs-container .tab.active", { hasText: name }).count()) > 0, 15_000);
}

/**
 * The code editor showing the file at `path` (VS Code marks the editor with data-uri; in
 * code-server it is a vscode-remote:// URI, so match the path).
 */
const codeEditor = (page, path) => page.locator(`.monaco-editor[data-uri$="${path}"]`).first();

/** The text of that editor as rendered (the whole file, for files that fit on screen). */
async function editorText(page, path) {
  return codeEditor(page, path).evaluate((view) =>
    Array.from(view.querySelectorAll(".view-lines .view-line"))
      .map((el) => ({ top: parseFloat(el.style.top || "0"), text: (el.textContent || "").replace(/\u00a0/g, " ") }))
      .sort((a, b) => a.top - b.top)
      .map((l) => l.text)
      .join("\n"),
    undefined,
    { timeout: 2000 }, // not shown: fail this try, don't wait Playwright's default 30 s
  );
}

/** Click into that editor's text (focus, caret) without changing it. */
async function focusEditor(page, path) {
  await codeEditor(page, path).locator(".view-lines").click({ position: { x: 5, y: 5 } });
}

/** The text of the role="tool" message answering `name` in a recorded model request. */
function toolResult(request, name) {
  const calls = new Map();
  for (const m of request.messages) for (const c of m.tool_calls ?? []) calls.set(c.id, c.function.name);
  const results = request.messages.filter((m) => m.role === "tool" && calls.get(m.tool_call_id) === name);
  return results.length ? String(results[results.length - 1].content) : undefined;
}

/** Agent: Ask (Ctrl+Alt+A) focuses the chat's input, ready to send; its frame. */
async function focusChatInput(page) {
  // Ctrl+Alt+A, as a user presses it (no palette typing that could land in an editor); the
  // palette if the key did not get there (e.g. before the extension is active).
  const inputFocused = async () => {
    for (const frame of page.frames()) {
      try {
        if (await frame.evaluate(() => document.activeElement?.id === "input" && document.hasFocus())) return frame;
      } catch {
        // frame navigated away
      }
    }
    return undefined;
  };
  await page.keyboard.press("Escape");
  await page.keyboard.press("Control+Alt+A");
  let frame = await until("the chat input focused by Ctrl+Alt+A", inputFocused, 5000).catch(() => undefined);
  if (!frame) {
    log("Ctrl+Alt+A did not focus the chat input; using the palette");
    await runCommand(page, "Agent: Ask");
    frame = await until("the chat input focused", inputFocused, 15_000);
  }
  await until("the chat ready to send", async () => (await frame.locator("#send").innerText()) === "Send", 30_000);
  return frame;
}

/** Ask as a user does: Agent: Ask (Ctrl+Alt+A) focuses the chat's input; type; Enter. */
async function ask(page, prompt) {
  const frame = await focusChatInput(page);
  await typeInChat(frame, page, prompt);
  await page.keyboard.press("Enter");
  await until("the prompt sent", async () => (await frame.locator("#input").inputValue()) === "", 5000);
}

/** Type `text` into the focused chat input as a user does; keys typed while the focus was
 * still on its way to the view are lost, so then the text is set whole. */
async function typeInChat(frame, page, text) {
  await page.keyboard.type(text);
  const typed = await frame.locator("#input").inputValue();
  if (typed !== text) {
    log(`the input got ${JSON.stringify(typed)}; setting it`);
    await frame.locator("#input").fill(text);
  }
}

/** The last entry of the chat once it has finished (done, error or cancelled). */
async function finishedEntry(frame, mark, timeout = 60_000) {
  return until(`the entry for ${mark}`, async () => {
    const last = frame.locator(".entry").last();
    const cls = (await last.getAttribute("class")) ?? "";
    return (await last.innerText()).includes(mark) && /entry (done|error|cancelled)/.test(cls) ? last : undefined;
  }, timeout);
}

/** Whether the chat's end is in sight (its scroll box within 32 px of the bottom). */
async function chatAtEnd(frame) {
  return frame.evaluate(() => {
    const c = document.getElementById("conversation");
    return c.scrollHeight - c.clientHeight - c.scrollTop <= 32;
  });
}

/** The prompt of the entry at the top of the chat's visible area. */
async function topEntryPrompt(frame) {
  return frame.evaluate(() => {
    const box = document.getElementById("conversation").getBoundingClientRect();
    const entry = document.elementFromPoint(box.left + box.width / 2, box.top + 2)?.closest("section.entry");
    return entry?.querySelector(".prompt-text")?.textContent ?? null;
  });
}

/** Whether `locator`'s element is (at least partly) inside the chat's visible area. */
/** Scrolls the conversation to its top as a reader does: the mouse wheel over the view. */
async function scrollToTop(page, frame) {
  const box = await frame.locator("#conversation").boundingBox();
  await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
  await until("scrolled to the top", async () => {
    await page.mouse.wheel(0, -5000);
    return frame.evaluate(() => document.getElementById("conversation").scrollTop === 0);
  }, 10_000);
}

async function inSight(frame, locator) {
  const [box, view] = await Promise.all([locator.boundingBox(), frame.locator("#conversation").boundingBox()]);
  return Boolean(box && view && box.height > 0 && box.y < view.y + view.height && box.y + box.height > view.y);
}

function pgrep(pattern) {
  const result = spawnSync("pgrep", ["-f", pattern], { encoding: "utf8" });
  return result.stdout.split("\n").filter((l) => l.trim() !== "" && Number(l) !== process.pid);
}

/** Processes under `root` (by parent pid), with their command lines. */
function descendants(root) {
  const parents = new Map();
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      const cmdline = readFileSync(`/proc/${name}/cmdline`, "utf8").split("\0").join(" ");
      parents.set(Number(name), { pid: Number(name), ppid, cmdline });
    } catch {
      // exited meanwhile
    }
  }
  const found = [];
  const queue = [root];
  while (queue.length) {
    const pid = queue.shift();
    for (const p of parents.values()) {
      if (p.ppid === pid) {
        found.push(p);
        queue.push(p.pid);
      }
    }
  }
  return found;
}

function assert(condition, message) {
  if (!condition) throw new Error(message);
}

// -- the scenarios -----------------------------------------------------------------------------

// The file the unsaved-buffer scenarios type into and the agent edits (another line).
const GREET = 'def greet(name):\n    return "hello " + name\n\n\nprint(greet("world"))\n';
const GREET_OLD = 'return "hello " + name';
const GREET_NEW = 'return "AGENT-EDIT hello, " + name';
const TYPED = "# TYPED-UNSAVED note from the user";

// Escalated bash calls writing outside the workspace (tmp holds the workspace folder).
const PERMISSION_FILE = join(tmp, "outside-allowed.txt");
const PERMISSION_REJECTED_FILE = join(tmp, "outside-rejected.txt");
const PERMISSION_ALLOWED = {
  command: `echo allowed >> ${PERMISSION_FILE}`,
  escalation: "unsandboxed",
  justification: "E2E writes a file next to the workspace",
};
const PERMISSION_CHANGED = { ...PERMISSION_ALLOWED, command: `echo rejected >> ${PERMISSION_REJECTED_FILE}` };

// A multi-line command whose output is far longer than the preview.
const BIG_COMMAND = "echo start\nhead -c 50000 /dev/zero | tr '\\0' y; echo; echo END-OF-BIG";

// Streamed over about two seconds, short enough to fit the view with its prompt.
const FOLLOW_TEXT = `${Array.from({ length: 8 }, (_, i) => `Follow line ${i + 1}.`).join("\n\n")}\n\nFOLLOW-END`;

const STREAM_TEXT = `STREAM-BEGIN ${Array.from({ length: 40 }, (_, i) => `word${i}`).join(" ")}\n\nA second paragraph with **bold** text. STREAM-END`;

// A type error TypeScript reports as 2322 at the declared name (line 2, column 7).
const TS_BAD = 'import { greet } from "./lib";\nconst n: number = "two";\ngreet(String(n));\n';

const SCRIPT = [
  {
    match: "E2E-FIRST",
    replies: [
      { tool_calls: [{ name: "bash", arguments: { command: "echo hello-from-bash" } }] },
      { content: "First I read the app.", tool_calls: [{ name: "read_file", arguments: { path: "src/app.py" } }] },
      { tool_calls: [{ name: "read_file", arguments: { path: "missing.py" } }] },
      {
        content:
          "## Findings\n\nThe entry point [src/app.py](src/app.py) prints **hello from app**.\n\n" +
          "| tool | result |\n|---|---|\n| `bash` | ok |\n| `read_file` | ok, then not found |\n\n" +
          "<script>document.title='pwned'</script>",
      },
    ],
  },
  { match: "E2E-SECOND", replies: [{ content: "Yes: this *continues* the same conversation (FOLLOW-UP-OK)." }] },
  { match: "E2E-REOPENED", replies: [{ content: "Reopened: the word was PAPAYA (REOPENED-OK)." }] },
  { match: "E2E-DELETE-KEEP", replies: [{ content: "A conversation that stays (KEEP-OK)." }] },
  { match: "E2E-DELETE-1", replies: [{ content: "A conversation to delete (DELETE-OK)." }] },
  { match: "E2E-DELETE-2", replies: [{ content: "Another one to delete (DELETE-2-OK)." }] },
  {
    match: "E2E-CANCEL",
    replies: [
      { tool_calls: [{ name: "bash", arguments: { command: `${CANCEL_MARK}; echo never` } }] },
      { content: "should not be reached" },
    ],
  },
  {
    match: "E2E-TURNS",
    replies: [
      { tool_calls: [{ name: "bash", arguments: { command: "echo one" } }] },
      { tool_calls: [{ name: "bash", arguments: { command: "echo two" } }] },
      { content: "did both" },
    ],
  },
  {
    match: "E2E-UNSAVED",
    replies: [
      { tool_calls: [{ name: "read_file", arguments: { path: "src/greet.py" } }] },
      { tool_calls: [{ name: "edit_file", arguments: { path: "src/greet.py", old_text: GREET_OLD, new_text: GREET_NEW } }] },
      { content: "Done: `greet` now says AGENT-EDIT." },
    ],
  },
  {
    match: "E2E-CONFIRM",
    replies: [
      { tool_calls: [{ name: "read_file", arguments: { path: "src/greet.py" } }] },
      { tool_calls: [{ name: "edit_file", arguments: { path: "src/greet.py", old_text: GREET_OLD, new_text: GREET_NEW } }] },
      { content: "The edit was not applied." },
    ],
  },
  {
    match: "E2E-PERMISSION",
    replies: [
      { tool_calls: [{ name: "bash", arguments: PERMISSION_ALLOWED }] },
      { tool_calls: [{ name: "bash", arguments: PERMISSION_ALLOWED }] }, // same call: no dialog
      { tool_calls: [{ name: "bash", arguments: PERMISSION_CHANGED }] }, // changed: asked again
      { content: "PERMISSION-DONE" },
    ],
  },
  {
    // Asks after a pause, while the test has the chat hidden.
    match: "E2E-HIDDEN-PERMISSION",
    replies: [
      { tool_calls: [{ name: "bash", arguments: { ...PERMISSION_ALLOWED, command: `echo hidden >> ${PERMISSION_REJECTED_FILE}` } }], delay: 8 },
      { content: "HIDDEN-DONE" },
    ],
  },
  { match: "E2E-LONG", replies: [{ content: Array.from({ length: 60 }, (_, i) => `Line ${i + 1} of a long answer.`).join("\n\n") }] },
  {
    match: "E2E-SCROLL",
    replies: [
      // Slow enough that steps keep arriving while the test scrolls and selects, even on a busy machine.
      ...Array.from({ length: 20 }, (_, i) => ({ tool_calls: [{ name: "bash", arguments: { command: `sleep 1; echo step-${i}` } }] })),
      { content: "All steps done." },
    ],
  },
  {
    match: "E2E-BIG",
    replies: [{ tool_calls: [{ name: "bash", arguments: { command: BIG_COMMAND } }] }, { content: "Printed it." }],
  },
  {
    match: "E2E-CODE",
    replies: [{ content: `Here it is:\n\n\`\`\`python\ndef added():\n    return 42\n\`\`\`\n\nA long token: ${"Z".repeat(400)} and \`${"q".repeat(300)}\`.` }],
  },
  {
    match: "E2E-PATHS",
    replies: [{ content: "The entry point is src/app.py:5 — it calls `src/greet.py:2`? No; nope/missing.py:3 does not exist." }],
  },
  {
    match: "E2E-CHECKPOINT",
    replies: [
      {
        tool_calls: [
          { name: "write_file", arguments: { path: "src/checkpoint-new.txt", content: "NEW FROM THE AGENT\n" } },
          { name: "bash", arguments: { command: "sed -i 's/# demo/# DEMO CHANGED BY THE AGENT/' README.md" } },
        ],
      },
      { content: "Changed README.md and added a file." },
    ],
  },
  // Streamed slowly (6 characters every 50 ms: about 4 s), so the test sees it half written.
  {
    match: "E2E-INTERRUPT",
    replies: [
      { tool_calls: [{ name: "write_file", arguments: { path: "src/interrupted.txt", content: "HALF DONE\n" } }] },
      { tool_calls: [{ name: "bash", arguments: { command: `${INTERRUPT_MARK}; echo never` } }] },
      { content: "never reached" },
    ],
  },
  { match: "E2E-FOLLOW", replies: [{ content: FOLLOW_TEXT, chunk_size: 4, chunk_delay: 0.05 }] },
  { match: "E2E-STREAM", replies: [{ content: STREAM_TEXT, chunk_size: 6, chunk_delay: 0.05 }] },
  { match: "E2E-SELECTION", replies: [{ content: "It defines `main`, which prints a greeting (SELECTION-OK)." }] },
  {
    match: "E2E-MCP",
    replies: [
      { tool_calls: [{ name: "mcp__tb__echo", arguments: { text: "hello-from-mcp" } }] }, // read-only: runs
      { tool_calls: [{ name: "mcp__tb__write_note", arguments: { text: "note-1" } }] }, // asks first
      { content: "MCP-DONE" },
    ],
  },
  // The project group (issue 24): a prompt file the server expands, an @-attached file, a
  // read in a subfolder with its own AGENTS.md.
  { match: "REVIEW-EXPANDED", replies: [{ content: "Reviewed (REVIEW-OK)." }] },
  { match: "E2E-MENTION", replies: [{ content: "I see the file you pointed at (MENTION-OK)." }] },
  {
    match: "E2E-NESTED",
    replies: [{ tool_calls: [{ name: "read_file", arguments: { path: "sub/notes.txt" } }] }, { content: "Read the notes (NESTED-OK)." }],
  },
  // The language group (issue 38): a .ts file with a type error, written by the agent.
  {
    match: "E2E-TYPECHECK",
    replies: [
      { tool_calls: [{ name: "write_file", arguments: { path: "src/bad.ts", content: TS_BAD } }] },
      { content: "Wrote it (TYPECHECK-DONE)." },
    ],
  },
  {
    match: "E2E-NAVIGATE",
    replies: [
      { tool_calls: [{ name: "definition", arguments: { path: "src/main.ts", line: 2, symbol: "greet" } }] },
      { tool_calls: [{ name: "references", arguments: { path: "src/lib.ts", line: 1, symbol: "greet" } }] },
      { tool_calls: [{ name: "symbols", arguments: { path: "src/lib.ts" } }] },
      { content: "Found them (NAVIGATE-DONE)." },
    ],
  },
  { match: "*", replies: [{ content: "fallback answer" }] },
];

const scenarios = [];
const scenario = (name, fn, options = {}) => scenarios.push({ name, fn, ...options });
const state = {};
const hostile = { marker: join(tmp, "workspace-chosen-server-ran"), connections: 0 };

scenario("list tools shows the tools with their marks", async ({ page }) => {
  // Before any ask the status bar names the configured model (MODEL here), not "default model".
  await until("the configured model in the status bar", async () => (await page.locator(".statusbar-item", { hasText: "scripted" }).count()) > 0, 30_000);
  await runCommand(page, "Agent: List Tools");
  const rows = page.locator(".quick-input-list .monaco-list-row");
  // The five file tools, then the language tools VS Code's own language servers answer.
  await until("the tools in the quick pick", async () => (await rows.count()) >= 5, 30_000);
  const labels = await rows.allInnerTexts();
  const text = labels.join("\n");
  for (const name of ["bash", "read_file", "write_file", "edit_file", "glob"]) {
    assert(labels.some((l) => l.includes(name)), `tool ${name} missing from:\n${text}`);
  }
  assert(/read_file[\s\S]*read-only/.test(labels.find((l) => l.includes("read_file")) ?? ""), `read_file not marked read-only:\n${text}`);
  assert(/destructive/.test(labels.find((l) => l.includes("bash")) ?? ""), `bash not marked destructive:\n${text}`);
  // The language tools too (the list may be longer than the pick shows: filtered to one).
  await page.locator(".quick-input-widget:visible input").first().fill("rename");
  await until("rename, marked destructive", async () => (await rows.allInnerTexts()).some((l) => l.includes("rename") && /destructive/.test(l)), 10_000);
  await page.screenshot({ path: join(OUTPUT, "list-tools.png") });
  await page.keyboard.press("Escape");
});

scenario("ask: prompt reaches the model, answer rendered, trace in order", async ({ page, model, userData }) => {
  await ask(page, "E2E-FIRST what does src/app.py do?");
  const frame = await panelFrame(page);
  await until("the rendered answer", async () => (await frame.locator(".entry.done .answer h2").count()) > 0, 60_000);
  const answer = frame.locator(".entry.done .answer").last();
  assert((await answer.locator("h2").innerText()) === "Findings", "heading not rendered");
  assert((await answer.locator("strong").innerText()) === "hello from app", "bold not rendered");
  assert((await answer.locator("table td").count()) === 4, "table not rendered");
  assert((await answer.locator("a[href='src/app.py']").count()) === 1, "file link missing");
  const injected = await frame.evaluate(() =>
    document.title === "pwned" || Array.from(document.scripts).some((s) => (s.textContent ?? "").includes("pwned")),
  );
  assert(!injected, "a script from the answer reached the page");
  assert((await answer.innerText()).includes("<script>"), "raw HTML was not shown escaped");
  // One row per tool call, collapsed, the failed one with its error inline.
  const rows = frame.locator(".entry.done .call");
  assert((await rows.count()) === 3, `tool rows: ${await rows.count()}`);
  assert((await frame.locator(".entry.done .call.failed").count()) === 1, "no failed row");
  assert((await frame.locator(".entry.done .call.open").count()) === 0, "tool rows not collapsed");
  const error = await frame.locator(".entry.done .call.failed .call-error").innerText();
  assert(/^Error: /.test(error), `inline error: ${error}`);
  // The text the model wrote in a turn that also called a tool, before that tool's row.
  const itemsInOrder = () => frame.locator(".entry.done .items > *").evaluateAll((els) => els.map((e) => (e.matches(".call") ? "call" : e.textContent.replace(/\s+/g, " ").trim().slice(0, 20))));
  const expectedItems = JSON.stringify(["call", "First I read the app", "call", "call", "Findings The entry p"]);
  await until("the turn's text between the tool rows", async () => JSON.stringify(await itemsInOrder()) === expectedItems, 10_000).catch(async (e) => {
    throw new Error(`${e.message}: ${JSON.stringify(await itemsInOrder())}`);
  });
  // The footer: elapsed time and tokens, quietly.
  const footer = await frame.locator(".entry.done .footer").innerText();
  assert(/\d(ms|\.\d\ds)/.test(footer), `footer: ${footer}`);
  // The prompt reached the model.
  const requests = modelRequests(model.recordFile);
  assert(requests.length === 4, `expected 4 model requests, got ${requests.length}`);
  assert(lastUserText(requests[0]).includes("E2E-FIRST"), "the prompt did not reach the model");
  // The trace: one line per finished call (none ran for a second: no start lines), in order.
  const lines = await until("the trace lines", () => {
    const l = traceFileLines(userData);
    return l.some((x) => x.includes("answered")) ? l : undefined;
  });
  const calls = lines.filter((l) => /[▶✓✗] /.test(l));
  const expected = [/✓ bash echo hello-from-bash — ok \d/, /✓ read_file src\/app.py — ok/, /✗ read_file missing.py — failed \d+ ms: Error: \S/];
  assert(calls.length === expected.length, `trace lines:\n${lines.join("\n")}`);
  expected.forEach((re, i) => assert(re.test(calls[i]), `trace line ${i} ${JSON.stringify(calls[i])} !~ ${re}`));
  assert(/^\d\d:\d\d:\d\d\.\d{3} \[[0-9a-zA-Z-]{1,8}\] turn 1 ✓ bash/.test(calls[0]), `line format: ${calls[0]}`);
  // The trace channel opens on request only (not by itself on the first ask), with the same lines.
  assert(!(await visibleOutputLines(page)).some((l) => l.includes("answered")), "the trace opened by itself");
  await runCommand(page, "Agent: Show Tool Trace");
  const visible = await until("the trace in the Output view", async () => {
    const v = await visibleOutputLines(page);
    return v.some((l) => l.includes("answered")) ? v : undefined;
  });
  assert(visible.some((l) => /✗ read_file missing.py — failed/.test(l)), `Output view shows:\n${visible.join("\n")}`);
  // Clicking the file link opens it in an editor.
  await answer.locator("a[href='src/app.py']").click();
  await until("app.py opened from the link", async () => (await page.locator(".tabs-container .tab", { hasText: "app.py" }).count()) > 0, 15_000);
  state.sessionShort = /\[([^\]]+)\] answered/.exec(lines.find((l) => l.includes("answered")))?.[1];
  await frame.locator(".entry.done .call").first().locator(".disclosure-head").click({ force: true }); // expanded for the screenshot
  await page.screenshot({ path: join(OUTPUT, "panel-and-trace.png") });
  await frame.locator("#conversation").screenshot({ path: join(OUTPUT, "panel.png") });
  await page.locator(".part.panel").screenshot({ path: join(OUTPUT, "trace.png") });
});

scenario("follow-up continues the conversation", async ({ page, model, userData }) => {
  await ask(page, "E2E-SECOND is this the same conversation?");
  const frame = await panelFrame(page);
  await until("the second answer", async () => (await frame.locator(".entry.done").count()) === 2, 60_000);
  const prompts = await frame.locator(".entry .prompt-text").allInnerTexts();
  assert(prompts.length === 2 && prompts[0].includes("E2E-FIRST") && prompts[1].includes("E2E-SECOND"), `prompts: ${prompts}`);
  assert((await frame.locator(".entry.done").nth(1).locator(".answer em").innerText()) === "continues", "second answer not rendered");
  const requests = modelRequests(model.recordFile);
  const last = requests[requests.length - 1];
  const users = last.messages.filter((m) => m.role === "user").map((m) => m.content);
  assert(users.length === 2 && users[0].includes("E2E-FIRST") && users[1].includes("E2E-SECOND"), `follow-up carried ${JSON.stringify(users)}`);
  assert(last.messages.some((m) => m.role === "tool"), "earlier tool results not in the follow-up's context");
  const lines = traceFileLines(userData);
  const askLine = lines.find((l) => l.includes("ask: E2E-SECOND"));
  assert(askLine && state.sessionShort && askLine.includes(`[${state.sessionShort}]`), `follow-up ask line ${askLine} not in session ${state.sessionShort}`);
  await page.screenshot({ path: join(OUTPUT, "follow-up.png") });
});

scenario("the answer shows while it streams, before the ask is done; the footer shows the context use", async ({ page }) => {
  await ask(page, "E2E-STREAM write slowly");
  const frame = await panelFrame(page);
  const lastEntry = () => frame.evaluate(() => {
    const entries = document.querySelectorAll(".entry");
    const last = entries[entries.length - 1];
    return last ? { cls: last.className, prompt: last.querySelector(".prompt-text")?.textContent ?? "", answer: Array.from(last.querySelectorAll(".answer")).map((a) => a.textContent).join("|") } : undefined;
  });
  const partial = await until("part of the answer while the ask runs", async () => {
    const e = await lastEntry();
    return e && e.prompt.includes("E2E-STREAM") && /\bworking\b/.test(e.cls) && e.answer.includes("STREAM-BEGIN") && !e.answer.includes("STREAM-END") ? e : undefined;
  }, 30_000, 100);
  await frame.locator("#conversation").screenshot({ path: join(OUTPUT, "streaming.png") });
  const entry = await finishedEntry(frame, "E2E-STREAM");
  const answers = await entry.locator(".answer").allInnerTexts();
  assert(answers.length === 1, `answers shown: ${JSON.stringify(answers)}`);
  assert(answers[0].includes("STREAM-END") && answers[0].includes("word39") && answers[0].length > partial.answer.length, `final answer: ${answers[0]}`);
  assert((await entry.locator(".answer strong").innerText()) === "bold", "the streamed Markdown is rendered");
  const footer = await entry.locator(".footer").innerText();
  assert(/context [\d,]+ of [\d,]+ tokens/.test(footer), `footer: ${footer}`);
});

scenario("Ask About Selection sends the selected lines with the prompt, and the chat says so", async ({ page, model }) => {
  await openFile(page, "src/app.py");
  await focusEditor(page, "src/app.py");
  await page.keyboard.press("Control+Home");
  await page.keyboard.press("Shift+ArrowDown");
  await page.keyboard.press("Shift+ArrowDown");
  await page.keyboard.press("Control+Alt+Shift+A");
  const frame = await panelFrame(page);
  const pinned = frame.locator("#pinned");
  const shown = await until("the selection attached above the input", async () => {
    const text = (await pinned.isVisible()) ? await pinned.innerText() : "";
    return text.includes("src/app.py") ? text : undefined;
  }, 5000).catch(async () => {
    log("Ctrl+Alt+Shift+A did not attach the selection; using the palette");
    await runCommand(page, "Agent: Ask About Selection");
    return until("the selection attached above the input", async () => ((await pinned.isVisible()) ? await pinned.innerText() : "") || undefined, 15_000);
  });
  assert(shown.includes("selection: src/app.py, lines 1-2"), `attached: ${shown}`);
  await until("the chat input focused", () => frame.evaluate(() => document.activeElement?.id === "input"), 10_000);
  await until("the chat ready to send", async () => (await frame.locator("#send").innerText()) === "Send", 30_000);
  const count = modelRequests(model.recordFile).length;
  await page.keyboard.type("E2E-SELECTION what does this do?");
  await page.keyboard.press("Enter");
  const entry = await finishedEntry(frame, "E2E-SELECTION");
  assert((await entry.locator(".attached").innerText()) === "selection: src/app.py, lines 1-2", "the message does not say what was attached");
  assert(!(await pinned.isVisible()), "the attachment stays for the next prompt");
  const request = modelRequests(model.recordFile).slice(count).find((b) => lastUserText(b).includes("E2E-SELECTION"));
  const sent = request ? lastUserText(request) : "";
  assert(sent.includes("def main():") && sent.includes('print("hello from app")') && sent.includes("lines 1-2"), `the model got: ${sent}`);
  assert(!sent.includes("__main__"), "more than the selection was sent");
  await page.screenshot({ path: join(OUTPUT, "ask-about-selection.png") });
  await runCommand(page, "View: Close All Editors").catch(() => {});
});

scenario("the file you look at is a chip above the input: sent while it shows, not once ✕ leaves it out", async ({ page, model }) => {
  await openFile(page, "src/app.py");
  await focusEditor(page, pathToFileURL(join(tmp, "workspace", "src", "app.py")).pathname);
  const frame = await focusChatInput(page);
  const chip = frame.locator("#attach .chip.active-file");
  await until("the app.py chip, attached", async () => (await chip.count()) === 1 && (await chip.innerText()).includes("app.py") && (await chip.getByRole("button", { name: "Don't attach app.py" }).count()) === 1, 15_000);
  // Its row says what it is (an open AGENTS.md beside the instruction chip of that name).
  assert((await frame.locator("#attach .chips-label").innerText()) === "With the ask:", `label: ${await frame.locator("#attach .chips-label").innerText()}`);
  assert((await frame.getByRole("checkbox").count()) === 0, "the old unticked boxes are still shown");
  await frame.locator("#composer").screenshot({ path: join(OUTPUT, "active-file-chip.png") });
  let count = modelRequests(model.recordFile).length;
  await ask(page, "E2E-CHIP-ON what is this file?");
  const on = await finishedEntry(frame, "E2E-CHIP-ON");
  assert((await on.locator(".attached").innerText()) === "file: src/app.py", `attached: ${await on.locator(".attached").innerText()}`);
  let sent = lastUserText(modelRequests(model.recordFile).slice(count).find((b) => lastUserText(b).includes("E2E-CHIP-ON")));
  assert(sent.includes("The user's active editor shows src/app.py"), `the model got: ${sent}`);
  // ✕: the chip says the file stays out, and it does.
  await chip.getByRole("button", { name: "Don't attach app.py" }).click();
  await until("the chip turned off", async () => (await chip.getByRole("button", { name: "Attach app.py" }).count()) === 1, 10_000);
  count = modelRequests(model.recordFile).length;
  await ask(page, "E2E-CHIP-OFF and now?");
  const off = await finishedEntry(frame, "E2E-CHIP-OFF");
  assert((await off.locator(".attached").count()) === 0, `attached: ${await off.locator(".attached").allInnerTexts()}`);
  sent = lastUserText(modelRequests(model.recordFile).slice(count).find((b) => lastUserText(b).includes("E2E-CHIP-OFF")));
  assert(!sent.includes("src/app.py"), `the file was sent anyway: ${sent}`);
  // ＋ puts it back (as the following scenarios expect).
  await chip.getByRole("button", { name: "Attach app.py" }).click();
  await until("the chip attached again", async () => (await chip.getByRole("button", { name: "Don't attach app.py" }).count()) === 1, 10_000);
});

scenario("Agent: Compact Conversation compacts this conversation and says by how much", async ({ page, model }) => {
  const frame = await panelFrame(page);
  const count = modelRequests(model.recordFile).length;
  await runCommand(page, "Agent: Compact Conversation");
  const note = await until("the compaction's note in the chat", async () => {
    const texts = await frame.locator(".entry").last().locator(".note").allInnerTexts();
    return texts.find((t) => /compacted: [\d,]+ → [\d,]+ tokens of [\d,]+/.test(t));
  }, 60_000);
  const footer = await frame.locator(".entry").last().locator(".footer").innerText();
  const after = /→ ([\d,]+) tokens of ([\d,]+)/.exec(note);
  assert(after && footer.includes(`context ${after[1]} of ${after[2]} tokens`), `footer ${footer} after ${note}`);
  // A compaction on request summarizes the older turns: the model got a summary request with
  // the earlier conversation in it (and no tools to call), and the note says so.
  const summary = modelRequests(model.recordFile).slice(count).find((b) => String(b.messages[0]?.content ?? "").includes("You compact the history"));
  assert(summary, `no summary request after agent/compact (note: ${note})`);
  const transcript = String(summary.messages[1]?.content ?? "");
  assert(transcript.includes("Conversation to summarize") && transcript.includes("E2E-FIRST"), `the summary request lacks the earlier turns: ${transcript.slice(0, 400)}`);
  assert(!summary.tools?.length, "the summary request offers tools");
  assert(/messages? summarized/.test(note), `the note does not say turns were summarized: ${note}`);
  log(`compaction: ${note}`);
  // The conversation goes on after it, from the summary.
  const before = modelRequests(model.recordFile).length;
  await ask(page, "E2E-SECOND after the compaction?");
  await finishedEntry(frame, "E2E-SECOND after the compaction");
  const next = modelRequests(model.recordFile).slice(before).find((b) => lastUserText(b).includes("E2E-SECOND after the compaction"));
  assert(next && next.messages.some((m) => String(m.content ?? "").startsWith("[Summary of the earlier conversation")), "the follow-up does not carry the summary");
});

scenario("a long run: scrolling up stays put, a selection survives, jump to latest", async ({ page }) => {
  await ask(page, "E2E-LONG write a long answer");
  const frame = await panelFrame(page);
  await finishedEntry(frame, "E2E-LONG");
  await ask(page, "E2E-SCROLL take many small steps");
  await until("the first steps", async () => (await frame.locator(".entry.working .call").count()) >= 2, 30_000);
  // The reader scrolls up (mouse wheel over the view) and selects text in the long answer.
  await scrollToTop(page, frame);
  const selected = await frame.evaluate(() => {
    const target = Array.from(document.querySelectorAll(".answer p")).find((p) => p.textContent.includes("Line 3 of a long answer"));
    const range = document.createRange();
    range.selectNodeContents(target);
    const selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    return selection.toString();
  });
  assert(selected.includes("Line 3"), `selected: ${selected}`);
  const rows = frame.locator(".entry").last().locator(".call");
  const rowsThen = await rows.count();
  assert(rowsThen < 18, `the run is nearly over before the check: ${rowsThen} rows`);
  await until("more steps arriving", async () => (await rows.count()) >= rowsThen + 2, 30_000);
  const after = await frame.evaluate(() => ({
    top: document.getElementById("conversation").scrollTop,
    selection: window.getSelection().toString(),
    jump: !document.getElementById("jump").hidden,
  }));
  assert(after.top === 0, `the view moved to ${after.top}`);
  assert(after.selection === selected, `the selection changed: ${JSON.stringify(after.selection)}`);
  assert(after.jump, "no jump to latest offered");
  await page.screenshot({ path: join(OUTPUT, "scrolled-up.png") });
  await frame.locator("#jump").click();
  await finishedEntry(frame, "E2E-SCROLL", 90_000);
  const bottom = await frame.evaluate(() => {
    const c = document.getElementById("conversation");
    return c.scrollHeight - c.clientHeight - c.scrollTop;
  });
  assert(bottom <= 32, `not following at the bottom after jump: ${bottom}px left`);
});

scenario("sending while scrolled up shows the new prompt and follows its answer", async ({ page }) => {
  const frame = await panelFrame(page);
  await scrollToTop(page, frame);
  await until("jump to latest offered", async () => frame.getByRole("button", { name: "↓ Jump to latest" }).isVisible(), 5000);
  await ask(page, "E2E-FOLLOW sent while scrolled up");
  const prompt = frame.locator(".prompt-text", { hasText: "sent while scrolled up" });
  const working = frame.locator(".entry.working", { hasText: "sent while scrolled up" });
  // While its answer is being written: the prompt in sight, the view at the end.
  await until("the new prompt in sight while it is answered", async () =>
    (await working.count()) === 1 && (await inSight(frame, prompt)) && chatAtEnd(frame), 10_000);
  await finishedEntry(frame, "sent while scrolled up");
  const lastLine = frame.locator(".entry").last().getByText("FOLLOW-END");
  await until("the end of its answer in sight", async () => (await chatAtEnd(frame)) && inSight(frame, lastLine), 10_000);
  assert(!(await frame.getByRole("button", { name: "↓ Jump to latest" }).isVisible()), "jump to latest still offered at the end");
});

scenario("a tool row expands to its arguments and output; Open full output shows all of it", async ({ page, userData }) => {
  await ask(page, "E2E-BIG print a lot");
  const frame = await panelFrame(page);
  const entry = await finishedEntry(frame, "E2E-BIG");
  const row = entry.locator(".call").first();
  await row.locator(".disclosure-head").click();
  // The multi-line command keeps its lines, in the row and (with a mark) in the trace.
  const command = await row.locator(".arg-value").first().innerText();
  assert(command === BIG_COMMAND, `arguments as shown: ${JSON.stringify(command)}`);
  assert((await row.locator(".disclosure-head .args").innerText()).includes("⏎"), "no line-break mark in the summary");
  const trace = traceFileLines(userData).find((l) => l.includes("✓ bash echo start ⏎ head"));
  assert(trace, `trace:\n${traceFileLines(userData).slice(-5).join("\n")}`);
  // The output as a terminal shows it: its end (fetched, the preview being the head), unwrapped.
  const pre = row.locator("pre.output");
  await until("the output's last line in the row", async () => (await pre.innerText()).endsWith("END-OF-BIG"), 15_000);
  const tail = await pre.innerText();
  assert(!tail.startsWith("start"), `the row shows the head: ${tail.slice(0, 40)}`);
  assert(await row.getByText(/^The last \d+ lines? of \d+\.$/).isVisible(), `bar: ${await row.locator(".output-bar").innerText()}`);
  const unwrapped = await pre.evaluate((el) => ({ sideways: el.scrollWidth > el.clientWidth, lines: el.getClientRects().length, height: el.clientHeight, font: parseFloat(getComputedStyle(el).fontSize) }));
  assert(unwrapped.sideways && unwrapped.height < unwrapped.font * 8, `the output wraps: ${JSON.stringify(unwrapped)}`);
  await page.screenshot({ path: join(OUTPUT, "tool-row.png") });
  // Show all: the whole output in place, from its first line.
  await row.getByRole("button", { name: "Show all" }).click();
  await until("the whole output in the row", async () => {
    const text = await pre.innerText();
    return text.startsWith("start\nyyyy") && text.endsWith("END-OF-BIG");
  }, 15_000);
  assert(await row.getByText(/^Lines 1–(\d+) of \1\.$/).isVisible(), `bar after Show all: ${await row.locator(".output-bar").innerText()}`);
  // Copy output: the whole output on the clipboard; the button says so for a moment.
  await row.getByRole("button", { name: "Copy output" }).click();
  await until("the button saying Copied", async () => (await row.getByRole("button", { name: "Copied ✓" }).count()) === 1, 5000);
  await until("the output on the clipboard", async () => {
    const copied = await page.evaluate(() => navigator.clipboard.readText());
    return copied.startsWith("start\nyyyy") && copied.includes("END-OF-BIG");
  }, 10_000);
  await row.getByRole("button", { name: "Open full output" }).click();
  const editor = page.locator('.monaco-editor[data-uri^="agent-lsp-output:"]').first();
  await until("the full output editor", async () => (await editor.count()) > 0, 15_000);
  await until("the end of the output in it", async () => (await editor.innerText()).includes("END-OF-BIG"), 15_000);
  assert((await page.locator(".tabs-container .tab.active", { hasText: "bash: echo start" }).count()) > 0, `tab not named after the command: ${await page.locator(".tabs-container .tab.active").innerText()}`);
  // Read-only: typing changes nothing.
  await editor.locator(".view-lines").click();
  await page.keyboard.type("TYPED");
  assert(!(await editor.innerText()).includes("TYPED"), "the output editor is writable");
  await page.screenshot({ path: join(OUTPUT, "full-output.png") });
  await runCommand(page, "View: Close Editor");
});

scenario("code blocks: Insert at Cursor inserts the code, Copy puts it on the clipboard", async ({ page }) => {
  await runCommand(page, "File: New Untitled Text File");
  await until("an untitled editor", async () => (await page.locator(".tabs-container .tab.active", { hasText: "Untitled" }).count()) > 0, 10_000);
  try {
    await ask(page, "E2E-CODE show me a function");
    const frame = await panelFrame(page);
    const entry = await finishedEntry(frame, "E2E-CODE");
    const block = entry.locator(".code-block").first();
    assert((await block.locator("pre").count()) === 1, "not one block");
    assert((await block.locator(".hljs-keyword").count()) > 0, "not highlighted");
    // Long unbroken tokens wrap instead of widening the view.
    const overflow = await frame.evaluate(() => {
      const c = document.getElementById("conversation");
      return c.scrollWidth - c.clientWidth;
    });
    assert(overflow <= 0, `the view is ${overflow}px wider than its width`);
    await block.getByRole("button", { name: "Insert at Cursor" }).click();
    const untitled = page.locator('.monaco-editor[data-uri^="untitled:"]').first();
    await until("the code in the editor", async () => (await untitled.innerText()).replace(/\u00a0/g, " ").includes("return 42"), 10_000);
    await block.getByRole("button", { name: "Copy" }).click();
    await until("the code on the clipboard", async () => (await page.evaluate(() => navigator.clipboard.readText())).includes("def added():\n    return 42"), 10_000);
    await page.screenshot({ path: join(OUTPUT, "code-block.png") });
  } finally {
    await page.locator(".tabs-container .tab", { hasText: "Untitled" }).first().click().catch(() => {});
    await runCommand(page, "View: Revert and Close Editor").catch(() => {});
  }
});

scenario("a plain-text path:line opens the file at that line; Up recalls the last prompt", async ({ page }) => {
  await ask(page, "E2E-PATHS where is the entry point?");
  const frame = await panelFrame(page);
  const entry = await finishedEntry(frame, "E2E-PATHS");
  const links = entry.locator("a.path-link");
  // Linked once the files are found to exist, which may come after the entry is done.
  await until("the two path links", async () => (await links.count()) >= 2, 15_000).catch(() => {});
  const hrefs = await links.evaluateAll((as) => as.map((a) => a.getAttribute("href")));
  assert(JSON.stringify(hrefs) === JSON.stringify(["src/app.py:5", "src/greet.py:2"]), `links: ${JSON.stringify(hrefs)}`);
  await links.first().click();
  await until("app.py at line 5", async () => {
    const active = await page.locator(".tabs-container .tab.active", { hasText: "app.py" }).count();
    const position = await page.locator(".statusbar-item", { hasText: /Ln \d+, Col \d+/ }).first().innerText();
    return active > 0 && /Ln 5, Col 1/.test(position);
  }, 15_000);
  await runCommand(page, "View: Close Editor");
  // Up in the empty input brings back the last prompt.
  await frame.locator("#input").click();
  await page.keyboard.press("ArrowUp");
  await until("the recalled prompt", async () => (await frame.locator("#input").inputValue()) === "E2E-PATHS where is the entry point?", 5000);
  await page.keyboard.press("ArrowDown");
  await until("the draft back", async () => (await frame.locator("#input").inputValue()) === "", 5000);
});

scenario("both themes: the chat is readable in dark and light", async ({ page }) => {
  const frame = await panelFrame(page);
  await frame.locator("#conversation").evaluate((c) => {
    c.scrollTop = c.scrollHeight;
  });
  await page.screenshot({ path: join(OUTPUT, "theme-dark.png") });
  await runCommand(page, "Preferences: Color Theme");
  await page.keyboard.type("Light Modern");
  await until("Light Modern in the list", async () => (await page.locator(".quick-input-list .monaco-list-row.focused", { hasText: "Light Modern" }).count()) > 0, 10_000);
  await page.keyboard.press("Enter");
  try {
    await until("the light theme in the view", () => frame.evaluate(() => document.body.classList.contains("vscode-light")), 15_000);
    const prompt = await frame.locator(".prompt-text").first().evaluate((el) => getComputedStyle(el).borderLeftColor);
    assert(prompt !== "rgba(0, 0, 0, 0)", "the prompt has no accent");
    await page.screenshot({ path: join(OUTPUT, "theme-light.png") });
    await frame.locator("#conversation").screenshot({ path: join(OUTPUT, "theme-light-chat.png") });
  } finally {
    await runCommand(page, "Preferences: Color Theme");
    await page.keyboard.type("Dark Modern");
    await until("Dark Modern in the list", async () => (await page.locator(".quick-input-list .monaco-list-row.focused", { hasText: "Dark Modern" }).count()) > 0, 10_000);
    await page.keyboard.press("Enter");
  }
});

scenario("a conversation survives a window reload and continues; New Conversation keeps it in the history", async ({ page, model }) => {
  await ask(page, "E2E-RELOAD-1 remember the word PAPAYA");
  let frame = await panelFrame(page);
  await finishedEntry(frame, "E2E-RELOAD-1");
  const before = await frame.locator(".prompt-text").allInnerTexts();
  await page.reload();
  await page.locator(".monaco-workbench").waitFor({ timeout: 60_000 });
  await runCommand(page, "Agent: Show Chat");
  frame = await panelFrame(page);
  await until("the conversation shown again", async () => JSON.stringify(await frame.locator(".prompt-text").allInnerTexts()) === JSON.stringify(before), 30_000);
  // Reloaded, it opens at its end: the last prompt and its answer in sight.
  const lastPrompt = frame.locator(".prompt-text", { hasText: "E2E-RELOAD-1" });
  await until("the reloaded conversation at its end", async () => (await chatAtEnd(frame)) && inSight(frame, lastPrompt), 15_000);
  const count = modelRequests(model.recordFile).length;
  await ask(page, "E2E-RELOAD-2 which word?");
  await finishedEntry(frame, "E2E-RELOAD-2");
  const request = modelRequests(model.recordFile).slice(count)[0];
  const users = request.messages.filter((m) => m.role === "user").map((m) => m.content);
  assert(users.some((u) => u.includes("PAPAYA")) && users[users.length - 1].includes("E2E-RELOAD-2"), `continued with ${JSON.stringify(users)}`);
  // The reader scrolls up in it (when it is long enough to), then starts a new one.
  const scrollable = await frame.evaluate(() => document.getElementById("conversation").scrollHeight > document.getElementById("conversation").clientHeight + 400);
  let leftAt;
  if (scrollable) {
    const area = await frame.locator("#conversation").boundingBox();
    await page.mouse.move(area.x + area.width / 2, area.y + area.height / 2);
    await page.mouse.wheel(0, -300);
    await until("scrolled up a little", async () => frame.getByRole("button", { name: "↓ Jump to latest" }).isVisible(), 10_000);
    leftAt = await topEntryPrompt(frame);
  } else log("the conversation fits the view: reopening where the reader left it not checked");
  // New Conversation: an empty view; the old one is in the history and reopens.
  await runCommand(page, "Agent: New Conversation");
  await until("an empty conversation", async () => (await frame.locator(".entry").count()) === 0, 10_000);
  await runCommand(page, "Agent: Conversation History");
  const row = page.locator(".quick-input-list .monaco-list-row", { hasText: "E2E-FIRST" }).first();
  await until("the old conversation in the history", async () => (await row.count()) > 0, 15_000);
  await page.screenshot({ path: join(OUTPUT, "history.png") });
  await row.click();
  await until("the old conversation reopened", async () => (await frame.locator(".prompt-text", { hasText: "E2E-RELOAD-2" }).count()) === 1, 15_000);
  // Reopened, it shows where the reader left it (else its end), with "Jump to latest" back to the end.
  const reopenedLast = frame.locator(".prompt-text", { hasText: "E2E-RELOAD-2" });
  const jump = frame.getByRole("button", { name: "↓ Jump to latest" });
  if (leftAt !== undefined) {
    await until("the reopened conversation where the reader left it", async () => (await topEntryPrompt(frame)) === leftAt && jump.isVisible(), 15_000).catch(async (e) => {
      throw new Error(`${e.message}: left at ${JSON.stringify(leftAt)}, now ${JSON.stringify(await topEntryPrompt(frame))}; ${JSON.stringify(await frame.evaluate(() => window.agentLspPlaces()))}`);
    });
    await jump.click();
  }
  await until("the reopened conversation at its end", async () => (await chatAtEnd(frame)) && inSight(frame, reopenedLast), 15_000);
  assert(!(await jump.isVisible()), "jump to latest offered at the end");
});

scenario("a conversation reopened from the history continues: the follow-up carries its earlier turns", async ({ page, model }) => {
  // The previous scenario reopened the E2E-RELOAD conversation from the history.
  const frame = await panelFrame(page);
  // Text content, not innerText: entries scrolled far out of sight are not rendered (content-visibility).
  const shown = await frame.locator(".prompt-text").allTextContents();
  assert(shown.some((p) => p.includes("E2E-RELOAD-2")), `not the reopened conversation: ${JSON.stringify(shown)}`);
  const count = modelRequests(model.recordFile).length;
  await ask(page, "E2E-REOPENED which word was it?");
  await finishedEntry(frame, "E2E-REOPENED");
  assert((await frame.locator(".entry.done").last().locator(".answer").innerText()).includes("REOPENED-OK"), "the follow-up's answer not shown");
  const prompts = await frame.locator(".prompt-text").allTextContents();
  assert(prompts.length === shown.length + 1 && prompts[prompts.length - 1].includes("E2E-REOPENED"), `the follow-up is not added to the reopened conversation: ${JSON.stringify(prompts)}`);
  const request = modelRequests(model.recordFile).slice(count).find((b) => lastUserText(b).includes("E2E-REOPENED"));
  assert(request, "the follow-up reached no model");
  const users = request.messages.filter((m) => m.role === "user").map((m) => String(m.content ?? ""));
  const i1 = users.findIndex((u) => u.includes("PAPAYA"));
  const i2 = users.findIndex((u) => u.includes("E2E-RELOAD-2"));
  assert(i1 >= 0 && i2 > i1 && users[users.length - 1].includes("E2E-REOPENED"), `the follow-up carried ${JSON.stringify(users.map((u) => u.slice(0, 60)))}`);
  assert(request.messages.some((m) => m.role === "assistant" && String(m.content ?? "").length > 0), "no earlier answer in the follow-up's context");
});

scenario("Stop during a long bash cancels it", async ({ page, userData }) => {
  assert(pgrep(CANCEL_MARK).length === 0, `a ${CANCEL_MARK} process exists before the test`);
  await ask(page, "E2E-CANCEL run the long job");
  await until("the long bash to start", () => pgrep(CANCEL_MARK).length > 0, 60_000);
  // Still running after a second: the trace shows its start line.
  await until("the trace start line", () => traceFileLines(userData).some((l) => l.includes(`▶ bash ${CANCEL_MARK}`)), 15_000);
  const frame = await panelFrame(page);
  await until("the running tool row", async () => (await frame.locator(".entry.working .call.running").count()) === 1, 15_000);
  const stop = frame.locator("#send");
  await until("the Stop button", async () => (await stop.innerText()) === "Stop", 10_000);
  await page.screenshot({ path: join(OUTPUT, "cancel-progress.png") });
  const clicked = Date.now();
  await stop.click();
  log(`cancel: the click landed ${Date.now() - clicked}ms after it was asked for`);
  await until("the cancelled entry", async () => (await frame.locator(".entry.cancelled").count()) === 1, 20_000);
  log(`cancel: the entry said cancelled ${Date.now() - clicked}ms after the click`);
  await until("the bash process to be gone", () => pgrep(CANCEL_MARK).length === 0, 10_000);
  log(`cancel: the process was gone ${Date.now() - clicked}ms after the click`);
  // The trace file is the Output channel's log, which VS Code flushes on its own schedule.
  await until("the cancel line in the trace", () => traceFileLines(userData).some((l) => l.includes("ask cancelled by user")), 10_000);
  await until("Send again", async () => (await stop.innerText()) === "Send", 10_000);
  const status = await page.locator(".statusbar-item", { hasText: "Agent:" }).first().innerText();
  assert(/idle/.test(status), `status bar after cancel: ${status}`);
  // No busy notification outlives the ask.
  const toasts = await notifications(page);
  assert(!toasts.some((t) => /working|still/i.test(t)), `notifications left: ${toasts}`);
  await page.screenshot({ path: join(OUTPUT, "cancelled.png") });
});

scenario("the agent reads an unsaved buffer and edits another line in it, undoably", async ({ page, model, workspace }) => {
  const file = join(workspace, "src", "greet.py");
  const path = pathToFileURL(file).pathname; // as in the editor's data-uri
  await openFile(page, "src/greet.py");
  // The user types a line and does not save.
  await focusEditor(page, path);
  await page.keyboard.press("Control+End");
  await page.keyboard.type(TYPED);
  await page.keyboard.press("Escape"); // a suggestion widget, if any
  await until("the typed line in the editor", async () => (await editorText(page, path)) === GREET + TYPED, 10_000);
  await until("the editor to be dirty", async () => (await page.locator(".tabs-container .tab.active.dirty", { hasText: "greet.py" }).count()) > 0, 10_000);
  try {
    const count = modelRequests(model.recordFile).length;
    await ask(page, "E2E-UNSAVED make the greeting in src/greet.py friendlier");
    const frame = await panelFrame(page);
    await until("the answer", async () => {
      const last = frame.locator(".entry").last();
      return (await last.innerText()).includes("E2E-UNSAVED") && /entry (done|error)/.test((await last.getAttribute("class")) ?? "");
    }, 60_000);
    const last = frame.locator(".entry").last();
    assert((await last.getAttribute("class")) === "entry done", `the ask failed: ${await last.innerText()}`);
    const requests = modelRequests(model.recordFile).slice(count);
    assert(requests.length === 3, `expected 3 model requests, got ${requests.length}`);
    // (a) read_file gave the model the editor's buffer, typed line included, marked unsaved.
    const read = toolResult(requests[1], "read_file") ?? "";
    assert(read.includes(TYPED), `read_file result lacks the unsaved line:\n${read}`);
    assert(/unsaved changes/.test(read), `read_file result does not say the buffer is unsaved:\n${read}`);
    const edited = toolResult(requests[2], "edit_file") ?? "";
    assert(/^Replaced 1 occurrence in src\/greet\.py .*in the editor/.test(edited), `edit_file result:\n${edited}`);
    // (b) the buffer holds both the user's line and the agent's change; (c) the disk neither.
    const withEdit = GREET.replace(GREET_OLD, GREET_NEW) + TYPED;
    await until("the agent's change in the editor", async () => (await editorText(page, path)) === withEdit, 10_000);
    assert(readFileSync(file, "utf8") === GREET, `the file on disk changed:\n${readFileSync(file, "utf8")}`);
    assert((await page.locator(".tabs-container .tab.dirty", { hasText: "greet.py" }).count()) === 1, "greet.py is not dirty");
    // The edit row shows its diff without expanding: the old line removed, the new one added.
    const editRow = last.locator(".call").last();
    const diff = editRow.locator("pre.diff");
    assert(await diff.isVisible(), "the edit's diff is not shown in its collapsed row");
    const diffText = await diff.innerText();
    assert(diffText.includes(`-${GREET_OLD}`) && diffText.includes(`+${GREET_NEW}`), `the row's diff:\n${diffText}`);
    assert(!(await editRow.locator(".disclosure-head").innerText()).includes("old_text="), "the row header still counts characters");
    // The edit_file result, for the screenshot. (force: Playwright's stability wait on a webview
    // element can stall for many seconds in headless Chromium; this click asserts nothing.)
    await last.locator(".call").last().locator(".disclosure-head").click({ force: true });
    await page.screenshot({ path: join(OUTPUT, "unsaved-edit.png") });
    // (d) one undo takes back the agent's change and keeps the user's line.
    await focusEditor(page, path);
    await page.keyboard.press("Control+Z");
    await until("the agent's change undone", async () => (await editorText(page, path)) === GREET + TYPED, 10_000);
    await sleep(300); // nothing more happens after a moment
    const afterUndo = await editorText(page, path);
    assert(afterUndo === GREET + TYPED, `after one undo:\n${afterUndo}`);
    assert(readFileSync(file, "utf8") === GREET, "the file on disk changed after the undo");
    // The row's file name opens that change in VS Code's diff editor.
    await editRow.getByRole("link", { name: "src/greet.py" }).click();
    const diffTab = page.locator(".tabs-container .tab", { hasText: "greet.py (the agent's edit)" });
    await until("the edit's diff editor", async () => (await diffTab.count()) === 1 && (await page.locator(".part.editor").innerText()).replace(/\u00a0/g, " ").includes("AGENT-EDIT hello, "), 15_000);
    await page.screenshot({ path: join(OUTPUT, "edit-diff.png") });
    await runCommand(page, "View: Close Editor").catch(() => {});
  } finally {
    // Leave no dirty editor behind (a later "Close All Editors" would ask to save it).
    await focusEditor(page, path).catch(() => {});
    await runCommand(page, "File: Revert File").catch(() => {});
    await runCommand(page, "View: Close Editor").catch(() => {});
  }
});

scenario("with confirmEdits the user sees VS Code's preview and can reject the edit", async ({ page, model, userData, workspace }) => {
  const file = join(workspace, "src", "greet.py");
  const path = pathToFileURL(file).pathname;
  const sent = (value) => () => {
    const sending = channelFileLines(userData, "Agent Server.log").filter((l) => l.includes("sending agentLsp settings"));
    // Unset, the setting is not sent at all (the server's default, false, applies).
    const last = sending[sending.length - 1] ?? "";
    return sending.length > 0 && (value ? last.includes('"confirmEdits":true') : !last.includes('"confirmEdits"'));
  };
  // Changed once the server runs, the setting reaches it by didChangeConfiguration (logged).
  // Set in the remote settings file, which VS Code watches (code-server's browser-side user
  // settings file is not re-read when changed behind its back; the Settings UI is tested below).
  await until("the agent server", () => channelFileLines(userData, "Agent Server.log").some((l) => l.includes("agent-lsp server started")), 30_000);
  const machineSettings = join(userData, "Machine", "settings.json");
  const original = readFileSync(machineSettings, "utf8");
  writeFileSync(machineSettings, JSON.stringify({ ...JSON.parse(original), "agentLsp.confirmEdits": true }, null, 2));
  try {
    await until("confirmEdits sent to the server", sent(true), 15_000);
    await openFile(page, "src/greet.py");
    // Pinned (double-click on its tab): the refactor preview would replace a preview tab.
    await page.locator(".tabs-container .tab.active", { hasText: "greet.py" }).dblclick();
    const count = modelRequests(model.recordFile).length;
    await ask(page, "E2E-CONFIRM make the greeting friendlier, if I agree");
    // VS Code's refactor preview shows the annotated change and waits for the user.
    const discard = page.getByRole("button", { name: "Discard" });
    await until("the refactor preview", async () => (await discard.count()) > 0 && (await discard.first().isVisible()), 30_000);
    await until("the proposed change in the preview", async () => {
      const text = await page.locator(".part.panel").innerText();
      return text.includes("greet.py") && text.includes("AGENT-EDIT hello,");
    }, 10_000);
    await page.screenshot({ path: join(OUTPUT, "confirm-edit-preview.png") });
    await discard.first().click();
    const frame = await panelFrame(page);
    await until("the answer", async () => {
      const last = frame.locator(".entry").last();
      return (await last.innerText()).includes("E2E-CONFIRM") && (await last.getAttribute("class")) === "entry done";
    }, 30_000);
    const requests = modelRequests(model.recordFile).slice(count);
    assert(requests.length === 3, `expected 3 model requests, got ${requests.length}`);
    const result = toolResult(requests[2], "edit_file") ?? "";
    assert(/^Error: .*the user rejected this edit/.test(result), `edit_file result:\n${result}`);
    assert((await editorText(page, path)) === GREET, `the buffer changed:\n${await editorText(page, path)}`);
    assert(readFileSync(file, "utf8") === GREET, "the file on disk changed");
    assert((await page.locator(".tabs-container .tab.dirty", { hasText: "greet.py" }).count()) === 0, "greet.py is dirty");
  } finally {
    await focusEditor(page, path).catch(() => {});
    await runCommand(page, "View: Close Editor").catch(() => {});
    // Later scenarios expect edits without confirmation.
    writeFileSync(machineSettings, original);
    await until("confirmEdits off again", sent(false), 15_000).catch((error) => log(error.message));
  }
}, { changesSettings: true });

scenario("a permission request is answered on its chat card: always allow, then a changed call is asked and rejected by keyboard; Manage Permissions revokes the grant", async ({ page, model }) => {
  const frame = await panelFrame(page);
  const card = (command) => frame.getByRole("group", { name: /^Waiting for your permission/ }).filter({ hasText: command });
  const count = modelRequests(model.recordFile).length;
  await ask(page, "E2E-PERMISSION write next to the workspace");
  const first = card(PERMISSION_ALLOWED.command);
  await until("the permission card", async () => (await first.count()) === 1, 30_000);
  assert((await page.locator(".monaco-dialog-box").count()) === 0, "a modal dialog opened");
  const text = await first.innerText();
  for (const expected of ["Waiting for your permission: Run outside the sandbox", "Reason: E2E writes a file next to the workspace", "“Always” allows: This exact command, for this conversation (a changed command asks again)"]) {
    assert(text.includes(expected), `the card lacks ${JSON.stringify(expected)}:\n${text}`);
  }
  // The command once, verbatim, in a code block.
  assert((await first.locator("pre code").innerText()) === PERMISSION_ALLOWED.command, `code block: ${await first.locator("pre code").innerText()}`);
  assert(text.split(PERMISSION_ALLOWED.command).length === 2, `the command is shown more than once on the card:\n${text}`);
  for (const name of ["Allow Once", "Always Allow", "Reject", "Always Reject"]) {
    assert((await first.getByRole("button", { name, exact: true }).count()) === 1, `no ${name} button`);
  }
  await page.screenshot({ path: join(OUTPUT, "permission-card.png") });
  await first.getByRole("button", { name: "Always Allow", exact: true }).click();
  await until("the card says what was chosen", async () => (await frame.getByText("You chose: Always Allow.").count()) === 1, 15_000);
  // The same call runs again without asking; the changed one asks, answered by keyboard.
  const second = card(PERMISSION_CHANGED.command);
  await until("the second permission card", async () => (await second.count()) === 1, 30_000);
  await second.getByRole("button", { name: "Reject", exact: true }).focus();
  await page.keyboard.press("Enter");
  await until("the answer", async () => {
    const last = frame.locator(".entry").last();
    return (await last.innerText()).includes("PERMISSION-DONE") && (await last.getAttribute("class")) === "entry done";
  }, 30_000);
  assert((await frame.getByText("You chose: Reject.").count()) === 1, "the second card does not say Reject was chosen");
  assert((await frame.locator(".entry").last().getByRole("button", { name: "Allow Once" }).count()) === 0, "answered cards still offer their choices");
  // The escalated call's row header: one line, the command only (its justification in the body).
  const head = frame.locator(".entry").last().locator(".call .disclosure-head").first();
  const headText = await head.innerText();
  assert(headText.includes("bash") && headText.includes("echo allowed") && !headText.includes("E2E writes a file"), `row header: ${headText}`);
  assert(await head.evaluate((el) => el.getBoundingClientRect().height < parseFloat(getComputedStyle(el).fontSize) * 2.2), `the row header wraps: ${headText}`);
  // The tool's short name is whole in the narrow view (it was cut to "b…" to make room).
  const tool = head.locator(".tool");
  assert(await tool.evaluate((el) => el.scrollWidth <= el.clientWidth), `the tool name is cut: ${await tool.innerText()} (${await tool.evaluate((el) => `${el.scrollWidth}px in ${el.clientWidth}px`)})`);
  assert(readFileSync(PERMISSION_FILE, "utf8") === "allowed\nallowed\n", "the allowed call did not run twice");
  assert(!existsSync(PERMISSION_REJECTED_FILE), "the rejected call ran");
  const requests = modelRequests(model.recordFile).slice(count);
  assert(requests.length === 4, `expected 4 model requests, got ${requests.length}`);
  const rejected = toolResult(requests[3], "bash") ?? "";
  assert(rejected.startsWith("Error: the user declined"), `the rejected call's result:\n${rejected}`);
  // Agent: Manage Permissions lists the "always" answer; the picked one is revoked.
  await runCommand(page, "Agent: Manage Permissions");
  const picker = page.locator(".quick-input-widget:visible");
  const row = picker.locator(".quick-input-list .monaco-list-row", { hasText: PERMISSION_ALLOWED.command }).first();
  await until("the grant in the quick pick", async () => (await row.count()) > 0, 15_000);
  const listed = await row.innerText();
  assert(listed.includes("always allowed · bash") && listed.includes("(unsandboxed)"), `the grant's row:\n${listed}`);
  await row.click(); // a multi-select pick: the click checks it
  await page.keyboard.press("Enter");
  await waitForNotification(page, /revoked 1 answer/);
  await runCommand(page, "Agent: Manage Permissions");
  await waitForNotification(page, /no “always” answers in this conversation/);
});

/** Run a command that shows the conversation's asks; the quick pick, once it lists `ask`. */
async function pickAsk(page, command, ask) {
  const picker = page.locator(".quick-input-widget:visible");
  await until(`the asks of "${command}"`, async () => {
    await runCommand(page, command);
    const shown = await until("the quick pick", async () => (await picker.count()) > 0 && (await picker.innerText()).includes(ask), 8_000).catch(() => false);
    return shown;
  }, 45_000, 500);
  return picker;
}

scenario("with the chat hidden, a permission request is a notification (not modal) that shows the chat, where the card is answered", async ({ page }) => {
  await ask(page, "E2E-HIDDEN-PERMISSION wait, then ask");
  const frame = await panelFrame(page);
  await runCommand(page, "View: Show Explorer"); // the chat's side bar shows another view
  await until("the Explorer in the side bar, the chat hidden", async () => (await page.locator(".part.sidebar .title-label", { hasText: /^Explorer$/i }).count()) === 1, 10_000);
  const toast = page.locator(".notifications-toasts .notification-toast", { hasText: "Agent asks for your permission" });
  await until("the permission notification", async () => (await toast.count()) > 0, 30_000);
  assert((await page.locator(".monaco-dialog-box").count()) === 0, "a modal dialog opened");
  assert((await toast.first().getByRole("button", { name: "Allow Once" }).count()) === 0, "the notification answers the request: only the card should");
  await toast.first().getByRole("button", { name: "Show Chat" }).click();
  await until("the chat in the side bar again", async () => (await page.locator(".part.sidebar .title-label", { hasText: /Agent/i }).count()) === 1, 10_000);
  const chat = await panelFrame(page);
  const card = chat.getByRole("group", { name: /^Waiting for your permission/ });
  await until("the card in sight", async () => (await card.count()) === 1 && card.isVisible(), 15_000);
  await card.getByRole("button", { name: "Reject", exact: true }).click();
  await finishedEntry(chat, "HIDDEN-DONE", 30_000);
  assert(!existsSync(PERMISSION_REJECTED_FILE), "the rejected call ran");
});

scenario("show the changes of an ask, then undo it after a dry run", async ({ page, workspace }) => {
  const readme = join(workspace, "README.md");
  const created = join(workspace, "src", "checkpoint-new.txt");
  const before = readFileSync(readme, "utf8");
  // An ask that changes nothing gets no Show changes / Undo.
  await ask(page, "E2E-NOCHANGE just answer");
  const frame = await panelFrame(page);
  await finishedEntry(frame, "E2E-NOCHANGE");
  const unchanged = frame.locator(".entry", { hasText: "E2E-NOCHANGE" });
  await ask(page, "E2E-CHECKPOINT change the readme and add a file");
  const entry = await finishedEntry(frame, "E2E-CHECKPOINT");
  assert(readFileSync(readme, "utf8").includes("DEMO CHANGED BY THE AGENT"), "bash did not change README.md");
  assert(existsSync(created), "write_file did not create the file");
  const button = (title) => entry.getByRole("button", { name: title, exact: true });
  await until("the buttons under the answer, with the count", async () =>
    (await button("Show changes").count()) === 1 && (await button("Undo this ask").count()) === 1 && (await entry.getByText("2 files changed", { exact: true }).count()) === 1, 10_000);
  for (const name of ["Show changes", "Undo this ask"]) {
    assert((await unchanged.getByRole("button", { name }).count()) === 0, `${name} under an answer that changed nothing`);
  }
  // The write's row: the new file's size and first lines, without expanding.
  const writeRow = entry.locator(".call", { hasText: "write_file" });
  const preview = await writeRow.locator(".edit-preview").innerText();
  assert(preview.includes("src/checkpoint-new.txt") && preview.includes("1 line, 19 bytes") && preview.includes("+NEW FROM THE AGENT"), `the write's row:\n${preview}`);
  assert((await unchanged.getByText(/files? changed/).count()) === 0, "a count under an answer that changed nothing");

  // The command picks an ask (newest first, with its files); VS Code's diff view opens.
  const picker = await pickAsk(page, "Agent: Show Changes of an Ask", "E2E-CHECKPOINT");
  assert((await picker.innerText()).includes("M README.md +1"), `quick pick: ${await picker.innerText()}`);
  await page.keyboard.press("Enter");
  const diffTab = page.locator(".tabs-container .tab", { hasText: /Changes of ask \d+ \(2 files\)/ });
  // The editor area only (the trace below names the command too); Monaco renders spaces as
  // no-break spaces. Each file shows its own texts: the readme before and after, the new file.
  const shown = async () => (await page.locator(".part.editor").innerText()).replace(/\u00a0/g, " ");
  const bothFiles = async () => {
    const text = await shown();
    return text.includes("# demo") && text.includes("# DEMO CHANGED BY THE AGENT") && text.includes("NEW FROM THE AGENT");
  };
  await until("the diff view with both files' texts", async () => (await diffTab.count()) === 1 && (await bothFiles()), 20_000);
  await page.screenshot({ path: join(OUTPUT, "show-changes.png") });
  const closeDiff = async () => {
    await diffTab.hover();
    await diffTab.locator(".tab-actions .action-label").click();
    await until("the diff view closed", async () => (await diffTab.count()) === 0, 10_000);
  };
  await closeDiff();
  // The same from the button under the answer; left open: the undo closes it.
  await button("Show changes").click();
  await until("the diff view again", async () => (await diffTab.count()) === 1 && (await bothFiles()), 20_000);
  // The ask's number as the chat shows it (its place among the asks on screen).
  const askNo = await frame.locator(".entry:not(.undone)").evaluateAll((els) => els.findIndex((e) => e.textContent.includes("E2E-CHECKPOINT")) + 1);
  assert((await diffTab.innerText()).includes(`Changes of ask ${askNo} `), `the diff tab: ${await diffTab.innerText()} (ask ${askNo} on screen)`);

  // Undo this ask: the dry run is shown in a modal dialog; the user confirms.
  const chat = await panelFrame(page);
  await chat.locator(".entry", { hasText: "E2E-CHECKPOINT" }).getByRole("button", { name: "Undo this ask", exact: true }).click();
  const dialog = page.locator(".monaco-dialog-box");
  await until("the undo question", async () => new RegExp(`Undo ask ${askNo} and every later one\\?`).test(await dialog.innerText()), 15_000);
  const question = await dialog.innerText();
  assert(/Will be put back:\s+README\.md/.test(question) && /Will be deleted \(the agent created them\):\s+src\/checkpoint-new\.txt/.test(question), `dialog: ${question}`);
  assert(readFileSync(readme, "utf8") !== before, "the dry run changed a file");
  await page.screenshot({ path: join(OUTPUT, "undo-dialog.png") });
  await dialog.locator(".dialog-buttons .monaco-button", { hasText: /^Undo$/ }).click();
  await waitForNotification(page, new RegExp(`Undid ask ${askNo}: 1 file put back, 1 deleted`));
  assert(readFileSync(readme, "utf8") === before, `README.md not restored:\n${readFileSync(readme, "utf8")}`);
  assert(!existsSync(created), "the created file is still there");
  await until("the stale diff view closed", async () => (await diffTab.count()) === 0, 10_000);
  const after = await panelFrame(page);
  // The undone ask stays, marked and struck through, without its buttons; the outcome is news, not an error.
  const undone = after.locator(".entry", { hasText: "E2E-CHECKPOINT" });
  await until("the undone ask marked, the outcome said", async () =>
    (await undone.getByText("Undone", { exact: true }).count()) === 1 && (await after.getByRole("status").filter({ hasText: "Undid ask" }).count()) === 1, 10_000);
  assert((await undone.locator(".tail").getByRole("button").count()) === 0, `the undone ask keeps its buttons: ${await undone.locator(".tail").innerText()}`);
  assert(await undone.locator(".prompt-text").evaluate((el) => getComputedStyle(el).textDecorationLine.includes("line-through")), "the undone ask is not struck through");
  const colours = await after.getByRole("status").filter({ hasText: "Undid ask" }).evaluate((el) => [getComputedStyle(el).color, getComputedStyle(document.body).color]);
  assert(colours[0] === colours[1], `the undo's outcome is not in the text colour: ${colours}`);
  await page.screenshot({ path: join(OUTPUT, "after-undo.png") });
});

scenario("a dead server is restarted and the user is told", async ({ page, model, codeServerPid }) => {
  const servers = () => descendants(codeServerPid).filter((p) => p.cmdline.includes("-m server") && p.cmdline.includes("--stdio"));
  // One server: an extension host left by the reload scenario ends after the grace time.
  const before = await until("one agent server process", () => (servers().length === 1 ? servers() : undefined), 40_000);
  process.kill(before[0].pid, "SIGKILL");
  // It says what is true: the conversation goes on (it said "starts over").
  await waitForNotification(page, /server stopped unexpectedly and is being restarted\. The conversation continues from its saved history/, 20_000);
  const after = await until("a new agent server process", () => {
    const now = servers();
    return now.length === 1 && now[0].pid !== before[0].pid ? now : undefined;
  }, 20_000);
  assert(after[0].pid !== before[0].pid, "not restarted");
  await until("the status bar back to idle", async () => /idle/.test(await page.locator(".statusbar-item", { hasText: "Agent:" }).first().innerText()), 20_000);
  // The server kept the conversation (its session files): the next ask continues it.
  const count = modelRequests(model.recordFile).length;
  await ask(page, "E2E-SECOND after the restart");
  const frame = await panelFrame(page);
  await until("the answer after the restart", async () => {
    const last = frame.locator(".entry").last();
    return (await last.getAttribute("class")) === "entry done" && (await last.innerText()).includes("after the restart");
  }, 30_000);
  const requests = modelRequests(model.recordFile).slice(count);
  const users = requests[0].messages.filter((m) => m.role === "user").map((m) => m.content);
  // The earlier asks are there (the first ones may be in the summary of a compaction by now).
  assert(users.length > 1 && users.some((u) => u.includes("E2E-RELOAD-2")), `the conversation did not continue: ${JSON.stringify(users)}`);
  assert((await frame.locator(".notice").count()) === 0, "a notice says the conversation is gone");
  await page.screenshot({ path: join(OUTPUT, "restarted.png") });
});

scenario("an ask whose server died is listed as interrupted in the history, reopens, and its changes can be undone", async ({ page, codeServerPid, workspace }) => {
  const servers = () => descendants(codeServerPid).filter((p) => p.cmdline.includes("-m server") && p.cmdline.includes("--stdio"));
  const written = join(workspace, "src", "interrupted.txt");
  await runCommand(page, "Agent: New Conversation");
  const frame = await panelFrame(page);
  await until("an empty conversation", async () => (await frame.locator(".entry").count()) === 0, 10_000);
  await ask(page, "E2E-INTERRUPT write, then wait long");
  await until("the file written and the long command running", async () =>
    existsSync(written) && (await frame.locator(".entry.working .call.running", { hasText: "sleep" }).count()) === 1, 60_000);
  const before = await until("one agent server process", () => (servers().length === 1 ? servers() : undefined), 40_000);
  process.kill(before[0].pid, "SIGKILL");
  await until("a new agent server process", () => {
    const now = servers();
    return now.length === 1 && now[0].pid !== before[0].pid;
  }, 30_000);
  for (const pid of pgrep(INTERRUPT_MARK)) process.kill(Number(pid), "SIGKILL");
  await until("the ask ended in the chat", async () => (await frame.locator(".entry.working").count()) === 0, 30_000);
  // A reload shows the interrupted ask once: the server's copy (listed interrupted) takes the
  // place of the local one, never beside it.
  await page.reload();
  const reloaded = await panelFrame(page);
  const copies = reloaded.locator(".entry", { has: reloaded.locator(".prompt-text", { hasText: "E2E-INTERRUPT" }) });
  await until("the interrupted ask after the reload, marked", async () => (await copies.getByText(/^Interrupted/).count()) > 0, 30_000);
  assert((await copies.count()) === 1, `the interrupted ask shows ${await copies.count()} times after a reload`);
  await runCommand(page, "Agent: New Conversation");
  await runCommand(page, "Agent: Conversation History");
  const row = page.locator(".quick-input-list .monaco-list-row", { hasText: "E2E-INTERRUPT" }).first();
  await until("the conversation in the history, marked interrupted", async () => (await row.count()) > 0 && /interrupted/.test(await row.innerText()), 20_000);
  await page.screenshot({ path: join(OUTPUT, "history-interrupted.png") });
  await row.click();
  const entry = reloaded.locator(".entry", { hasText: "E2E-INTERRUPT" });
  await until("the reopened ask, with its Undo", async () =>
    (await entry.getByText(/^Interrupted/).count()) === 1 && (await entry.getByRole("button", { name: "Undo this ask", exact: true }).count()) === 1, 20_000);
  await entry.getByRole("button", { name: "Undo this ask", exact: true }).click();
  const dialog = page.locator(".monaco-dialog-box");
  await until("the undo question", async () => /Will be deleted \(the agent created them\):\s+src\/interrupted\.txt/.test(await dialog.innerText()), 15_000);
  await dialog.locator(".dialog-buttons .monaco-button", { hasText: /^Undo$/ }).click();
  await until("the interrupted ask's file removed", () => !existsSync(written), 15_000);
  await until("the ask marked undone", async () => (await entry.getByText("Undone", { exact: true }).count()) === 1, 10_000);
});

// After the scenarios that continue the conversation the earlier ones built (a dead server's
// restart continues it): this one leaves another conversation shown.
scenario("Delete Conversation deletes the one picked once a modal naming it is confirmed; the others stay", async ({ page }) => {
  // Issue 34: New Conversation never deletes one; deleting is its own, confirmed, command.
  // A conversation of its own first: the history names a conversation by its first prompt.
  const frame = await panelFrame(page);
  await runCommand(page, "Agent: New Conversation");
  await until("an empty conversation to start", async () => (await frame.locator(".entry").count()) === 0, 10_000);
  await ask(page, "E2E-DELETE-KEEP a conversation that stays");
  await finishedEntry(frame, "E2E-DELETE-KEEP");
  await runCommand(page, "Agent: New Conversation");
  await until("an empty conversation", async () => (await frame.locator(".entry").count()) === 0, 10_000);
  await ask(page, "E2E-DELETE-1 a conversation to delete");
  await finishedEntry(frame, "E2E-DELETE-1");
  await runCommand(page, "Agent: Delete Conversation…");
  const row = page.locator(".quick-input-list .monaco-list-row", { hasText: "E2E-DELETE-1" }).first();
  await until("the conversation in the list to delete from", async () => (await row.count()) > 0, 15_000);
  await row.click();
  const dialog = page.locator(".monaco-dialog-box");
  await until("the deletion question naming it", async () => (await dialog.count()) > 0 && /Delete the conversation "E2E-DELETE-1[^"]*" for good\?/.test(await dialog.first().innerText()), 15_000);
  const question = await dialog.first().innerText();
  assert(/checkpoints are deleted/.test(question) && /can no longer be undone/.test(question), `the deletion question:\n${question}`);
  // The focused button (Enter) keeps it.
  await until("Keep focused", async () => /^Keep$/.test((await dialog.locator(".dialog-buttons .monaco-button:focus").first().innerText().catch(() => "")).trim()), 5_000);
  await page.screenshot({ path: join(OUTPUT, "delete-conversation.png") });
  await dialog.locator(".dialog-buttons .monaco-button", { hasText: /^Delete$/ }).click();
  await until("a new, empty conversation", async () => (await frame.locator(".entry").count()) === 0, 15_000);
  await waitForNotification(page, /deleted the conversation "E2E-DELETE-1/, 15_000);
  // Gone from the history; the earlier conversations are still there.
  await runCommand(page, "Agent: Conversation History");
  await page.keyboard.type("E2E-DELETE");  // only these rows: the history is long by now
  const rows = page.locator(".quick-input-list .monaco-list-row");
  const kept = rows.filter({ hasText: "E2E-DELETE-KEEP" });
  await until("the history, with the conversation kept", async () => (await kept.count()) > 0, 15_000);
  const listed = await rows.allInnerTexts();
  assert(!listed.some((r) => r.includes("E2E-DELETE-1")), `the history after the deletion: ${JSON.stringify(listed)}`);
  await page.keyboard.press("Escape");
  // From the history itself: a row's trash button asks the same question.
  await ask(page, "E2E-DELETE-2 another conversation to delete");
  await finishedEntry(frame, "E2E-DELETE-2");
  await runCommand(page, "Agent: Conversation History");
  await page.keyboard.type("E2E-DELETE");
  const second = rows.filter({ hasText: "E2E-DELETE-2" }).first();
  await until("the second conversation in the history", async () => (await second.count()) > 0, 15_000);
  await second.hover();
  await second.locator(".codicon-trash").click();
  await until("the deletion question naming the second", async () => (await dialog.count()) > 0 && /Delete the conversation "E2E-DELETE-2[^"]*" for good\?/.test(await dialog.first().innerText()), 15_000);
  await dialog.locator(".dialog-buttons .monaco-button", { hasText: /^Delete$/ }).click();
  await waitForNotification(page, /deleted the conversation "E2E-DELETE-2/, 15_000);
  await until("a new, empty conversation again", async () => (await frame.locator(".entry").count()) === 0, 15_000);
  await runCommand(page, "Agent: Conversation History");
  await page.keyboard.type("E2E-DELETE");
  await until("the history, with the conversation kept", async () => (await kept.count()) > 0, 15_000);
  const after = await rows.allInnerTexts();
  assert(!after.some((r) => r.includes("E2E-DELETE-") && !r.includes("E2E-DELETE-KEEP")), `the history after the second deletion: ${JSON.stringify(after)}`);
  // A row still reopens its conversation.
  await kept.first().click();
  await until("the kept conversation reopened", async () => (await frame.locator(".prompt-text", { hasText: "E2E-DELETE-KEEP" }).count()) === 1, 15_000);
});

scenario("a workspace's settings cannot choose the server program or the endpoint", async ({ page, model, codeServerPid }) => {
  // .vscode/settings.json names another program and endpoint (plantHostileWorkspaceSettings).
  const stdioChildren = () => descendants(codeServerPid).filter((p) => p.cmdline.includes("--stdio"));
  // One, once an extension host left by the reload scenario has ended (after the grace time).
  const servers = await until("one agent server process", () => (stdioChildren().length === 1 ? stdioChildren() : undefined), 40_000)
    .catch(() => stdioChildren());
  assert(servers.length === 1 && servers[0].cmdline.startsWith(`${PYTHON} -I -m server`), `server processes: ${JSON.stringify(servers)}`);
  // Started outside the workspace, so no command line can import a repository's modules.
  const cwd = readlinkSync(`/proc/${servers[0].pid}/cwd`);
  assert(!cwd.startsWith(join(tmp, "workspace")), `the server runs in ${cwd}`);
  const count = modelRequests(model.recordFile).length;
  await ask(page, "E2E-WORKSPACE-SETTINGS which endpoint answers?");
  const frame = await panelFrame(page);
  await until("the answer", async () => {
    const last = frame.locator(".entry").last();
    return (await last.innerText()).includes("E2E-WORKSPACE-SETTINGS") && /entry (done|error)/.test((await last.getAttribute("class")) ?? "");
  }, 30_000);
  assert((await frame.locator(".entry").last().getAttribute("class")) === "entry done", `the ask failed: ${await frame.locator(".entry").last().innerText()}`);
  assert(modelRequests(model.recordFile).length > count, "the configured model server got no request");
  assert(hostile.connections === 0, `the workspace's baseUrl got ${hostile.connections} connection(s)`);
  assert(!existsSync(hostile.marker), "the workspace's server command was run");
});

scenario("a changed setting reaches the running server", async ({ page, userData }) => {
  await runCommand(page, "Preferences: Open User Settings");
  const search = page.locator(".settings-editor .settings-header .monaco-editor textarea, .settings-editor .suggest-input-container textarea").first();
  await search.waitFor({ state: "visible", timeout: 15_000 });
  await page.keyboard.type("agentLsp.maxTurns");
  const item = page.locator(".settings-editor .setting-item", { hasText: "Max Turns" }).first();
  await item.waitFor({ state: "visible", timeout: 15_000 });
  const input = item.locator("input").first();
  await input.fill("1");
  await input.press("Tab");
  // The settings editor writes after a debounce; then VS Code tells the extension, which sends
  // workspace/didChangeConfiguration before the next request on the same connection.
  await until("maxTurns in settings.json", () => /"agentLsp\.maxTurns":\s*1\b/.test(readFileSync(join(userData, "User", "settings.json"), "utf8")), 15_000);
  await sleep(1000);
  await page.keyboard.press("Escape");
  await runCommand(page, "View: Close All Editors");
  await ask(page, "E2E-TURNS do two things");
  const frame = await panelFrame(page);
  await until("the turn-limited answer", async () => {
    const last = frame.locator(".entry").last();
    return (await last.innerText()).includes("E2E-TURNS") && (await last.getAttribute("class")) === "entry done";
  }, 30_000);
  const text = await frame.locator(".entry").last().innerText();
  assert(/stopped at the turn limit \(maxTurns\)\. Raise agentLsp\.maxTurns/.test(text), `the server did not apply maxTurns=1:\n${text}`);
}, { changesSettings: true });

scenario("unconfigured model shows the server's error text and the way to set the key", async ({ page }) => {
  // This window's code-server (so the agent server too) has no MODEL_API_KEY.
  await ask(page, "E2E-UNCONF hello");
  const frame = await panelFrame(page);
  const entry = await finishedEntry(frame, "E2E-UNCONF", 30_000);
  const text = await entry.locator(".outcome.error").innerText();
  assert(/No model API key/.test(text) && /MODEL_API_KEY/.test(text), `error: ${text}`);
  const setKey = entry.getByRole("button", { name: "Set API Key" });
  assert((await setKey.count()) === 1, "no Set API Key button");
  const status = await page.locator(".statusbar-item", { hasText: "Agent:" }).first().innerText();
  assert(/error/.test(status), `status bar: ${status}`);
  await page.screenshot({ path: join(OUTPUT, "unconfigured.png") });
  // The error's "Check Connection" button runs the server's check, which says what is missing.
  await entry.getByRole("button", { name: "Check Connection" }).click();
  const checked = page.locator(".notifications-toasts .notification-toast", { hasText: "No model API key" })
    .filter({ has: page.getByRole("button", { name: "Show Details" }) });
  await until("the check's report", async () => (await checked.count()) > 0, 30_000);
  assert((await checked.first().getByRole("button", { name: "Set API Key" }).count()) === 1, "no Set API Key button on the check's report");
  await page.screenshot({ path: join(OUTPUT, "unconfigured-check.png") });
  // The view's "Set API Key" runs the command: its password box opens.
  await setKey.click();
  const box = page.locator(".quick-input-widget:visible");
  await until("the Set API Key box", async () => (await box.count()) > 0 && (await box.innerText()).includes("secret storage"), 10_000);
  await page.keyboard.press("Escape");
}, { unconfigured: true });

scenario("an unreachable endpoint: the error's main button and the check's open the endpoint's settings, not the key", async ({ page }) => {
  await ask(page, "E2E-UNREACHABLE hello");
  const frame = await panelFrame(page);
  const entry = await finishedEntry(frame, "E2E-UNREACHABLE", 120_000);
  const buttons = await entry.locator(".tail .buttons button").allInnerTexts();
  assert(buttons[0] === "Open Settings" && buttons.includes("Retry") && buttons.includes("Check Connection"), `the error's buttons: ${JSON.stringify(buttons)}`);
  assert((await entry.getByRole("button", { name: "Open Settings" }).getAttribute("class"))?.includes("primary"), "Open Settings is not the main button");
  assert(!buttons.includes("Set API Key"), `a key is offered for a refused connection: ${JSON.stringify(buttons)}`);
  await page.screenshot({ path: join(OUTPUT, "unreachable.png") });
  // Check Connection's report: the endpoint's settings first, no Set API Key.
  await entry.getByRole("button", { name: "Check Connection" }).click();
  const report = page.locator(".notifications-toasts .notification-toast", { hasText: "Nothing answers at" });
  await until("the check's report", async () => (await report.count()) > 0, 60_000);
  const toastButtons = await report.first().locator(".monaco-button").allInnerTexts();
  assert(toastButtons[0] === "Open Settings" && !toastButtons.includes("Set API Key"), `the check's buttons: ${JSON.stringify(toastButtons)}`);
  // The error's Open Settings shows the endpoint's setting.
  await entry.getByRole("button", { name: "Open Settings" }).click();
  await until("the base URL setting", async () => (await page.locator(".settings-editor .setting-item", { hasText: "Base Url" }).count()) > 0, 20_000);
  await page.screenshot({ path: join(OUTPUT, "unreachable-settings.png") });
  await runCommand(page, "View: Close All Editors").catch(() => {});
}, { unreachable: true });

// -- first run: the key from SecretStorage, the model picker, the connection check (issue 11) -----

// The key the user types into "Agent: Set API Key"; the keyed model server accepts only it.
const E2E_KEY = `sk-e2e-${Math.random().toString(36).slice(2, 12)}-DO-NOT-LEAK`;
const KEY_SCRIPT = [
  { match: "E2E-KEY", replies: [{ content: "KEY-OK: the key reached the model." }] },
  { match: "E2E-MODEL", replies: [{ content: "MODEL-OK" }] },
  { match: "*", replies: [{ content: "OK" }] }, // the connection check's tiny request
];

function agentServers(codeServerPid) {
  return descendants(codeServerPid).filter((p) => p.cmdline.includes("-m server") && p.cmdline.includes("--stdio"));
}

function environOf(pid) {
  try {
    return readFileSync(`/proc/${pid}/environ`, "utf8").split("\0");
  } catch {
    return [];
  }
}

/** Every file under `dir` (logs, settings), with its text. */
function filesUnder(dir) {
  const found = [];
  const walk = (d) => {
    for (const name of readdirSync(d)) {
      const path = join(d, name);
      if (statSync(path).isDirectory()) walk(path);
      else found.push(path);
    }
  };
  if (existsSync(dir)) walk(dir);
  return found;
}

scenario("a key set with Agent: Set API Key reaches the server, and no settings file, log or LSP message", async ({ page, keyModel, userData, workspace, codeServerPid }) => {
  const before = await until("the agent server", () => (agentServers(codeServerPid).length === 1 ? agentServers(codeServerPid)[0] : undefined), 30_000);
  assert(!environOf(before.pid).some((v) => v.startsWith("MODEL_API_KEY=")), "the server had a key before one was set");
  await runCommand(page, "Agent: Set API Key");
  const box = page.locator(".quick-input-widget:visible");
  await until("the Set API Key box", async () => (await box.innerText()).includes("secret storage"), 10_000);
  assert((await box.locator("input").first().getAttribute("type")) === "password", "the key is not hidden as it is typed");
  await page.keyboard.type(E2E_KEY);
  await page.keyboard.press("Enter");
  await waitForNotification(page, /API key saved in VS Code's secret storage/, 15_000);
  // A new server process. The key reaches it in its environment only, which it then wipes
  // from its /proc/PID/environ (server/config/own_secrets.py: a sandboxed command could read
  // it there): so whether it got the key is seen below, in the model request's header.
  // (Waiting for the key in /proc raced with that wipe: the flaky failure of past CI runs.)
  let seen = [];
  const after = await until("a restarted server", () => {
    const now = agentServers(codeServerPid);
    seen = now.map((s) => ({ pid: s.pid, old: s.pid === before.pid }));
    return now.length === 1 && now[0].pid !== before.pid ? now[0] : undefined;
  }, 60_000).catch((error) => {
    throw new Error(`${error.message}; agent servers at the end: ${JSON.stringify(seen)}`);
  }); // the old server ends (up to its 10 s exit deadline) and a new one starts: slow on a loaded 2-core machine
  assert(!after.cmdline.includes(E2E_KEY), "the key is on the server's command line");
  const count = modelRequests(keyModel.recordFile).length;
  await ask(page, "E2E-KEY does the key work?");
  await until("the ask's model request", () => modelRequests(keyModel.recordFile).slice(count).some((b) => lastUserText(b).includes("E2E-KEY")), 60_000);
  const chat = httpRequests(keyModel.httpFile).filter((r) => r.method === "POST" && r.path.endsWith("/chat/completions"));
  assert(chat.length > 0 && chat[chat.length - 1].headers.authorization === `Bearer ${E2E_KEY}`, `the model saw: ${JSON.stringify(chat.map((r) => r.headers.authorization))}`);
  // And once serving, the server has wiped it from what /proc shows of its environment.
  assert(!environOf(after.pid).some((v) => v.includes(E2E_KEY)), "the key is still in the server's /proc/PID/environ");
  // The answer came back (the traced agent/ask response carries it).
  await until("the answer", () => channelFileLines(userData, "Agent Server.log").some((l) => l.includes("KEY-OK")), 30_000);
  // The LSP traffic is in the log (agentLsp.trace.server: verbose), so the search below covers it.
  const serverLog = channelFileLines(userData, "Agent Server.log");
  assert(serverLog.some((l) => l.includes("agent/ask")), "the LSP messages were not traced");
  const places = [
    join(userData, "User", "settings.json"),
    join(userData, "Machine", "settings.json"),
    join(workspace, ".vscode", "settings.json"),
    ...filesUnder(join(userData, "logs")),
    ...filesUnder(join(userData, "User", "workspaceStorage")).filter((p) => p.endsWith(".json")),
  ];
  const leaks = places.filter((p) => existsSync(p) && readFileSync(p, "utf8").includes(E2E_KEY));
  assert(leaks.length === 0, `the key was written to: ${leaks.join(", ")}`);
  assert(places.length > 5, `too few files searched: ${places.join(", ")}`);
  await page.screenshot({ path: join(OUTPUT, "api-key-set.png") });
}, { keyed: true });

scenario("Agent: Select Model lists the endpoint's models and sets agentLsp.model", async ({ page, keyModel, userData }) => {
  await runCommand(page, "Agent: Select Model");
  const rows = page.locator(".quick-input-list .monaco-list-row");
  await until("the models in the picker", async () => (await rows.allInnerTexts()).some((t) => t.includes("e2e-big-model")), 30_000);
  const labels = await rows.allInnerTexts();
  assert(labels.some((t) => t.includes("scripted")) && labels.some((t) => t.includes("Type a model name")), `picker rows:\n${labels.join("\n")}`);
  await page.screenshot({ path: join(OUTPUT, "select-model.png") });
  await page.keyboard.type("e2e-big-model");
  await until("e2e-big-model focused", async () => ((await page.locator(".quick-input-list .monaco-list-row.focused").first().innerText().catch(() => "")) ?? "").includes("e2e-big-model"), 10_000);
  await page.keyboard.press("Enter");
  const settingsFile = join(userData, "User", "settings.json");
  await until("agentLsp.model in the user settings", () => /"agentLsp\.model":\s*"e2e-big-model"/.test(readFileSync(settingsFile, "utf8")), 15_000);
  await until("the model in the status bar", async () => (await page.locator(".statusbar-item", { hasText: "e2e-big-model" }).count()) > 0, 15_000);
  const count = modelRequests(keyModel.recordFile).length;
  await ask(page, "E2E-MODEL which model answers?");
  const request = await until("the ask's model request", () => modelRequests(keyModel.recordFile).slice(count).find((b) => lastUserText(b).includes("E2E-MODEL")), 60_000);
  assert(request.model === "e2e-big-model", `the ask used ${request.model}`);
  await page.screenshot({ path: join(OUTPUT, "model-status.png") });
}, { keyed: true, changesSettings: true });

scenario("Agent: Check Connection says the endpoint works", async ({ page }) => {
  await runCommand(page, "Agent: Check Connection");
  const text = await waitForNotification(page, /The model endpoint works/, 60_000);
  assert(/answered a test request/.test(text), `notification: ${text}`);
  await page.screenshot({ path: join(OUTPUT, "check-ok.png") });
}, { keyed: true });

scenario("the first-run walkthrough shows its four steps", async ({ page }) => {
  await runCommand(page, "Agent: Get Started");
  for (const title of ["Install the server", "Set your API key", "Choose the model", "Ask a first question"]) {
    await until(`the walkthrough step "${title}"`, async () => (await page.getByText(title, { exact: true }).count()) > 0, 20_000);
  }
  await page.screenshot({ path: join(OUTPUT, "walkthrough.png") });
  // Its steps complete as the user does them (here: the install step's Restart Server).
  const installed = page
    .locator(".getting-started-step", { hasText: "Install the server" })
    .locator(".codicon-getting-started-step-checked");
  await runCommand(page, "Agent: Restart Server");
  await runCommand(page, "Agent: Get Started");
  await until("the install step checked", async () => (await installed.count()) === 1, 20_000);
  await runCommand(page, "View: Close All Editors").catch(() => {});
}, { keyed: true });

scenario("Agent: Clear API Key restarts the server without the key", async ({ page, codeServerPid }) => {
  const before = agentServers(codeServerPid)[0];
  await runCommand(page, "Agent: Clear API Key");
  await waitForNotification(page, /API key removed/, 15_000);
  await until("a restarted server without the key", () => {
    const now = agentServers(codeServerPid);
    return now.length === 1 && now[0].pid !== before?.pid && !environOf(now[0].pid).some((v) => v.startsWith("MODEL_API_KEY="));
  }, 30_000);
  await runCommand(page, "Agent: Check Connection");
  await waitForNotification(page, /No model API key/, 30_000);
}, { keyed: true });

scenario("a server command that cannot start is reported with a way to fix it", async ({ page }) => {
  const text = await waitForNotification(page, /Could not start the agent-lsp server/, 30_000);
  assert(text.includes("agentLsp.server.command"), `notification: ${text}`);
  // The command from the (remote) user settings, not the default nor the workspace's.
  assert(text.includes(join("missing", "agent-lsp")), `notification names another program: ${text}`);
  assert(!existsSync(hostile.marker), "the workspace's server command was run");
  const toast = page.locator(".notifications-toasts .notification-toast", { hasText: "Could not start" }).first();
  assert((await toast.getByRole("button", { name: "Open Settings" }).count()) === 1, "no Open Settings button");
  const status = await page.locator(".statusbar-item", { hasText: "Agent:" }).first().innerText();
  assert(/stopped/.test(status), `status bar: ${status}`);
  await page.screenshot({ path: join(OUTPUT, "no-server.png") });
  await toast.getByRole("button", { name: "Open Settings" }).click();
  await until("the settings editor on agentLsp", async () => (await page.locator(".settings-editor").count()) > 0, 15_000);
  await until("the server command setting", async () => (await page.locator(".settings-editor .setting-item-label", { hasText: "Command" }).count()) > 0, 15_000);
  await page.screenshot({ path: join(OUTPUT, "settings.png") });
}, { noServer: true });

// -- MCP servers (a group of its own: its own folder, with a .vscode/mcp.json) ------------------

const TOOLBOX = join(ROOT, "tests", "support", "mcp_servers", "toolbox.py");
/** The status bar's MCP item (hidden while the folder has no server). */
const mcpItem = (page) => page.locator(".statusbar-item", { hasText: /MCP \d+\/\d+/ }).first();
const mcpStatus = async (page) => ((await mcpItem(page).count()) ? /MCP \d+\/\d+/.exec(await mcpItem(page).innerText())?.[0] ?? "" : "");
// A server's start imports the MCP SDK and runs a Python process: slow on a busy machine.
const MCP_START_MS = 90_000;

scenario("an MCP server of the user's settings: its tools listed under it, a call shown in the chat, a write asked about", async ({ page, model }) => {
  // tb (agentLsp.mcpServers, machine settings) ready; repo (the folder's) awaits approval.
  await until("tb ready in the status bar", async () => (await mcpStatus(page)) === "MCP 1/2", MCP_START_MS);
  await runCommand(page, "Agent: List Tools");
  const picker = page.locator(".quick-input-widget:visible");
  // The servers' tools come after the built-in ones (the language tools too, issue 38), in a
  // list longer than the pick shows: filtered to one.
  await until("the list of tools", async () => (await picker.locator(".monaco-list-row").count()) > 0, 15_000);
  // One row of the list, which is longer than the pick shows (set whole: typed keys can land
  // before the pick's input has the focus).
  await picker.locator("input").first().fill("mcp__tb__echo");
  let shown = "";
  await until("tb's tools under their server", async () => {
    shown = await picker.innerText();
    return /tb \(MCP\)/.test(shown) && /mcp__tb__echo/.test(shown);
  }, 15_000).catch((error) => {
    throw new Error(`${error.message}; the pick showed:\n${shown}`);
  });
  await page.keyboard.press("Escape");
  const count = modelRequests(model.recordFile).length;
  await ask(page, "E2E-MCP use the toolbox");
  const frame = await panelFrame(page);
  const card = frame.getByRole("group", { name: /^Waiting for your permission/ });
  await until("the permission card of write_note", async () => (await card.count()) > 0 && /on MCP server tb/.test(await card.first().innerText()), 30_000);
  const text = await card.first().innerText();
  for (const expected of ["write_note", "Arguments:", '"text": "note-1"', "“Always” allows: Any call of write_note on MCP server tb, with any arguments, for this conversation"]) {
    assert(text.includes(expected), `the card lacks ${JSON.stringify(expected)}:\n${text}`);
  }
  assert((await card.first().getByRole("button", { name: "Always Allow", exact: true }).count()) === 1, "no Always Allow");
  await page.screenshot({ path: join(OUTPUT, "mcp-permission.png") });
  await card.first().getByRole("button", { name: "Allow Once" }).click();
  const entry = await finishedEntry(frame, "MCP-DONE", 30_000);
  const rows = await entry.locator(".call").allInnerTexts();
  // Named for people, as the server names them (not mcp__tb__echo).
  assert(rows.length === 2 && rows[0].includes("echo — tb (MCP server)") && rows[0].includes("hello-from-mcp"), `tool rows:\n${rows.join("\n")}`);
  assert(rows[1].includes("write_note — tb (MCP server)") && rows[1].includes("note-1"), `tool rows:\n${rows.join("\n")}`);
  const requests = modelRequests(model.recordFile).slice(count);
  assert(toolResult(requests[1], "mcp__tb__echo") === "hello-from-mcp", `echo's result: ${toolResult(requests[1], "mcp__tb__echo")}`);
  assert(toolResult(requests[2], "mcp__tb__write_note") === "noted: note-1", `write_note's result: ${toolResult(requests[2], "mcp__tb__write_note")}`);
}, { mcp: true });

scenario("a folder's own MCP server awaits approval; approved through Agent: MCP Servers, it becomes ready", async ({ page }) => {
  await until("repo awaiting approval", async () => (await mcpStatus(page)) === "MCP 1/2", MCP_START_MS);
  // Not only the status bar says so: a notice (it was silent). Shown as the window started (in
  // the scenario before), its toast may have gone into the notification center since.
  const notice = /MCP server repo is new or changed and waits for your approval/;
  if (!(await notifications(page)).some((t) => notice.test(t))) {
    await runCommand(page, "Notifications: Show Notifications");
    await until("the approval notice in the notification center", async () => notice.test(await page.locator(".notifications-center").innerText()), 20_000);
    await page.keyboard.press("Escape"); // closes the center (its focus is in it)
    if (await page.locator(".notifications-center.visible").count()) {
      await page.locator(".notifications-center .codicon-notifications-hide, .notifications-center .codicon-chevron-down").first().click();
    }
  }
  const picker = page.locator(".quick-input-widget:visible");
  // The row whose label is repo: another row's command line may hold "repo" too (a CI
  // clone lives in .../repo/), so the row's text must start with it (the label comes first,
  // its description right after it: " repoawaiting your approval · ...").
  const row = picker.locator(".quick-input-list .monaco-list-row", { hasText: /^\s*repo/ }).first();
  await runCommand(page, "Agent: MCP Servers");
  await until("repo in the quick pick", async () => (await row.count()) > 0 && /awaiting your approval/.test(await row.innerText()), 15_000);
  await row.click();
  const dialog = page.locator(".monaco-dialog-box");
  await until("the approval dialog", async () => (await dialog.count()) > 0 && /Start MCP server repo/.test(await dialog.first().innerText()), 15_000);
  const text = await dialog.first().innerText();
  assert(text.includes(`Command: ${PYTHON}`) && text.includes("e2e-repo"), `the approval dialog:\n${text}`);
  // The user asked for it (not "The agent asks"), and Enter would not start it.
  assert(!text.includes("The agent asks") && text.includes("Approve?"), `the approval dialog:\n${text}`);
  const focused = await page.evaluate(() => document.activeElement?.textContent ?? "");
  assert(!/Approve/.test(focused), `the approval dialog focuses ${JSON.stringify(focused)}`);
  assert((await dialog.getByRole("button", { name: "Reject, Don't Ask Again" }).count()) === 1, "no Reject, Don't Ask Again");
  await page.screenshot({ path: join(OUTPUT, "mcp-approval.png") });
  await dialog.getByRole("button", { name: "Approve and Start" }).click();
  await waitForNotification(page, /MCP server repo approved/);
  await until("both ready in the status bar", async () => (await mcpStatus(page)) === "MCP 2/2", MCP_START_MS);
  await runCommand(page, "Agent: MCP Servers");
  await until("repo ready in the quick pick", async () => (await row.count()) > 0 && /ready, \d+ tools/.test(await row.innerText()), 15_000);
  await page.keyboard.press("Escape");
}, { mcp: true });

// -- the project: instruction chips, / commands, @ files (a group of its own folder) -----------

/** The rows of the chat input's picker (`/`, `@`) as shown, and which one is highlighted. */
async function pickerRows(frame) {
  return frame.evaluate(() => {
    const picker = document.getElementById("picker");
    if (!picker || picker.hidden) return undefined;
    return Array.from(picker.querySelectorAll(".pick")).map((row) => ({
      name: row.querySelector(".pick-name")?.textContent ?? "",
      text: row.textContent ?? "",
      active: row.classList.contains("active"),
    }));
  });
}

scenario("project: the folder's AGENTS.md is a chip above the input; a click opens it", async ({ page }) => {
  const frame = await focusChatInput(page);
  const chip = frame.locator("#project .chip.instruction", { hasText: /^AGENTS\.md$/ });
  await until("the AGENTS.md chip", async () => (await chip.count()) === 1, 60_000);
  assert(/the folder's instructions/.test((await chip.getAttribute("title")) ?? ""), `tooltip: ${await chip.getAttribute("title")}`);
  const skills = frame.locator("#project .chip.skills");
  assert((await skills.innerText()) === "1 skill" && /lint-rules: Check the lint rules/.test((await skills.getAttribute("title")) ?? ""), "the skill chip");
  await frame.locator("#composer").screenshot({ path: join(OUTPUT, "project-chips.png") });
  await chip.click();
  await until("AGENTS.md opened from its chip", async () => (await page.locator(".tabs-container .tab.active", { hasText: "AGENTS.md" }).count()) > 0, 15_000);
  // The skills chip does something on click: a pick of the skills, each opening its SKILL.md.
  await skills.click();
  const pick = page.locator(".quick-input-list .monaco-list-row", { hasText: "lint-rules" });
  await until("the skills in a quick pick", async () => (await pick.count()) === 1, 15_000);
  await pick.click();
  await until("SKILL.md opened", async () => (await page.locator(".tabs-container .tab.active", { hasText: "SKILL.md" }).count()) > 0, 15_000);
  await runCommand(page, "View: Close All Editors").catch(() => {});
}, { project: true });

scenario("project: / lists the folder's prompt file and the built-ins, keyboard first; the server expands a picked one", async ({ page, model }) => {
  const frame = await focusChatInput(page);
  await page.keyboard.type("/");
  const rows = await until("the / picker with the prompt file and the built-ins", async () => {
    const r = await pickerRows(frame);
    return r && r.some((x) => x.name === "/review") && r.some((x) => x.name === "/compact") ? r : undefined;
  }, 15_000);
  const review = rows.find((x) => x.name === "/review");
  assert(/\[file\]/.test(review.text) && /Review a file for bugs/.test(review.text) && /workspace/.test(review.text), `the /review row: ${review.text}`);
  assert(/built-in/.test(rows.find((x) => x.name === "/compact").text), "/compact not marked built-in");
  assert(rows[0].active, "the first row is not highlighted");
  await page.keyboard.press("ArrowDown");
  await until("↓ highlights the second row", async () => (await pickerRows(frame))?.[1]?.active === true, 5000);
  await page.screenshot({ path: join(OUTPUT, "slash-picker.png") });
  // Escape closes it (and keeps the text); typing filters.
  await page.keyboard.press("Escape");
  await until("the picker closed", async () => (await pickerRows(frame)) === undefined, 5000);
  assert((await frame.locator("#input").inputValue()) === "/", "Escape changed the input");
  await page.keyboard.press("Backspace");
  await page.keyboard.type("/rev");
  await until("only /review left", async () => JSON.stringify((await pickerRows(frame))?.map((x) => x.name)) === JSON.stringify(["/review"]), 10_000);
  await page.keyboard.press("Tab");
  await until("/review inserted for its arguments", async () => (await frame.locator("#input").inputValue()) === "/review ", 5000);
  const count = modelRequests(model.recordFile).length;
  await page.keyboard.type("src/main.py");
  await page.keyboard.press("Enter");
  const entry = await finishedEntry(frame, "/review src/main.py");
  assert((await entry.locator(".answer").innerText()).includes("REVIEW-OK"), "no answer to the expanded prompt");
  const request = modelRequests(model.recordFile).slice(count)[0];
  const sent = request ? lastUserText(request) : "";
  assert(sent.startsWith("REVIEW-EXPANDED: look at src/main.py carefully."), `the model got: ${sent.slice(0, 200)}`);
  const system = String(request.messages[0]?.content ?? "");
  assert(system.includes("# Instructions from AGENTS.md") && system.includes("PROJECT-RULES-MARK"), `system prompt: ${system.slice(0, 400)}`);
}, { project: true });

scenario("project: picking /compact in the / picker compacts the conversation", async ({ page, model }) => {
  const frame = await focusChatInput(page);
  const count = modelRequests(model.recordFile).length;
  await page.keyboard.type("/comp");
  await until("/compact offered", async () => (await pickerRows(frame))?.[0]?.name === "/compact", 10_000);
  await page.keyboard.press("Enter");
  await until("the input cleared", async () => (await frame.locator("#input").inputValue()) === "", 5000);
  const note = await until("the compaction's note in the chat", async () => {
    const texts = await frame.locator(".entry").last().locator(".note").allInnerTexts();
    return texts.find((t) => /compacted: [\d,]+ → [\d,]+ tokens of [\d,]+/.test(t));
  }, 60_000);
  log(`/compact: ${note}`);
  const asked = modelRequests(model.recordFile).slice(count).filter((b) => lastUserText(b).includes("/compact"));
  assert(asked.length === 0, "/compact was sent to the model as a prompt");
  assert((await frame.locator(".prompt-text", { hasText: "/compact" }).count()) === 0, "/compact shown as an ask");
}, { project: true });

scenario("project: @ offers the folder's files by fuzzy name; the picked one is a chip and reaches the model as context", async ({ page, model }) => {
  const frame = await focusChatInput(page);
  await typeInChat(frame, page, "E2E-MENTION look at");
  await page.keyboard.type(" @hlpy");
  const rows = await until("the @ picker with helpers.py", async () => {
    const r = await pickerRows(frame);
    return r?.some((x) => x.name === "src/util/helpers.py") ? r : undefined;
  }, 30_000);
  assert(!rows.some((x) => x.name.includes("node_modules")), `node_modules offered: ${JSON.stringify(rows)}`);
  assert(rows[0].name === "src/util/helpers.py", `not first: ${JSON.stringify(rows.map((x) => x.name))}`);
  await page.screenshot({ path: join(OUTPUT, "mention-picker.png") });
  await page.keyboard.press("Enter");
  const chip = frame.locator("#mentions .chip.mention");
  await until("the file's chip", async () => (await chip.count()) === 1 && (await chip.innerText()).includes("@src/util/helpers.py"), 5000);
  assert((await frame.locator("#input").inputValue()) === "E2E-MENTION look at", `the input: ${await frame.locator("#input").inputValue()}`);
  // A second one, dropped again with its ✕.
  await page.keyboard.type(" @READ");
  await until("README.md offered", async () => (await pickerRows(frame))?.[0]?.name === "README.md", 30_000);
  await page.keyboard.press("Tab");
  await until("two chips", async () => (await chip.count()) === 2, 5000);
  await chip.filter({ hasText: "README.md" }).locator("button").click();
  await until("one chip again", async () => (await chip.count()) === 1, 5000);
  await frame.locator("#composer").screenshot({ path: join(OUTPUT, "mention-chip.png") });
  const count = modelRequests(model.recordFile).length;
  await frame.locator("#input").focus();
  await page.keyboard.press("Enter");
  const entry = await finishedEntry(frame, "E2E-MENTION");
  assert((await entry.locator(".attached").innerText()).includes("@src/util/helpers.py"), `attached: ${await entry.locator(".attached").innerText()}`);
  assert((await chip.count()) === 0, "the chip stays for the next ask");
  const request = modelRequests(model.recordFile).slice(count).find((b) => lastUserText(b).includes("E2E-MENTION"));
  const sent = request ? lastUserText(request) : "";
  assert(/The user also points at: src\/util\/helpers\.py\./.test(sent), `the model got: ${sent}`);
  // Its content too, not only its path.
  assert(sent.includes("Attached: src/util/helpers.py (as the user sees it):\n```\ndef help():\n    pass\n"), `the model got: ${sent}`);
  assert(!sent.includes("README.md"), `a dropped chip was sent: ${sent}`);
  assert(!sent.includes("@hlpy"), `the @text stayed in the prompt: ${sent}`);
}, { project: true });

scenario("project: a subfolder's AGENTS.md becomes a chip once the agent has worked there", async ({ page }) => {
  const frame = await panelFrame(page);
  const nested = frame.locator("#project .chip.instruction", { hasText: "sub/AGENTS.md" });
  assert((await nested.count()) === 0, "sub/AGENTS.md shown before the agent worked there");
  await ask(page, "E2E-NESTED read the notes");
  await finishedEntry(frame, "E2E-NESTED");
  await until("the sub/AGENTS.md chip", async () => (await nested.count()) === 1, 15_000);
  assert(/subfolder/.test((await nested.getAttribute("title")) ?? ""), "its tooltip");
}, { project: true });

scenario("project: an AGENTS.md changed on disk is shown again; one past the cap is marked cut", async ({ page, workspace }) => {
  const frame = await panelFrame(page);
  const chip = frame.locator("#project .chip.instruction").filter({ hasText: /^AGENTS\.md/ });
  const file = join(workspace, "AGENTS.md");
  const before = readFileSync(file, "utf8");
  try {
    writeFileSync(file, `${before}\n${"Long rule. ".repeat(4000)}\n`); // 44 KB: past the 32 KB cap
    await until("the chip marked cut", async () => (await chip.count()) === 1 && (await chip.innerText()) === "AGENTS.md (cut)", 30_000);
    assert(/Cut: only its first part/.test((await chip.getAttribute("title")) ?? ""), `tooltip: ${await chip.getAttribute("title")}`);
  } finally {
    writeFileSync(file, before);
  }
  await until("the chip whole again", async () => (await chip.count()) === 1 && (await chip.innerText()) === "AGENTS.md", 30_000);
}, { project: true });

scenario("a .ts file written with a type error: the write's result carries TypeScript's 2322 from VS Code's own TypeScript service", async ({ page, model, workspace }) => {
  // The user works in the project: a .ts file open (TypeScript's service starts for it).
  await openFile(page, "src/lib.ts");
  await until("TypeScript's squiggle in the open file", async () => (await page.locator(".squiggly-error").count()) > 0, 90_000);
  const count = modelRequests(model.recordFile).length;
  await ask(page, "E2E-TYPECHECK write src/bad.ts");
  const frame = await panelFrame(page);
  await until("the answer", async () => (await frame.locator(".entry").last().innerText()).includes("TYPECHECK-DONE"), 90_000);
  const requests = modelRequests(model.recordFile).slice(count);
  const written = toolResult(requests[1], "write_file") ?? "";
  assert(/^Wrote \d+ bytes to src\/bad\.ts\nProblems: 1 new problem in src\/bad\.ts:\nsrc\/bad\.ts:2:7: error \[ts 2322\] Type 'string' is not assignable to type 'number'\./.test(written), `write_file result:\n${written}`);
  // The tool row shows that result too.
  const row = frame.locator(".entry").last().locator(".call").last();
  await row.locator(".disclosure-head").click({ force: true });
  await until("the problem in the tool row", async () => (await row.innerText()).includes("2322"), 10_000);
  await page.screenshot({ path: join(OUTPUT, "typescript-problem.png") });
}, { language: true });

scenario("definition, references and symbols come from VS Code's own TypeScript service", async ({ page, model }) => {
  await openFile(page, "src/lib.ts"); // TypeScript's service running for the project
  const count = modelRequests(model.recordFile).length;
  await ask(page, "E2E-NAVIGATE find greet");
  const frame = await panelFrame(page);
  await until("the answer", async () => (await frame.locator(".entry").last().innerText()).includes("NAVIGATE-DONE"), 90_000);
  const requests = modelRequests(model.recordFile).slice(count);
  const definition = toolResult(requests[1], "definition") ?? "";
  assert(/^src\/lib\.ts:1:17: export function greet/.test(definition), `definition:\n${definition}`);
  const references = toolResult(requests[2], "references") ?? "";
  assert(/src\/main\.ts:2:\d+: console\.log\(greet/.test(references) && /src\/lib\.ts:1:/.test(references), `references:\n${references}`);
  const symbols = toolResult(requests[3], "symbols") ?? "";
  assert(/greet/.test(symbols) && /\bx\b/.test(symbols), `symbols:\n${symbols}`);
}, { language: true });

// -- main ------------------------------------------------------------------------------------

/**
 * The workspace's .vscode/settings.json names another server program and another endpoint, as a
 * cloned repository could. Both are machine-scoped: VS Code and the extension must ignore them.
 * The program would leave a marker; the endpoint counts connections.
 */
async function plantHostileWorkspaceSettings(workspace) {
  const program = join(tmp, "workspace-chosen-server");
  writeFileSync(program, `#!/bin/sh\ntouch '${hostile.marker}'\nexit 1\n`, { mode: 0o755 });
  const endpoint = createServer((socket) => {
    hostile.connections++;
    socket.destroy();
  });
  await new Promise((resolve) => endpoint.listen(0, "127.0.0.1", resolve));
  endpoint.unref();
  mkdirSync(join(workspace, ".vscode"), { recursive: true });
  writeFileSync(
    join(workspace, ".vscode", "settings.json"),
    JSON.stringify({
      "agentLsp.server.command": [program],
      "agentLsp.baseUrl": `http://127.0.0.1:${endpoint.address().port}/v1`,
    }, null, 2),
  );
}

let passed = 0;
let failed = 0;
const t0 = Date.now();
try {
  const workspace = join(tmp, "workspace");
  mkdirSync(join(workspace, "src"), { recursive: true });
  writeFileSync(join(workspace, "src", "app.py"), 'def main():\n    print("hello from app")\n\n\nif __name__ == "__main__":\n    main()\n');
  writeFileSync(join(workspace, "README.md"), "# demo\n");
  writeFileSync(join(workspace, "src", "greet.py"), GREET);
  await plantHostileWorkspaceSettings(workspace);
  const model = await startModelServer(SCRIPT);
  const keyModel = await startModelServer(KEY_SCRIPT, "key-model", ["--api-key", E2E_KEY, "--models", "scripted,e2e-big-model"]);
  // The MCP group's folder: its own server, which waits for the user's approval.
  const mcpWorkspace = join(tmp, "mcp-workspace");
  mkdirSync(join(mcpWorkspace, ".vscode"), { recursive: true });
  writeFileSync(
    join(mcpWorkspace, ".vscode", "mcp.json"),
    JSON.stringify({ servers: { repo: { type: "stdio", command: PYTHON, args: [TOOLBOX, "--tag", "e2e-repo"] } } }, null, 2),
  );
  // The project group's folder: instructions, a skill, a prompt file, a subfolder's own
  // instructions, and node_modules (never offered by @).
  const projectWorkspace = join(tmp, "project-workspace");
  const put = (relative, text) => {
    mkdirSync(join(projectWorkspace, relative, ".."), { recursive: true });
    writeFileSync(join(projectWorkspace, relative), text);
  };
  put("AGENTS.md", "# Project rules\n\nUse pnpm. PROJECT-RULES-MARK\n");
  put(".agents/commands/review.md", "---\ndescription: Review a file for bugs\nargument-hint: \"[file]\"\n---\nREVIEW-EXPANDED: look at $ARGUMENTS carefully.\n");
  put(".agents/skills/lint-rules/SKILL.md", "---\nname: lint-rules\ndescription: Check the lint rules\n---\nRun the linter.\n");
  put("sub/AGENTS.md", "# Sub rules\n\nSUB-RULES-MARK\n");
  put("sub/notes.txt", "some notes\n");
  put("src/main.py", "print('main')\n");
  put("src/util/helpers.py", "def help():\n    pass\n");
  put("README.md", "# project\n");
  put("node_modules/hlpy/helpers.py", "# a dependency\n");
  // The language group's folder: a small TypeScript project, one file with a type error.
  const tsWorkspace = join(tmp, "ts-workspace");
  mkdirSync(join(tsWorkspace, "src"), { recursive: true });
  writeFileSync(join(tsWorkspace, "tsconfig.json"), JSON.stringify({ compilerOptions: { strict: true, noEmit: true }, include: ["src"] }, null, 2));
  writeFileSync(join(tsWorkspace, "src", "lib.ts"), 'export function greet(name: string): string {\n  return "hello " + name;\n}\nexport const x: number = "one";\n');
  writeFileSync(join(tsWorkspace, "src", "main.ts"), 'import { greet } from "./lib";\nconsole.log(greet("you"));\n');
  const withoutKey = Object.fromEntries(["MODEL_API_KEY", "OPENAI_API_KEY", "BASE_URL", "OPENAI_BASE_URL", "MODEL"].map((k) => [k, undefined]));
  const groups = [
    // The agent server inherits the model endpoint from code-server's environment.
    { name: "configured", env: { ...withoutKey, BASE_URL: model.url, MODEL_API_KEY: "test-key", MODEL: "scripted", AGENT_LSP_LOG_LEVEL: process.env.AGENT_LSP_LOG_LEVEL }, unconfigured: false },
    { name: "unconfigured", env: withoutKey, unconfigured: true },
    // An MCP server in the user's (machine) settings, and one of the folder's own.
    {
      name: "mcp",
      env: { ...withoutKey, BASE_URL: model.url, MODEL_API_KEY: "test-key", MODEL: "scripted" },
      mcp: true,
      workspace: mcpWorkspace,
      machineSettings: { "agentLsp.mcpServers": { tb: { type: "stdio", command: PYTHON, args: [TOOLBOX, "--tag", "e2e-tb"] } } },
    },
    // Instructions, skills, prompt files and @ files (issue 24).
    {
      name: "project",
      env: { ...withoutKey, BASE_URL: model.url, MODEL_API_KEY: "test-key", MODEL: "scripted" },
      project: true,
      workspace: projectWorkspace,
    },
    // Nothing listens at the endpoint's port (a wrong base URL, a local server not started).
    {
      name: "unreachable",
      env: { ...withoutKey, BASE_URL: `http://127.0.0.1:${await freePort()}/v1`, MODEL_API_KEY: "test-key", MODEL: "scripted" },
      unreachable: true,
    },
    // VS Code's own language servers (issue 38): a TypeScript folder, a generous wait for
    // TypeScript's first analysis on a loaded machine.
    {
      name: "language",
      env: { ...withoutKey, BASE_URL: model.url, MODEL_API_KEY: "test-key", MODEL: "scripted" },
      language: true,
      workspace: tsWorkspace,
      settings: { "agentLsp.diagnosticsWait": 20000 },
    },
    { name: "no-server", env: withoutKey, noServer: true, serverCommand: [join(tmp, "missing", "agent-lsp")] },
    // No key in the environment: the user sets it with "Agent: Set API Key". The LSP traffic and
    // the server's debug log are recorded, to show the key is in neither.
    {
      name: "keyed",
      env: { ...withoutKey, BASE_URL: keyModel.url, AGENT_LSP_LOG_LEVEL: "DEBUG" },
      keyed: true,
      settings: { "agentLsp.trace.server": "verbose" },
    },
  ];
  for (const group of groups) {
    const selected = scenarios.filter(
      (sc) =>
        Boolean(sc.unconfigured) === Boolean(group.unconfigured) &&
        Boolean(sc.noServer) === Boolean(group.noServer) &&
        Boolean(sc.keyed) === Boolean(group.keyed) &&
        Boolean(sc.mcp) === Boolean(group.mcp) &&
        Boolean(sc.project) === Boolean(group.project) &&
        Boolean(sc.unreachable) === Boolean(group.unreachable) &&
        Boolean(sc.language) === Boolean(group.language) &&
        (!only.length || only.some((o) => sc.name.includes(o))),
    );
    if (selected.length === 0) continue;
    const groupStart = Date.now();
    const folder = group.workspace ?? workspace;
    const { url, userData, child } = await startCodeServer(group.name, folder, group.env, group.serverCommand, group.settings, group.machineSettings);
    log(`${group.name}: code-server at ${url}, model at ${model.url}, tmp ${tmp}`);
    const context = await chromium.launchPersistentContext(join(tmp, group.name, "chromium-profile"), {
      executablePath: CHROMIUM,
      headless: true,
      viewport: { width: 1600, height: 1000 },
      args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    });
    await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: url });
    const page = context.pages()[0] ?? (await context.newPage());
    await page.goto(`${url}/?folder=${encodeURIComponent(folder)}`);
    await page.locator(".monaco-workbench").waitFor({ timeout: 60_000 });
    log(`${group.name}: workbench loaded after ${((Date.now() - groupStart) / 1000).toFixed(1)}s`);
    for (const { name, fn } of selected) {
      const started = Date.now();
      try {
        await fn({ page, model, keyModel, userData, workspace: folder, codeServerPid: child.pid });
        passed++;
        console.log(`PASS ${name} (${((Date.now() - started) / 1000).toFixed(1)}s)`);
      } catch (error) {
        failed++;
        console.log(`FAIL ${name} (${((Date.now() - started) / 1000).toFixed(1)}s)\n  ${String(error?.stack ?? error).split("\n").slice(0, 6).join("\n  ")}`);
        const safe = name.replace(/[^a-z0-9]+/gi, "-").slice(0, 60);
        await page.screenshot({ path: join(OUTPUT, `FAILED-${safe}.png`) }).catch(() => {});
      }
    }
    await context.close();
    await stop(child);
  }
} catch (error) {
  failed++;
  console.log(`FAIL setup\n  ${String(error?.stack ?? error)}`);
} finally {
  await stopAll();
  if (!KEEP) rmSync(tmp, { recursive: true, force: true });
}
console.log(`e2e-vscode: ${((Date.now() - t0) / 1000).toFixed(1)}s, screenshots in ${OUTPUT}`);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 && passed > 0 ? 0 : 1);
