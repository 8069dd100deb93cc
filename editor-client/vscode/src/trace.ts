// Lines of the "Agent Tool Trace" output channel: one per finished call, and a start line only
// for a call still running after about a second (so a long command shows it has begun).
// The words are the server's (agent/toolActivity's title, durationText and outputHead:
// server/agent/activity.py); this file adds the layout.
//   14:03:07.410 [3f2a9c1e] turn 2 ✓ bash ls -la src — ok 290 ms
//   14:03:07.500 [3f2a9c1e] turn 2 … bash npm ci — waiting for your permission
//   14:03:08.002 [3f2a9c1e] turn 3 ✗ read_file nope.py — failed 3 ms: Error: no such file
//   14:03:09.120 [3f2a9c1e] turn 4 ▶ bash cd src ⏎ pytest -q
//   14:03:31.777 [3f2a9c1e] turn 4 ✓ bash cd src ⏎ pytest -q — ok 23660 ms

import { compactionSummary } from "./compaction";
import { escapeControl } from "./display";
import type { AskResult, CompactionNotice, ToolActivity } from "./protocol";
import { formatDuration, oneLine, truncate } from "./summary";

export function formatTime(date: Date): string {
  const pad = (n: number, width = 2) => String(n).padStart(width, "0");
  return (
    `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}` +
    `.${pad(date.getMilliseconds(), 3)}`
  );
}

/** Session ids are long; the first 8 characters tell concurrent conversations apart. */
export function shortSession(sessionId: string | undefined): string {
  if (!sessionId) return "--------";
  return sessionId.replace(/^session[-_]?/i, "").slice(0, 8);
}

const MARKS: Record<string, string> = { started: "▶", waiting: "…", completed: "✓", failed: "✗" };

export function formatActivityLine(activity: ToolActivity, now: Date): string {
  const head = `${formatTime(now)} [${shortSession(activity.sessionId)}]`;
  const turn = typeof activity.turn === "number" ? ` turn ${activity.turn}` : "";
  const mark = MARKS[activity.status] ?? "•";
  const call = escapeControl(activity.title ?? ""); // the server's words, escaped again (idempotent)
  if (activity.status === "started") return `${head}${turn} ${mark} ${call}`;
  if (activity.status === "waiting") return `${head}${turn} ${mark} ${call} — waiting for your permission`;
  const status = activity.status === "completed" ? "ok" : activity.status;
  const duration = escapeControl(activity.durationText ?? "");
  let line = `${head}${turn} ${mark} ${call} — ${status}${duration ? " " + duration : ""}`;
  const outputHead = escapeControl(activity.outputHead ?? "");
  if (activity.status === "failed" && outputHead !== "") line += `: ${outputHead}`;
  return line;
}

/** The line written when the user asks: ties the following calls to a prompt. */
export function formatAskLine(prompt: string, sessionId: string | undefined, now: Date): string {
  const who = sessionId ? shortSession(sessionId) : "new";
  return `${formatTime(now)} [${who}] ask: ${truncate(oneLine(prompt), 120)}`;
}

export function formatAnswerLine(result: AskResult, elapsedMs: number, now: Date): string {
  const calls = result.toolCalls.length;
  const tokens = result.usage?.total_tokens;
  const extra = [
    `${calls} tool call${calls === 1 ? "" : "s"}`,
    result.stopReason === "end_turn" ? undefined : `stopped: ${result.stopReason}`,
    tokens !== undefined ? `${tokens} tokens` : undefined,
    formatDuration(elapsedMs),
  ].filter((p): p is string => p !== undefined && p !== "");
  return `${formatTime(now)} [${shortSession(result.sessionId)}] answered (${extra.join(", ")})`;
}

/** Client-side outcomes the server does not report itself (cancel, error). */
export function formatOutcomeLine(
  sessionId: string | undefined,
  outcome: "cancelled" | "error",
  detail: string,
  now: Date,
): string {
  const what = outcome === "cancelled" ? "cancelled by user" : "error";
  const tail = detail ? `: ${truncate(oneLine(detail), 200)}` : "";
  return `${formatTime(now)} [${shortSession(sessionId)}] ask ${what}${tail}`;
}

/** One line per `agent/compaction`: `14:03:09 [5f0c1a2b] ⇣ compacted: 30,512 → 9,880 tokens of 32,000 (...)`. */
export function formatCompactionLine(notice: CompactionNotice, now: Date): string {
  return `${formatTime(now)} [${shortSession(notice.sessionId)}] ⇣ ${compactionSummary(notice)}`;
}

/** Lines about the client itself (server restarts, new conversations), in the same layout. */
export function formatNoteLine(note: string, now: Date): string {
  return `${formatTime(now)} [--------] ${oneLine(note)}`;
}

export interface TraceTimers {
  set(fn: () => void, ms: number): unknown;
  clear(handle: unknown): void;
}

const REAL_TIMERS: TraceTimers = {
  set: (fn, ms) => setTimeout(fn, ms),
  clear: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

/** Writes activity to the trace: the end line of each call, the start line of slow ones only. */
export class TraceWriter {
  private readonly pending = new Map<string, unknown>();

  constructor(
    private readonly append: (line: string) => void,
    private readonly startDelayMs = 1000,
    private readonly timers: TraceTimers = REAL_TIMERS,
    private readonly now: () => Date = () => new Date(),
  ) {}

  activity(activity: ToolActivity): void {
    const key = `${activity.sessionId}/${activity.callId}`;
    if (activity.status === "started") {
      if (this.pending.has(key)) return;
      const handle = this.timers.set(() => {
        if (this.pending.delete(key)) this.append(formatActivityLine(activity, this.now()));
      }, this.startDelayMs);
      this.pending.set(key, handle);
      return;
    }
    const handle = this.pending.get(key);
    if (handle !== undefined) this.timers.clear(handle);
    this.pending.delete(key);
    this.append(formatActivityLine(activity, this.now()));
  }

  line(text: string): void {
    this.append(text);
  }

  dispose(): void {
    for (const handle of this.pending.values()) this.timers.clear(handle);
    this.pending.clear();
  }
}
