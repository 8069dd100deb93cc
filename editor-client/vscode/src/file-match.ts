// `@` in the chat input: workspace files by fuzzy name. Pure: the extension hands in the
// folder's file list (vscode.workspace.findFiles) and the exclude settings.
//
// A query matches a path when its characters appear in it in order (case-insensitive, spaces
// ignored). A match in the file's name beats one in its folders, a whole substring beats
// scattered letters, letters at a word's start (after `/`, `.`, `_`, `-`, a camel hump) and
// runs of letters count more, and a shorter path wins a tie.

/** How many files `@` offers at most. */
export const MAX_FILE_RESULTS = 30;
/** How many files of a folder are looked at (findFiles' maxResults). */
export const MAX_FILE_CANDIDATES = 20_000;
/** Never offered, whatever the settings say. */
export const ALWAYS_EXCLUDED = ["**/node_modules/**", "**/.git/**"];

export interface FileMatch {
  /** The path relative to the folder, `/`-separated. */
  path: string;
  score: number;
}

const SEPARATORS = new Set(["/", "\\", ".", "_", "-", " "]);

function isBoundary(path: string, i: number): boolean {
  if (i === 0) return true;
  const before = path[i - 1] ?? "";
  if (SEPARATORS.has(before)) return true;
  const here = path[i] ?? "";
  return before === before.toLowerCase() && here !== here.toLowerCase(); // camelCase hump
}

/** The score of `path` for `query` (undefined: no match). An empty query matches everything. */
export function fuzzyScore(query: string, path: string): number | undefined {
  const q = query.replace(/\s+/g, "").toLowerCase();
  const lower = path.toLowerCase();
  const nameStart = Math.max(lower.lastIndexOf("/"), lower.lastIndexOf("\\")) + 1;
  const lengthPenalty = path.length / 100;
  if (q === "") return -lengthPenalty;
  // A whole substring: in the name first, then anywhere.
  const inName = lower.indexOf(q, nameStart);
  if (inName >= 0) return 2000 + (inName === nameStart ? 500 : 0) + (isBoundary(path, inName) ? 100 : 0) - lengthPenalty;
  const anywhere = lower.indexOf(q);
  if (anywhere >= 0) return 1000 + (isBoundary(path, anywhere) ? 100 : 0) - lengthPenalty;
  // Scattered letters, matched greedily from the start.
  let score = 0;
  let at = 0;
  let previous = -2;
  for (const char of q) {
    const found = lower.indexOf(char, at);
    if (found < 0) return undefined;
    score += 1;
    if (isBoundary(path, found)) score += 5;
    if (found === previous + 1) score += 3;
    if (found >= nameStart) score += 2;
    previous = found;
    at = found + 1;
  }
  return score - lengthPenalty;
}

/** The best `limit` of `paths` for `query`, best first (ties: shorter, then alphabetical). */
export function rankFiles(query: string, paths: readonly string[], limit = MAX_FILE_RESULTS): FileMatch[] {
  const matches: FileMatch[] = [];
  for (const path of paths) {
    const score = fuzzyScore(query, path);
    if (score !== undefined) matches.push({ path, score });
  }
  matches.sort((a, b) => b.score - a.score || a.path.length - b.path.length || (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return matches.slice(0, Math.max(0, limit));
}

/** `a/{b,c}/*.{js,ts}` -> its alternatives (one level of braces, as settings write them). */
export function expandBraces(pattern: string): string[] {
  const open = pattern.indexOf("{");
  if (open < 0) return [pattern];
  const close = pattern.indexOf("}", open);
  if (close < 0) return [pattern];
  const inner = pattern.slice(open + 1, close);
  if (inner.includes("{")) return [pattern]; // nested: left as it is
  const head = pattern.slice(0, open);
  const tail = pattern.slice(close + 1);
  return inner.split(",").flatMap((alternative) => expandBraces(`${head}${alternative}${tail}`));
}

/**
 * The exclude glob for findFiles: `files.exclude` and `search.exclude` (the patterns set to
 * `true`; a `{when: ...}` condition is not evaluated, so such a pattern stays offered), and
 * node_modules and .git always. findFiles takes one glob, so they are one `{a,b,...}` group:
 * braces inside a pattern are expanded first.
 */
export function excludeGlob(...settings: (Record<string, unknown> | undefined)[]): string {
  const patterns = new Set<string>(ALWAYS_EXCLUDED);
  for (const setting of settings) {
    for (const [pattern, on] of Object.entries(setting ?? {})) {
      if (on !== true || pattern.trim() === "") continue;
      for (const expanded of expandBraces(pattern)) {
        if (expanded.includes("{") || expanded.includes("}") || expanded.includes(",")) continue;
        // Matched at any depth (a bare `build` too: excluding more is the safe side); a
        // folder's pattern excludes what is under it.
        const glob = expanded.startsWith("**/") ? expanded : `**/${expanded.replace(/^\/+/, "")}`;
        patterns.add(glob);
        if (!glob.endsWith("/**")) patterns.add(`${glob}/**`);
      }
    }
  }
  return `{${[...patterns].join(",")}}`;
}
