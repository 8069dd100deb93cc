// `agentLsp.*` settings -> the server's initializationOptions / didChangeConfiguration payload,
// and `agentLsp.server.command` -> the process to start. Pure: tests feed a plain reader.

/** The subset of vscode.WorkspaceConfiguration this module needs. */
export interface ConfigReader {
  get<T>(key: string): T | undefined;
  inspect<T>(key: string): { defaultValue?: T; globalValue?: T } | undefined;
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
  editThroughEditor?: boolean;
  confirmEdits?: boolean;
  /** Sandbox and permission keys: forwarded as the user wrote them; the server validates. */
  sandbox?: unknown;
  writableRoots?: unknown;
  network?: unknown;
  approval?: unknown;
  allowedCommands?: unknown;
  permissionTimeout?: unknown;
}

export const SECTION = "agentLsp";
export const DEFAULT_SERVER_COMMAND: readonly string[] = ["agent-lsp"];

/**
 * What confines the agent's commands and when it asks first (docs/protocol.md, "Settings"):
 * machine-scoped like the
 * rest below, so a repository cannot relax them. Sent only when the user set them; the server
 * owns their defaults and validation.
 */
export const SAFETY_SETTINGS = [
  "sandbox",
  "writableRoots",
  "network",
  "approval",
  "allowedCommands",
  "permissionTimeout",
] as const;

/**
 * Settings a cloned repository must not choose: the program the extension runs, where the
 * server sends the API key, which tools the agent has (a repo could re-enable `bash`), its
 * instructions, and whether edits ask first. They are `"scope": "machine"` in package.json, so
 * VS Code takes them from user (or remote) settings only; they are read here from the
 * user/default values alone as well, so a repository's .vscode/settings.json can never supply
 * them (not even while VS Code has not yet applied the extension's scopes to the workspace's
 * settings).
 */
export const MACHINE_SETTINGS = [
  "server.command",
  "baseUrl",
  "enabledTools",
  "systemPrompt",
  "confirmEdits",
  "editThroughEditor",
  ...SAFETY_SETTINGS,
] as const;

function machineValue(config: ConfigReader, key: (typeof MACHINE_SETTINGS)[number]): unknown {
  const inspected = config.inspect<unknown>(key);
  return inspected?.globalValue ?? inspected?.defaultValue;
}

function nonEmptyString(value: unknown): string | undefined {
  if (typeof value !== "string") return undefined;
  const trimmed = value.trim();
  return trimmed === "" ? undefined : trimmed;
}

function flag(value: unknown, fallback: boolean): boolean {
  return typeof value === "boolean" ? value : fallback;
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
  const baseUrl = nonEmptyString(machineValue(config, "baseUrl"));
  if (baseUrl !== undefined) options.baseUrl = baseUrl;
  const maxTurns = positiveNumber(config.get("maxTurns"), true);
  if (maxTurns !== undefined && maxTurns >= 1) options.maxTurns = maxTurns;
  const tools = machineValue(config, "enabledTools");
  if (Array.isArray(tools)) {
    const names = tools.filter((t): t is string => typeof t === "string").map((t) => t.trim());
    options.enabledTools = [...new Set(names.filter((t) => t !== ""))];
  }
  const bashTimeout = positiveNumber(config.get("bashTimeout"), false);
  if (bashTimeout !== undefined) options.bashTimeout = bashTimeout;
  const systemPrompt = machineValue(config, "systemPrompt");
  if (typeof systemPrompt === "string" && systemPrompt.trim() !== "") {
    options.systemPrompt = systemPrompt;
  }
  const requestTimeout = positiveNumber(config.get("requestTimeout"), false);
  if (requestTimeout !== undefined) options.requestTimeout = requestTimeout;
  // Always sent (the server applies a whole section, so an omitted flag means its default).
  options.editThroughEditor = flag(machineValue(config, "editThroughEditor"), true);
  options.confirmEdits = flag(machineValue(config, "confirmEdits"), false);
  for (const key of SAFETY_SETTINGS) {
    const value = config.inspect<unknown>(key)?.globalValue;
    if (value !== undefined) options[key] = value;
  }
  return options;
}

/** The `workspace/didChangeConfiguration` params: same shape as initialize, under the section. */
export function toDidChangeConfigurationParams(config: ConfigReader): {
  settings: { agentLsp: InitializationOptions };
} {
  return { settings: { agentLsp: toInitializationOptions(config) } };
}

/**
 * The answer to a `workspace/configuration` pull: items for our section get the same object
 * initializationOptions carries (machine-scoped settings from user settings only), not VS Code's
 * raw merged section; other sections keep the client's default answer.
 */
export function answerConfigurationPull(
  items: readonly { section?: string }[],
  defaults: readonly unknown[],
  config: ConfigReader,
): unknown[] {
  return items.map((item, i) =>
    item.section === SECTION ? toInitializationOptions(config) : defaults[i] ?? null,
  );
}

export type ServerCommand =
  | { ok: true; command: string; args: string[] }
  | { ok: false; error: string };

/**
 * `agentLsp.server.command` is an argv array (no shell): the first element is the program.
 * A plain string is accepted and split on whitespace, since users will type one anyway.
 */
export function serverCommand(config: ConfigReader): ServerCommand {
  let raw = machineValue(config, "server.command");
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
