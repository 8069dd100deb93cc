// `agentLsp.*` settings -> the server's initializationOptions / didChangeConfiguration payload,
// and `agentLsp.server.command` -> the process to start. Pure: tests feed a plain reader.

import type { Settings } from "./protocol.generated";
import { SERVER_SETTINGS, USER_ONLY_SERVER_SETTINGS } from "./settings.generated";

// The generated keys are the server's (docs/protocol.schema.json).
SERVER_SETTINGS satisfies readonly (keyof Settings)[];

/** The subset of vscode.WorkspaceConfiguration this module needs. */
export interface ConfigReader {
  get<T>(key: string): T | undefined;
  inspect<T>(key: string):
    | { defaultValue?: T; globalValue?: T; workspaceValue?: T; workspaceFolderValue?: T }
    | undefined;
}

/**
 * What the server reads from `initializationOptions` (docs/protocol.md): the user's raw values,
 * keyed as the server names them. Never an API key. The server validates each field, reports
 * bad ones with a warning, and owns every default, so nothing here is checked or defaulted.
 */
export type InitializationOptions = Record<string, unknown>;

export const SECTION = "agentLsp";
export const DEFAULT_SERVER_COMMAND: readonly string[] = ["agent-lsp"];

/**
 * Settings a cloned repository must not choose: the program the extension runs, and the
 * server's user-only settings (where the server sends the API key, which tools the agent has,
 * its instructions, whether edits ask first, the sandbox and permissions, MCP servers: the
 * server declares which, `"scope": "machine"` in docs/protocol.schema.json and package.json).
 * VS Code takes them from user (or remote) settings only; they are read here from the user
 * value alone as well, so a repository's .vscode/settings.json can never supply them (not even
 * while VS Code has not yet applied the extension's scopes to the workspace's settings).
 */
export const MACHINE_SETTINGS = ["server.command", ...USER_ONLY_SERVER_SETTINGS] as const;

/** The keys forwarded to the server: every setting it declares (generated from its classes). */
export { SERVER_SETTINGS };

const MACHINE = new Set<string>(MACHINE_SETTINGS);

/**
 * The value the user set for `key`, or undefined when they set none (package.json's default
 * is never sent: the server's default applies). Machine-scoped keys: the user (or remote)
 * value only; others: the most specific level, as VS Code merges them.
 */
export function userValue(config: ConfigReader, key: string): unknown {
  const levels = config.inspect<unknown>(key);
  if (levels === undefined) return undefined;
  if (MACHINE.has(key)) return levels.globalValue;
  return levels.workspaceFolderValue ?? levels.workspaceValue ?? levels.globalValue;
}

/** The user's values, as they wrote them (a typo reaches the server, which says so). */
export function toInitializationOptions(config: ConfigReader): InitializationOptions {
  const options: InitializationOptions = {};
  for (const key of SERVER_SETTINGS) {
    const value = userValue(config, key);
    if (value !== undefined && value !== null) options[key] = value;
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
  let raw = userValue(config, "server.command");
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
