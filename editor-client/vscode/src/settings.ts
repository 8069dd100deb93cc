// `agentLsp.*` settings -> the server's initializationOptions / didChangeConfiguration payload,
// and `agentLsp.server.command` -> the process to start. Pure: tests feed a plain reader.

/** The subset of vscode.WorkspaceConfiguration this module needs. */
export interface ConfigReader {
  get<T>(key: string): T | undefined;
}

/** What the server reads from `initializationOptions` (docs/protocol.md). Never an API key. */
export interface InitializationOptions {
  model?: string;
  baseUrl?: string;
  maxTurns?: number;
  enabledTools?: string[];
  bashTimeout?: number;
  systemPrompt?: string;
  requestTimeout?: number;
}

export const SECTION = "agentLsp";
export const DEFAULT_SERVER_COMMAND: readonly string[] = ["agent-lsp"];

function nonEmptyString(value: unknown): string | undefined {
  if (typeof value !== "string") return undefined;
  const trimmed = value.trim();
  return trimmed === "" ? undefined : trimmed;
}

/** Positive finite numbers only; 0 / empty is how the settings UI says "server default". */
function positiveNumber(value: unknown, integer: boolean): number | undefined {
  if (typeof value !== "number" || !Number.isFinite(value) || value <= 0) return undefined;
  return integer ? Math.floor(value) : value;
}

/**
 * Settings the user left at "server default" are omitted, so the server's own defaults and
 * its environment / .env apply. `systemPrompt` keeps inner whitespace (only blank is dropped).
 */
export function toInitializationOptions(config: ConfigReader): InitializationOptions {
  const options: InitializationOptions = {};
  const model = nonEmptyString(config.get("model"));
  if (model !== undefined) options.model = model;
  const baseUrl = nonEmptyString(config.get("baseUrl"));
  if (baseUrl !== undefined) options.baseUrl = baseUrl;
  const maxTurns = positiveNumber(config.get("maxTurns"), true);
  if (maxTurns !== undefined && maxTurns >= 1) options.maxTurns = maxTurns;
  const tools = config.get<unknown>("enabledTools");
  if (Array.isArray(tools)) {
    const names = tools.filter((t): t is string => typeof t === "string").map((t) => t.trim());
    options.enabledTools = [...new Set(names.filter((t) => t !== ""))];
  }
  const bashTimeout = positiveNumber(config.get("bashTimeout"), false);
  if (bashTimeout !== undefined) options.bashTimeout = bashTimeout;
  const systemPrompt = config.get<unknown>("systemPrompt");
  if (typeof systemPrompt === "string" && systemPrompt.trim() !== "") {
    options.systemPrompt = systemPrompt;
  }
  const requestTimeout = positiveNumber(config.get("requestTimeout"), false);
  if (requestTimeout !== undefined) options.requestTimeout = requestTimeout;
  return options;
}

/** The `workspace/didChangeConfiguration` params: same shape as initialize, under the section. */
export function toDidChangeConfigurationParams(config: ConfigReader): {
  settings: { agentLsp: InitializationOptions };
} {
  return { settings: { agentLsp: toInitializationOptions(config) } };
}

export type ServerCommand =
  | { ok: true; command: string; args: string[] }
  | { ok: false; error: string };

/**
 * `agentLsp.server.command` is an argv array (no shell): the first element is the program.
 * A plain string is accepted and split on whitespace, since users will type one anyway.
 */
export function serverCommand(config: ConfigReader): ServerCommand {
  let raw = config.get<unknown>("server.command");
  if (raw === undefined || raw === null) raw = [...DEFAULT_SERVER_COMMAND];
  if (typeof raw === "string") raw = raw.trim().split(/\s+/).filter((p) => p !== "");
  if (!Array.isArray(raw) || raw.length === 0 || !raw.every((p) => typeof p === "string")) {
    return {
      ok: false,
      error:
        'agentLsp.server.command must be a non-empty array of strings, e.g. ["agent-lsp"] ' +
        'or ["uv", "run", "--directory", "/path/to/agent-lsp", "agent-lsp"]',
    };
  }
  const parts = (raw as string[]).map(expandHome);
  const [command, ...args] = parts;
  if (command === undefined || command.trim() === "") {
    return { ok: false, error: "agentLsp.server.command: the program (first element) is empty" };
  }
  return { ok: true, command, args };
}

function expandHome(part: string): string {
  const home = process.env.HOME ?? process.env.USERPROFILE;
  if (home && (part === "~" || part.startsWith("~/"))) return home + part.slice(1);
  return part;
}
