// The first-run pieces that need no VS Code: the server's environment with the API key, the
// model picker's items, the model status bar text, and how a connection check is reported.
// Pure (no `vscode` import), so unit tests drive them directly.

import { type CheckConnectionResult, type ConnectionCheck, ErrorActions, type ListModelsResult } from "./protocol";

/** The SecretStorage key under which the API key is kept. */
export const API_KEY_SECRET = "agentLsp.apiKey";
/** How the server names the key's source in its messages (instead of "environment ..."). */
export const KEY_SOURCE_LABEL = 'VS Code\'s secret storage ("Agent: Set API Key")';

/**
 * The environment of the server process: VS Code's own, plus the stored key as MODEL_API_KEY
 * (the server's highest source for it). Without a stored key the server inherits VS Code's
 * environment as is and finds the key in its user configuration file or its environment.
 */
export function serverEnvironment(
  base: Readonly<Record<string, string | undefined>>,
  apiKey: string | undefined,
): Record<string, string> | undefined {
  if (apiKey === undefined || apiKey.trim() === "") return undefined;
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(base)) if (value !== undefined) env[name] = value;
  env.MODEL_API_KEY = apiKey.trim();
  env.AGENT_LSP_API_KEY_SOURCE = KEY_SOURCE_LABEL;
  return env;
}

/** The input box's validation: undefined when the text can be a key, else why not. */
export function validateApiKey(text: string): string | undefined {
  const key = text.trim();
  if (key === "") return "Paste the API key of your model endpoint.";
  if (/\s/.test(key)) return "An API key has no spaces.";
  return undefined;
}

export interface ModelPickItem {
  label: string;
  description?: string;
  /** The model id, or undefined for "type a name". */
  id: string | undefined;
}

/** The picker's items: the current model first, then the others, then "type a name". */
export function modelPickItems(result: ListModelsResult): ModelPickItem[] {
  const ids = [...new Set((result.models ?? []).map((m) => m.id).filter((id) => typeof id === "string" && id !== ""))];
  const current = result.current;
  const ordered = ids.includes(current) ? [current, ...ids.filter((id) => id !== current)] : ids;
  const items: ModelPickItem[] = ordered.map((id) =>
    id === current ? { label: id, description: "current", id } : { label: id, id },
  );
  items.push({
    label: "$(edit) Type a model name…",
    description: ids.length === 0 ? "the endpoint lists no models" : "one the endpoint does not list",
    id: undefined,
  });
  return items;
}

export interface ModelStatusView {
  text: string;
  tooltip: string;
}

/**
 * The model status bar item: the `agentLsp.model` setting, else the model the server last said
 * it uses (agent/listModels' `current`), else the server's configured default.
 */
export function describeModelStatus(setting: string | undefined, serverCurrent: string | undefined): ModelStatusView {
  const chosen = setting?.trim();
  if (chosen) {
    return { text: `$(sparkle) ${chosen}`, tooltip: `Agent model: ${chosen} (agentLsp.model) — click to choose another` };
  }
  if (serverCurrent) {
    return {
      text: `$(sparkle) ${serverCurrent}`,
      tooltip: `Agent model: ${serverCurrent} (the server's configuration) — click to choose another`,
    };
  }
  return {
    text: "$(sparkle) default model",
    tooltip: "Agent model: the server's configured model (MODEL or the user configuration file) — click to choose one",
  };
}

export type CheckAction = "setApiKey" | "selectModel" | "openSettings" | "openEndpointSettings" | "showLog";

export interface CheckReport {
  ok: boolean;
  /** One line for the notification. */
  headline: string;
  /** A line per check, for the log. */
  lines: string[];
  actions: { title: string; action: CheckAction }[];
}

const ACTION_TITLES: Record<CheckAction, string> = {
  setApiKey: "Set API Key",
  selectModel: "Select Model",
  openSettings: "Open Settings",
  openEndpointSettings: "Open Settings",
  showLog: "Show Details",
};

/**
 * The buttons for a failed check, the one that fixes it first, chosen by the check's `kind`
 * (docs/protocol.md), never by its words: nothing answering or no API at the base URL wants
 * the endpoint's settings, a missing or refused key the key, an unknown model the model picker.
 * Anything else (a rate limit, a server error, a broken user file; a kind this client does
 * not know) has nothing one setting fixes: the settings, and the details.
 */
export function checkActions(check: Pick<ConnectionCheck, "kind" | "action"> | undefined): CheckAction[] {
  // The check's action (what to set) first; its kind for a server that sends none.
  switch (check?.action) {
    case ErrorActions.setBaseUrl:
      return ["openEndpointSettings", "showLog"];
    case ErrorActions.setApiKey:
      return ["setApiKey", "openEndpointSettings", "showLog"];
    case ErrorActions.setModel:
      return ["selectModel", "openEndpointSettings", "showLog"];
  }
  switch (check?.kind) {
    case "unreachable":
    case "url":
      return ["openEndpointSettings", "showLog"];
    case "auth":
      return ["setApiKey", "openEndpointSettings", "showLog"];
    case "model":
      return ["selectModel", "openEndpointSettings", "showLog"];
    default:
      return ["openSettings", "showLog"];
  }
}

/** What the user is told after agent/checkConnection; the buttons follow the failed check's kind. */
export function describeCheck(result: CheckConnectionResult): CheckReport {
  const checks = result.checks ?? [];
  const lines = checks.map((c) => `${c.ok ? "✓" : "✗"} ${c.name}: ${c.message}`);
  const failed = checks.find((c) => !c.ok);
  if (result.ok && failed === undefined) {
    const answered = checks.find((c) => c.name === "request");
    return {
      ok: true,
      headline: `The model endpoint works${answered ? `: ${answered.message}` : "."}`,
      lines,
      actions: [{ title: ACTION_TITLES.showLog, action: "showLog" }],
    };
  }
  const actions = checkActions(failed);
  return {
    ok: false,
    headline: failed ? failed.message : "The connection check failed.",
    lines,
    actions: actions.map((action) => ({ title: ACTION_TITLES[action], action })),
  };
}
