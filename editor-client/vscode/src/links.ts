// What a link in an answer points at. Answers cite files as `src/app.py`, `src/app.py:12`,
// `src/app.py#L12`, `/abs/path.py` or `file:///abs/path.py`; web links open in the browser.

export type LinkTarget =
  | { kind: "external"; url: string }
  | { kind: "file"; path: string; line?: number; column?: number }
  | { kind: "none" };

const EXTERNAL = /^(https?|mailto):/i;
const OTHER_SCHEME = /^[a-z][a-z0-9+.-]*:/i;

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

function positive(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const n = Number.parseInt(text, 10);
  return Number.isFinite(n) && n > 0 ? n : undefined;
}

export function resolveLink(href: string): LinkTarget {
  const trimmed = href.trim();
  if (trimmed === "" || trimmed.startsWith("#")) return { kind: "none" };
  if (EXTERNAL.test(trimmed)) return { kind: "external", url: trimmed };
  let rest = trimmed;
  if (/^file:/i.test(rest)) {
    rest = rest.replace(/^file:(\/\/[^/]*)?/i, "");
    // file:///C:/x -> /C:/x -> C:/x
    if (/^\/[a-zA-Z]:\//.test(rest)) rest = rest.slice(1);
  } else if (OTHER_SCHEME.test(rest) && !/^[a-zA-Z]:[\\/]/.test(rest)) {
    return { kind: "none" }; // command:, vscode:, javascript: ... never followed
  }
  let line: number | undefined;
  let column: number | undefined;
  const hash = rest.indexOf("#");
  if (hash >= 0) {
    const fragment = rest.slice(hash + 1);
    rest = rest.slice(0, hash);
    const m = /^L(\d+)(?:C(\d+))?/i.exec(fragment);
    if (m) {
      line = positive(m[1]);
      column = positive(m[2]);
    }
  }
  const query = rest.indexOf("?");
  if (query >= 0) rest = rest.slice(0, query);
  rest = safeDecode(rest);
  if (line === undefined) {
    const m = /^(.*?):(\d+)(?::(\d+))?$/.exec(rest);
    if (m && m[1] !== undefined && m[1] !== "" && !/^[a-zA-Z]$/.test(m[1])) {
      rest = m[1];
      line = positive(m[2]);
      column = positive(m[3]);
    }
  }
  if (rest === "") return { kind: "none" };
  const target: LinkTarget = { kind: "file", path: rest };
  if (line !== undefined) target.line = line;
  if (column !== undefined) target.column = column;
  return target;
}

/** Join a workspace-relative path onto the folder path (POSIX or Windows), keeping absolutes. */
export function joinWorkspacePath(folder: string, path: string): string {
  if (path.startsWith("/") || /^[a-zA-Z]:[\\/]/.test(path)) return path;
  const base = folder.replace(/[\\/]+$/, "");
  const relative = path.replace(/^\.\//, "");
  return `${base}/${relative}`;
}
