// Render time per update of the chat view as a conversation grows to 200 entries: the part
// update the view does (one tool row re-rendered and patched in place) next to the baseline of
// the old panel (the whole conversation re-rendered and replaced per notification), measured in
// the same run; the same per streamed delta (agent/answerDelta: only the answer's open block
// re-rendered and patched, PagePatcher) next to a full rebuild per delta; and per delta as the
// answer grows to 2.5k, 10k and 40k characters next to re-rendering the whole answer block per
// delta (the view before block-by-block streaming). Extension side in node; page side in headless Chromium with the real
// dist/webview.js (playwright-core and chromium from the E2E cache: run tests/e2e_vscode/run.sh
// once, or set PLAYWRIGHT_CORE and CHROMIUM).
//
//   npm run bench          (after npm run build)   -> ../../bench/results/vscode_view.md
import { execSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { cpus, loadavg, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";
import { ANSWER, finishedEntry, findE2eCache } from "./fixtures.mjs";

const HERE = dirname(fileURLToPath(import.meta.url));
const EXT = join(HERE, "..");
const ROOT = join(EXT, "..", "..");
const require = createRequire(import.meta.url);

await esbuild.build({
  entryPoints: [join(HERE, "view-lib.ts")],
  outfile: join(EXT, "out", "bench", "view-lib.js"),
  bundle: true,
  platform: "node",
  format: "cjs",
  logLevel: "warning",
});
const lib = require(join(EXT, "out", "bench", "view-lib.js"));
const webviewJs = join(EXT, "dist", "webview.js");
if (!existsSync(webviewJs)) throw new Error("dist/webview.js missing: run npm run build first");

const SIZES = [10, 50, 100, 200];
const UPDATES = 120;
const ROUNDS = Number(process.env.VIEW_BENCH_ROUNDS ?? 3);
const ONLY = process.env.VIEW_BENCH_ONLY; // "lengths": only the answer-length table (a quick look)
const load = () => loadavg()[0].toFixed(2);
const uptime = () => {
  try {
    return execSync("uptime", { encoding: "utf8" }).trim().replace(/^.*load average/, "load average");
  } catch {
    return `load average ${loadavg().map((x) => x.toFixed(2)).join(", ")}`;
  }
};
const loadStart = load();
const uptimeStart = uptime();



function conversation(n) {
  const entries = Array.from({ length: n - 1 }, (_, i) => finishedEntry(lib, i));
  const running = lib.newEntry("The running ask");
  entries.push(running);
  return { sessionId: "s", entries };
}

/** The notifications of the running ask: a call starts, then finishes; repeat. */
function* activities(count) {
  for (let k = 0; k < count; k++) {
    const callId = `live-${Math.floor(k / 2)}`;
    yield k % 2 === 0
      ? { sessionId: "s", callId, name: "bash", arguments: JSON.stringify({ command: `pytest -q tests/test_${k}.py` }), status: "started" }
      : { sessionId: "s", callId, name: "bash", arguments: JSON.stringify({ command: `pytest -q tests/test_${k}.py` }), status: "completed", durationMs: 812, output: "5 passed in 0.8s" };
  }
}

const options = { toolOutput: true, exists: (p) => p === "src/app.py" };
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
/** Mean of the middle 80%: the page's clock ticks in 0.1 ms, so a median would be that coarse. */
const trimmedMean = (xs) => {
  const sorted = [...xs].sort((a, b) => a - b);
  const cut = Math.floor(sorted.length * 0.1);
  const kept = sorted.slice(cut, sorted.length - cut);
  return kept.reduce((a, b) => a + b, 0) / kept.length;
};

// The streamed answer: the finished entries' Markdown nine times over (about 2.5 KB, code
// fences and tables included), cut into UPDATES deltas of equal length (fences open mid-stream).
const STREAMED = `${ANSWER}\n\n`.repeat(9);
const DELTA_CHARS = Math.ceil(STREAMED.length / UPDATES);
function* deltas(count) {
  for (let k = 0; k < count; k++) {
    yield { sessionId: "s", turn: 1, channel: "answer", delta: STREAMED.slice(k * DELTA_CHARS, (k + 1) * DELTA_CHARS) };
  }
}

/** Extension-side work per notification, and the messages it posts. */
function extensionSide(n, mode, kind = "activity") {
  const conv = conversation(n);
  const running = conv.entries[conv.entries.length - 1];
  const patcher = new lib.PagePatcher();
  const times = [];
  const messages = [];
  const updates = kind === "delta" ? deltas(UPDATES) : activities(UPDATES);
  for (const update of updates) {
    const t0 = performance.now();
    const changes = kind === "delta" ? lib.applyDelta(running, update) : lib.applyActivity(running, update);
    if (mode === "part") {
      messages.push(...patcher.messages(changes, options));
    } else {
      messages.push({ type: "reset", html: lib.renderConversation(conv, options) });
    }
    times.push(performance.now() - t0);
  }
  return { times, messages, initial: lib.renderConversation(conversation(n), options) };
}

// -- per delta as the answer grows ---------------------------------------------------------------

const LENGTHS = [2_500, 10_000, 40_000];
const LENGTH_ENTRIES = 50;
const TIMED_DELTAS = 60;
// Real path lookups (existsSync) against a folder that has src/app.py, as the extension does.
const folder = mkdtempSync(join(tmpdir(), "agent-lsp-bench-"));
mkdirSync(join(folder, "src"));
writeFileSync(join(folder, "src", "app.py"), "x = 1\n");
const lookup = (p) => existsSync(join(folder, p));

/**
 * The last TIMED_DELTAS deltas of an answer growing to `length` characters, the text before them
 * streamed untimed. "view": the view's way (PagePatcher: the open block only, path lookups
 * remembered). "block": re-render the whole answer block per delta and replace it, a lookup per
 * reference each time (the baseline).
 */
function lengthSide(length, mode) {
  const conv = conversation(LENGTH_ENTRIES);
  const running = conv.entries[conv.entries.length - 1];
  const text = `${ANSWER}\n\n`.repeat(Math.ceil(length / (ANSWER.length + 2))).slice(0, length);
  const timedFrom = length - TIMED_DELTAS * DELTA_CHARS;
  const cache = new lib.PathExistsCache(lookup);
  const opts = { toolOutput: true, exists: mode === "view" ? (p) => cache.exists(p) : lookup };
  const patcher = new lib.PagePatcher();
  const render = (changes) =>
    mode === "view"
      ? patcher.messages(changes, opts)
      : changes.map((c) => ({ type: "upsert", id: lib.partId.item(running, c.item), parent: lib.partId.items(running), html: lib.renderItem(running, c.item, opts) }));
  // The answer so far, as one delta (untimed): the page gets it drawn once.
  const messages = render(lib.applyDelta(running, { sessionId: "s", turn: 1, channel: "answer", delta: text.slice(0, timedFrom) }));
  const warm = messages.length;
  const times = [];
  for (let at = timedFrom; at < length; at += DELTA_CHARS) {
    const t0 = performance.now();
    messages.push(...render(lib.applyDelta(running, { sessionId: "s", turn: 1, channel: "answer", delta: text.slice(at, at + DELTA_CHARS) })));
    times.push(performance.now() - t0);
  }
  return { times, messages, warm, initial: lib.renderConversation(conversation(LENGTH_ENTRIES), opts) };
}

// -- the page ------------------------------------------------------------------------------------


const playwrightPath = process.env.PLAYWRIGHT_CORE ?? findE2eCache("playwright-core");
const chromiumPath = process.env.CHROMIUM ?? (() => {
  try {
    return execSync("command -v chromium", { encoding: "utf8" }).trim();
  } catch {
    return undefined;
  }
})();
let browser;
let page;
if (playwrightPath && chromiumPath) {
  const { chromium } = require(playwrightPath);
  browser = await chromium.launch({ executablePath: chromiumPath, headless: true, args: ["--no-sandbox", "--disable-gpu"] });
  page = await browser.newPage({ viewport: { width: 420, height: 900 } });
} else {
  console.error("view-render: no playwright-core/chromium (run tests/e2e_vscode/run.sh once): page side skipped");
}

// The earlier markup of tool rows, `<details><summary>`, rebuilt in the page from today's rows
// (untimed), for the same-run baseline of the per-update table.
const AS_DETAILS = `(html) => {
  const t = document.createElement("template");
  t.innerHTML = html;
  for (const row of [...t.content.querySelectorAll(".disclosure")].reverse()) {
    const d = document.createElement("details");
    d.className = row.className.replace(/ ?disclosure/, "");
    for (const a of ["id", "data-id"]) if (row.hasAttribute(a)) d.setAttribute(a, row.getAttribute(a));
    const summary = document.createElement("summary");
    summary.innerHTML = row.querySelector(":scope > .disclosure-head").innerHTML;
    d.append(summary, ...row.querySelector(":scope > .disclosure-body").childNodes);
    row.replaceWith(d);
  }
  return t.innerHTML;
}`;

async function pageSide(initial, messages, warm = 0, details = false) {
  const html = lib
    .renderPage({ cspSource: "", nonce: "bench", scriptUri: "about:blank", body: initial })
    .replace(/<meta http-equiv="Content-Security-Policy"[^>]*>/, "")
    .replace(/<script[^>]*><\/script>/, "");
  await page.setContent(html);
  await page.addScriptTag({ content: "window.acquireVsCodeApi = () => ({ postMessage() {}, getState() { return null; }, setState() {} });" });
  if (details) {
    await page.evaluate((convert) => {
      const root = document.getElementById("conversation");
      root.innerHTML = (0, eval)(convert)(root.innerHTML);
    }, AS_DETAILS);
    messages = await page.evaluate(
      ([convert, list]) => list.map((m) => (m.html === undefined ? m : { ...m, html: (0, eval)(convert)(m.html) })),
      [AS_DETAILS, messages],
    );
  }
  await page.addScriptTag({ content: readFileSync(webviewJs, "utf8") });
  // One message per evaluate: a full rebuild's HTML at 200 entries is about a megabyte.
  const times = [];
  for (const data of messages) {
    times.push(
      await page.evaluate((message) => {
        window.dispatchEvent(new MessageEvent("message", { data: message }));
        return window.agentLspTimings[window.agentLspTimings.length - 1].ms;
      }, data),
    );
  }
  return times.slice(warm);
}

// Sizes interleaved over rounds, so a burst of load on this shared machine hits all of them.
const KINDS = ["activity", "delta"];
const samples = new Map(KINDS.flatMap((kind) => SIZES.map((n) => [`${kind}:${n}`, { partExt: [], fullExt: [], partPage: [], fullPage: [], detailsPage: [] }])));
const lengthSamples = new Map(LENGTHS.map((l) => [l, { viewExt: [], blockExt: [], viewPage: [], blockPage: [] }]));
for (let round = 0; round < ROUNDS; round++) {
  for (const n of ONLY === "lengths" ? [] : SIZES) {
    for (const kind of KINDS) {
      const s = samples.get(`${kind}:${n}`);
      const part = extensionSide(n, "part", kind);
      const full = extensionSide(n, "full", kind);
      s.partExt.push(trimmedMean(part.times));
      s.fullExt.push(trimmedMean(full.times));
      if (page) {
        s.partPage.push(trimmedMean(await pageSide(part.initial, part.messages)));
        s.fullPage.push(trimmedMean(await pageSide(full.initial, full.messages)));
        if (kind === "activity") s.detailsPage.push(trimmedMean(await pageSide(part.initial, part.messages, 0, true)));
      }
    }
  }
  for (const length of LENGTHS) {
    const s = lengthSamples.get(length);
    for (const mode of ["view", "block"]) {
      const side = lengthSide(length, mode);
      s[`${mode}Ext`].push(trimmedMean(side.times));
      if (page) s[`${mode}Page`].push(trimmedMean(await pageSide(side.initial, side.messages, side.warm)));
    }
  }
  console.error(`view-render: round ${round + 1} of ${ROUNDS} done`);
}
const rowsOf = (kind) => SIZES.map((n) => {
  const s = samples.get(`${kind}:${n}`);
  const row = { n, partExt: median(s.partExt), fullExt: median(s.fullExt) };
  if (page) {
    row.partPage = median(s.partPage);
    row.fullPage = median(s.fullPage);
    if (s.detailsPage.length) row.detailsPage = median(s.detailsPage);
  }
  return row;
});
const rows = rowsOf("activity");
const lengthRows = LENGTHS.map((length) => {
  const s = lengthSamples.get(length);
  const row = { length, viewExt: median(s.viewExt), blockExt: median(s.blockExt) };
  if (page) {
    row.viewPage = median(s.viewPage);
    row.blockPage = median(s.blockPage);
  }
  return row;
});
const deltaRows = rowsOf("delta");
await browser?.close();

/** Flat: what the last size costs is within 1.3x of the first (the machine's noise is about that). */
const verdict = (growth) => (growth <= 1.3 ? `flat (${growth.toFixed(2)}x, within 1.3x)` : `grows (${growth.toFixed(2)}x)`);
const ms = (x) => (x === undefined ? "—" : x < 0.1 ? `${(x * 1000).toFixed(0)} µs` : `${x.toFixed(2)} ms`);
const total = (r, kind) => r[`${kind}Ext`] + (r[`${kind}Page`] ?? 0);
const lines = [
  "### VS Code chat view: render time per update",
  "",
  `\`cd editor-client/vscode && npm run build && npm run bench\`; ${new Date().toISOString().slice(0, 16).replace("T", " ")}, ${cpus().length} CPUs, Node ${process.version}, ${page ? `headless Chromium (${chromiumPath})` : "no browser (page side not measured)"}; 1-minute load average ${loadStart} at the start, ${load()} at the end (\`uptime\`: ${uptimeStart} at the start, ${uptime()} at the end).`,
  `Each conversation has N entries (N−1 finished: a prompt, three tool rows, a Markdown answer with a highlighted code block and a table; the last one running). ${UPDATES} \`agent/toolActivity\` notifications of the running ask (a call starts, then finishes) are applied; per notification, the mean of the middle 80%, then the median of ${ROUNDS} rounds (sizes interleaved).`,
  "Extension side: update the model and render what is posted. Page side: the real `dist/webview.js` puts it in place, including the layout read that scroll-follow does. Tool rows (and reasoning) are rows whose class the page toggles, not `<details>`: in Chromium the style work for each inserted or replaced `<details>` grows with the number of `<details>` in the document (three per finished entry here), which made this 2.16x from 10 to 200 entries in the last run before this change (load 3.5); the last two columns measure that markup in this run.",
  "Baselines, measured in the same run: the old panel's way — the whole conversation rendered and replaced on every notification; and the same part updates with the tool rows as `<details><summary>` (the markup before this change, rebuilt in the page untimed).",
  "",
  "| entries | chat view: extension | chat view: page | chat view: total | baseline (full rebuild): extension | baseline: page | baseline: total | ratio (view / baseline) | tool rows as `<details>`: page | ratio (page / `<details>` page) |",
  "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
  ...rows.map((r) => `| ${r.n} | ${ms(r.partExt)} | ${ms(r.partPage)} | ${ms(total(r, "part"))} | ${ms(r.fullExt)} | ${ms(r.fullPage)} | ${ms(total(r, "full"))} | ${(total(r, "part") / total(r, "full")).toFixed(3)}x | ${ms(r.detailsPage)} | ${r.detailsPage ? `${(r.partPage / r.detailsPage).toFixed(3)}x` : "—"} |`),
  "",
  `Growth from ${SIZES[0]} to ${SIZES[SIZES.length - 1]} entries: chat view ${(total(rows[rows.length - 1], "part") / total(rows[0], "part")).toFixed(2)}x (flat is 1x), baseline ${(total(rows[rows.length - 1], "full") / total(rows[0], "full")).toFixed(1)}x. Verdict: ${verdict(total(rows[rows.length - 1], "part") / total(rows[0], "part"))}; with \`<details>\` rows the page side grows ${rows[0].detailsPage ? (rows[rows.length - 1].detailsPage / rows[0].detailsPage).toFixed(2) : "—"}x.`,
  "",
  "### VS Code chat view: render time per streamed delta",
  "",
  `Same run, same conversations. The running ask streams its answer: ${UPDATES} \`agent/answerDelta\` notifications of ${DELTA_CHARS} characters (${STREAMED.length.toLocaleString("en-US")} characters in all: the Markdown above nine times, code fences open mid-stream). Per delta the view renders only the answer's open block (the top-level block being written; done blocks are rendered once and appended) and patches it in place; the figure is the mean over the whole answer as it grows.`,
  "Baselines in the same run: the per-update figure above (one tool row), and a full rebuild per delta (the whole conversation rendered and replaced).",
  "",
  "| entries | per delta: extension | per delta: page | per delta: total | per tool update (table above) | full rebuild per delta: total | ratio (delta / full rebuild) |",
  "|---:|---:|---:|---:|---:|---:|---:|",
  ...deltaRows.map((r, i) => `| ${r.n} | ${ms(r.partExt)} | ${ms(r.partPage)} | ${ms(total(r, "part"))} | ${ms(total(rows[i], "part"))} | ${ms(total(r, "full"))} | ${(total(r, "part") / total(r, "full")).toFixed(3)}x |`),
  "",
  `Growth from ${SIZES[0]} to ${SIZES[SIZES.length - 1]} entries: per delta ${(total(deltaRows[deltaRows.length - 1], "part") / total(deltaRows[0], "part")).toFixed(2)}x (flat is 1x), full rebuild ${(total(deltaRows[deltaRows.length - 1], "full") / total(deltaRows[0], "full")).toFixed(1)}x.`,
  "",
  "### VS Code chat view: render time per streamed delta as the answer grows",
  "",
  `Same run. A conversation of ${LENGTH_ENTRIES} entries; the running ask's answer (the Markdown above repeated: headings, \`path:line\` references, a highlighted fence and a table per ~${ANSWER.length} characters) has grown to L characters untimed, then ${TIMED_DELTAS} deltas of ${DELTA_CHARS} characters are timed (mean of the middle 80%, median of ${ROUNDS} rounds). Path lookups are real (\`existsSync\` in a temporary folder).`,
  "View: the open block only (PagePatcher, MarkdownStream), path lookups remembered (PathExistsCache). Baseline, same run: the whole answer block re-rendered (Markdown, highlighting, a lookup per reference) and replaced per delta — the view before this change.",
  "",
  "| answer length | view: extension | view: page | view: total | baseline (whole block): extension | baseline: page | baseline: total | ratio (view / baseline) |",
  "|---:|---:|---:|---:|---:|---:|---:|---:|",
  ...lengthRows.map((r) => `| ${r.length.toLocaleString("en-US")} | ${ms(r.viewExt)} | ${ms(r.viewPage)} | ${ms(total(r, "view"))} | ${ms(r.blockExt)} | ${ms(r.blockPage)} | ${ms(total(r, "block"))} | ${(total(r, "view") / total(r, "block")).toFixed(3)}x |`),
  "",
  `Growth from ${LENGTHS[0].toLocaleString("en-US")} to ${LENGTHS[LENGTHS.length - 1].toLocaleString("en-US")} characters: view ${(total(lengthRows[lengthRows.length - 1], "view") / total(lengthRows[0], "view")).toFixed(2)}x (flat is 1x), baseline ${(total(lengthRows[lengthRows.length - 1], "block") / total(lengthRows[0], "block")).toFixed(1)}x. Verdict: ${verdict(total(lengthRows[lengthRows.length - 1], "view") / total(lengthRows[0], "view"))}.`,
  "",
];
const out = join(ROOT, "bench", "results", "vscode_view.md");
mkdirSync(dirname(out), { recursive: true });
writeFileSync(out, lines.join("\n"));
console.log(lines.join("\n"));
