// The editor's own language servers for the agent (issue 38, docs/language.md): this client
// advertises `capabilities.experimental.agent.languageFeatures` and answers the server's
// `agent/languageDiagnostics` (the problems VS Code knows for files, after waiting for
// them to change) and `agent/languageRequest` (definition, references, symbols, hover,
// rename run against VS Code's own providers, whichever extension gives them). So the
// agent sees the type error TypeScript reports for the file it just wrote, with no
// configuration.
//
// Pure apart from the `LanguageEditor` it is given (./language-vscode is VS Code's), so tests
// drive it without VS Code. VS Code's objects are read by their shape here and turned into
// LSP JSON (0-based positions in UTF-16, LSP's 1-based severities and symbol kinds).

import { agentCapabilityFeature } from "./agent-capability";
import { Methods } from "./protocol";
import type {
  LanguageDiagnosticsParams,
  LanguageDiagnosticsResult,
  LanguageRequestParams,
  LanguageRequestResult,
} from "./protocol.generated";

export const LANGUAGE_DIAGNOSTICS = Methods.languageDiagnostics;
export const LANGUAGE_REQUEST = Methods.languageRequest;

/** What initialize carries so the server uses this editor's language servers. */
export const LANGUAGE_CAPABILITY = { agent: { languageFeatures: true } } as const;

/** The LSP methods the server may forward (server/protocol LANGUAGE_REQUEST_METHODS). */
export const FORWARDED = [
  "textDocument/definition",
  "textDocument/references",
  "textDocument/documentSymbol",
  "workspace/symbol",
  "textDocument/hover",
  "textDocument/rename",
] as const;
export type ForwardedMethod = (typeof FORWARDED)[number];

// -- VS Code's objects, by shape ------------------------------------------------------------

export interface CodePosition {
  line: number;
  character: number;
}
export interface CodeRange {
  start: CodePosition;
  end: CodePosition;
}
export interface CodeUri {
  toString(): string;
}
export interface CodeDiagnostic {
  range: CodeRange;
  message: string;
  severity: number; // VS Code's DiagnosticSeverity: Error = 0 ... Hint = 3
  code?: string | number | { value: string | number } | undefined;
  source?: string | undefined;
}
export interface CodeLocation {
  uri: CodeUri;
  range: CodeRange;
}
export interface CodeLocationLink {
  targetUri: CodeUri;
  targetRange: CodeRange;
  targetSelectionRange?: CodeRange | undefined;
}
export interface CodeDocumentSymbol {
  name: string;
  detail?: string;
  kind: number; // VS Code's SymbolKind: File = 0
  range: CodeRange;
  selectionRange: CodeRange;
  children?: CodeDocumentSymbol[];
}
export interface CodeSymbolInformation {
  name: string;
  kind: number;
  containerName?: string;
  location: CodeLocation;
}
export interface CodeHover {
  contents: Array<string | { value: string; language?: string }>;
}
export interface CodeWorkspaceEdit {
  entries(): Array<[CodeUri, Array<{ range: CodeRange; newText: string }>]>;
}

/** What this module needs of the editor (VS Code's in ./language-vscode). */
export interface LanguageEditor {
  /** `uri` spelt as onDidChangeDiagnostics spells it (default: as it is). */
  canonical?(uri: string): string;
  /** The diagnostics the editor knows for `uri` now. */
  diagnostics(uri: string): CodeDiagnostic[];
  /** Calls `listener` with the uris whose diagnostics changed, until disposed. */
  onDidChangeDiagnostics(listener: (uris: string[]) => void): { dispose(): void };
  /** Load `uri` so its language servers analyse it; false if it cannot be, or if no
   * language server can handle it (plain text). `analyse`: the answer waits for its
   * problems (VS Code shows it in a preview tab, without focus: TypeScript checks only the
   * files shown in tabs). */
  open(uri: string, analyse?: boolean): Promise<boolean>;
  /** Run the editor's provider command for `method` (positions as VS Code's); its answer. */
  execute(method: ForwardedMethod, params: Record<string, unknown>): Promise<unknown>;
}

export type LspRange = { start: CodePosition; end: CodePosition };

export function lspRange(range: CodeRange): LspRange {
  return {
    start: { line: range.start.line, character: range.start.character },
    end: { line: range.end.line, character: range.end.character },
  };
}

export function lspDiagnostic(d: CodeDiagnostic): Record<string, unknown> {
  const code = typeof d.code === "object" && d.code !== null ? d.code.value : d.code;
  const out: Record<string, unknown> = {
    range: lspRange(d.range),
    severity: Math.min(Math.max(d.severity, 0), 3) + 1,
    message: d.message,
  };
  if (code !== undefined) out.code = code;
  if (d.source) out.source = d.source;
  return out;
}

function isLink(item: unknown): item is CodeLocationLink {
  return typeof item === "object" && item !== null && "targetUri" in item;
}

export function lspLocations(result: unknown): Array<{ uri: string; range: LspRange }> | null {
  if (!Array.isArray(result)) return null;
  return result.map((item: CodeLocation | CodeLocationLink) =>
    isLink(item)
      ? { uri: item.targetUri.toString(), range: lspRange(item.targetSelectionRange ?? item.targetRange) }
      : { uri: item.uri.toString(), range: lspRange(item.range) },
  );
}

function lspDocumentSymbol(s: CodeDocumentSymbol): Record<string, unknown> {
  return {
    name: s.name,
    ...(s.detail ? { detail: s.detail } : {}),
    kind: s.kind + 1,
    range: lspRange(s.range),
    selectionRange: lspRange(s.selectionRange),
    children: (s.children ?? []).map(lspDocumentSymbol),
  };
}

export function lspSymbols(result: unknown): Array<Record<string, unknown>> | null {
  if (!Array.isArray(result)) return null;
  return result.map((item: CodeDocumentSymbol | CodeSymbolInformation) =>
    "location" in item
      ? {
          name: item.name,
          kind: item.kind + 1,
          ...(item.containerName ? { containerName: item.containerName } : {}),
          location: { uri: item.location.uri.toString(), range: lspRange(item.location.range) },
        }
      : lspDocumentSymbol(item),
  );
}

export function lspHover(result: unknown): { contents: { kind: "markdown"; value: string } } | null {
  if (!Array.isArray(result) || result.length === 0) return null;
  const parts: string[] = [];
  for (const hover of result as CodeHover[]) {
    for (const part of hover.contents ?? []) {
      const value = typeof part === "string" ? part : part.language ? "```" + part.language + "\n" + part.value + "\n```" : part.value;
      if (value.trim()) parts.push(value);
    }
  }
  return parts.length ? { contents: { kind: "markdown", value: parts.join("\n\n") } } : null;
}

export function lspWorkspaceEdit(result: unknown): { changes: Record<string, unknown[]> } | null {
  if (typeof result !== "object" || result === null || !("entries" in result)) return null;
  const changes: Record<string, unknown[]> = {};
  for (const [uri, edits] of (result as CodeWorkspaceEdit).entries()) {
    changes[uri.toString()] = edits.map((e) => ({ range: lspRange(e.range), newText: e.newText }));
  }
  return { changes };
}

/** The LSP JSON of a provider command's answer for `method` (null: none). */
export function toLsp(method: ForwardedMethod, result: unknown): unknown {
  switch (method) {
    case "textDocument/definition":
    case "textDocument/references":
      return lspLocations(result);
    case "textDocument/documentSymbol":
    case "workspace/symbol":
      return lspSymbols(result);
    case "textDocument/hover":
      return lspHover(result);
    case "textDocument/rename":
      return lspWorkspaceEdit(result);
  }
}

export const SETTLE_MS = 300;
/** While the changed files have no problems, the quiet awaited is this many times longer. */
export const EMPTY_SETTLE_FACTOR = 3;

/** Answers both requests for `editor`; create it when the client starts (it watches every
 * diagnostics change from then on, to know which files some language server reports on). */
export class LanguageAnswers {
  /** Uris some language server of the editor reported on (a change event, or problems). */
  private readonly reported = new Set<string>();
  private readonly watching: { dispose(): void };
  private readonly canonical: (uri: string) => string;

  constructor(
    private readonly editor: LanguageEditor,
    /** How long a file's diagnostics must stay unchanged, once changed, to be answered. */
    private readonly settleMs = SETTLE_MS,
  ) {
    this.watching = editor.onDidChangeDiagnostics((uris) => {
      for (const uri of uris) this.reported.add(uri);
    });
    this.canonical = editor.canonical ? (uri) => editor.canonical!(uri) : (uri) => uri;
  }

  dispose(): void {
    this.watching.dispose();
  }

  async diagnostics(params: LanguageDiagnosticsParams): Promise<LanguageDiagnosticsResult> {
    const waitMs = Math.max(0, Math.min(params.waitMs ?? 0, 60_000));
    const uris = params.uris ?? [];
    // Watch before anything is opened: a change from now on is the one awaited.
    const changed = new Set<string>(); // canonical uris
    const wanted = new Set<string>(); // the files awaited: those some server may handle
    let wake: () => void = () => {};
    const allChanged = () => [...wanted].every((u) => changed.has(u));
    const watcher = this.editor.onDidChangeDiagnostics((changedUris) => {
      let ours = false;
      for (const uri of changedUris) {
        if (wanted.has(uri)) {
          changed.add(uri);
          ours = true;
        }
      }
      if (ours && allChanged()) wake();
    });
    try {
      const opened = await Promise.all(uris.map((uri) => this.editor.open(uri, waitMs > 0)));
      uris.forEach((uri, i) => {
        if (opened[i]) wanted.add(this.canonical(uri));
      });
      if (waitMs > 0 && wanted.size > 0) {
        // Until every file's diagnostics changed and then stayed SETTLE_MS without another
        // change (a server publishes in parts: TypeScript its syntax, then its semantic
        // problems), or the wait is over.
        const deadline = Date.now() + waitMs;
        await new Promise<void>((resolve) => {
          let timer = setTimeout(resolve, waitMs);
          wake = () => {
            clearTimeout(timer);
            // No problems yet may be a first pass only (TypeScript's syntax check, its
            // semantic one next): a longer quiet is awaited then.
            const quiet = uris.some((u) => this.editor.diagnostics(u).length) ? this.settleMs : this.settleMs * EMPTY_SETTLE_FACTOR;
            timer = setTimeout(resolve, Math.max(0, Math.min(quiet, deadline - Date.now())));
          };
          if (allChanged()) wake();
        });
      }
    } finally {
      watcher.dispose();
    }
    return {
      files: uris.map((uri) => {
        const canonical = this.canonical(uri);
        const found = this.editor.diagnostics(uri);
        if (found.length) this.reported.add(canonical);
        const answered = !wanted.has(canonical)
          ? false // no language server handles it: said at once
          : waitMs > 0
            ? changed.has(canonical)
            : this.reported.has(canonical) || changed.has(canonical);
        return { uri, diagnostics: found.map(lspDiagnostic), answered };
      }),
    };
  }

  async request(params: LanguageRequestParams): Promise<LanguageRequestResult> {
    const method = params.method as ForwardedMethod;
    if (!FORWARDED.includes(method)) return { result: null } as unknown as LanguageRequestResult;
    const uri = (params.params?.textDocument as { uri?: unknown } | undefined)?.uri;
    if (typeof uri === "string") await this.editor.open(uri);
    let answer: unknown;
    try {
      answer = await this.editor.execute(method, params.params ?? {});
    } catch {
      answer = undefined; // no provider for this file: "no language server answered"
    }
    return { result: toLsp(method, answer) ?? null } as unknown as LanguageRequestResult;
  }
}

/** The languageclient feature that advertises the capability (merged into `agent`). */
export function languageCapabilityFeature() {
  return agentCapabilityFeature(LANGUAGE_CAPABILITY.agent);
}
