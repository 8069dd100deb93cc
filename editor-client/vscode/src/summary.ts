// Small text helpers for what the client words itself (its trace layout, its own timings).
// A tool call's words (title, subject, duration, output head) are the server's
// (server/agent/activity.py): the client only lays them out.

/** Collapse all whitespace (newlines included) so the result stays on one line. */
export function oneLine(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}

export function truncate(text: string, max: number): string {
  if (max <= 1) return text.length > max ? "…".slice(0, max) : text;
  const chars = Array.from(text); // never split a surrogate pair
  return chars.length > max ? chars.slice(0, max - 1).join("") + "…" : text;
}

/** A time the client measured itself (an ask's, shown under its answer). */
export function formatDuration(ms: number | undefined): string {
  if (ms === undefined || !Number.isFinite(ms) || ms < 0) return "";
  if (ms < 1000) return `${Math.round(ms)}ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)}s`;
  const total = Math.round(ms / 1000);
  const minutes = Math.floor(total / 60);
  const seconds = total % 60;
  return `${minutes}m${String(seconds).padStart(2, "0")}s`;
}
