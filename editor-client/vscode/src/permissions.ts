// agent/requestPermission (docs/protocol.md): the server asks before a call it may not run
// on its own — a bash escalation (network, or outside the sandbox), any bash call where the
// system has no sandbox, or any change when agentLsp.approval is "always". The user answers
// on a card in the chat (the running ask's), else in a modal dialog (an MCP server's approval):
// the command in full, the reason, the four choices. The answer has ACP's
// shape. Pure apart from the `PermissionUi` it is given, so tests drive it without VS Code.
// Everything shown is escaped (./display): the arguments are the model's raw data, and an
// escape sequence or bidi override in them must not hide part of what the user allows.

import { agentCapabilityFeature } from "./agent-capability";
import { escapeConsent, escapeControl } from "./display";
import { Methods } from "./protocol";

/** What the server sends (server/protocol/ RequestPermissionParams). */
export interface PermissionOption {
  optionId: string;
  name: string;
  kind: "allow_once" | "allow_always" | "reject_once" | "reject_always" | string;
}

export interface PermissionRequest {
  sessionId: string;
  callId: string;
  toolName: string;
  arguments: Record<string, unknown>;
  title: string;
  reason: string;
  options: PermissionOption[];
  /** What an "always" answer covers, one sentence from the server (absent: none offered). */
  alwaysScope?: string | null;
}

export type PermissionResult =
  | { outcome: { outcome: "selected"; optionId: string } }
  | { outcome: { outcome: "cancelled" } };

export const REQUEST_PERMISSION = Methods.requestPermission;

/** What initialize carries so the server knows this client answers (merged into capabilities). */
export const PERMISSION_CAPABILITY = { agent: { requestPermission: true } } as const;

/** The dialog, as a function of VS Code's (tests pass their own). */
export interface PermissionUi {
  /** Show a modal with `buttons`; resolves to the clicked one, undefined for Cancel/Escape. */
  ask(message: string, detail: string, buttons: string[]): PromiseLike<string | undefined>;
  /**
   * Ask in the chat instead, on a card of the running ask: resolves to the clicked button's
   * label (undefined: dismissed). Returns undefined when no card can show this request (not
   * the chat's running ask, e.g. an MCP server's approval): the modal asks then.
   * `withdrawn` resolves when the server takes the request back.
   */
  inline?(request: PermissionRequest, card: PermissionCard, withdrawn: Promise<void>): PromiseLike<string | undefined> | undefined;
}

/** The slice of a CancellationToken this module needs. */
export interface CancelSignal {
  readonly isCancellationRequested: boolean;
  onCancellationRequested(listener: () => void): { dispose(): void };
}

// Button labels by kind, in the order the dialog shows them. What "always" covers is the
// server's to say (the request's alwaysScope, shown beside the buttons), never a label's.
const LABELS: Record<string, string> = {
  allow_once: "Allow Once",
  allow_always: "Always Allow",
  reject_once: "Reject",
  reject_always: "Always Reject",
};
// agent/approveMcpServer's question: either allow records the approval of that definition for
// the folder, reject leaves it waiting, reject_always records a no for good. The user asked for
// it (Agent: MCP Servers, or the notice of a new server), and Reject comes first: the button a
// modal focuses is never the one that starts a program.
const MCP_SERVER_APPROVAL = "mcp_server";
const LABELS_MCP_SERVER: Record<string, string> = {
  reject_once: "Reject",
  allow_once: "Approve and Start",
  reject_always: "Reject, Don't Ask Again",
};
const ORDER_MCP_SERVER = Object.keys(LABELS_MCP_SERVER);

export const isMcpTool = (toolName: string): boolean => toolName.startsWith("mcp__");

export interface PermissionDialog {
  message: string;
  detail: string;
  /** Button label -> optionId, in display order. */
  buttons: Array<{ label: string; optionId: string }>;
}

// How much of a write or edit the dialog quotes (a modal has no scroll bar to speak of).
export const QUOTE_LINES = 12;
export const QUOTE_CHARS = 1200;

/** `text` cut to QUOTE_LINES lines / QUOTE_CHARS characters, saying so when it was cut. */
export function quote(text: string): string[] {
  const all = text.split("\n");
  let lines = all.slice(0, QUOTE_LINES);
  let shown = lines.join("\n");
  if (shown.length > QUOTE_CHARS) {
    shown = shown.slice(0, QUOTE_CHARS);
    lines = shown.split("\n");
  }
  if (shown.length === text.length) return lines;
  const rest = all.length - lines.length;
  return [...lines, `… (shortened: ${rest > 0 ? `${rest} more line${rest === 1 ? "" : "s"}, ` : ""}${text.length - shown.length} more characters)`];
}

function plural(n: number, word: string): string {
  return `${n.toLocaleString("en-US")} ${word}${n === 1 ? "" : "s"}`;
}

// A file's content and an edit's texts: escaped, their indentation kept.
const shown = (text: string): string => escapeControl(text, { keepNewlines: true });

/** A bash call's command as the user must see it: every line, every character visible. */
export function shownCommand(toolName: string, args: Record<string, unknown> | undefined): string | undefined {
  const command = args?.["command"];
  return toolName === "bash" && typeof command === "string" ? escapeConsent(command, { keepNewlines: true }) : undefined;
}

/**
 * What a workspace's MCP server would run (agent/approveMcpServer's arguments): the program,
 * its arguments exactly (JSON, so where one ends is seen), the environment it adds and its
 * folder, or the URL and headers. The approval is bound to all of it, so all of it is shown:
 * an `LD_PRELOAD` in `env` runs as much as the command does.
 */
export function serverSubject(args: Record<string, unknown> | undefined): string[] {
  const lines: string[] = [];
  const text = (value: unknown) => (typeof value === "string" ? escapeConsent(value) : escapeConsent(JSON.stringify(value) ?? ""));
  const pairs = (label: string, value: unknown) => {
    if (typeof value !== "object" || value === null) return;
    const entries = Object.entries(value as Record<string, unknown>);
    if (entries.length) lines.push(`${label}:`, ...entries.map(([k, v]) => `  ${escapeConsent(k)}=${text(v)}`));
  };
  if (args?.["transport"] === "http") {
    lines.push(`URL: ${text(args["url"])}`);
    pairs("Headers", args["headers"]);
    return lines;
  }
  lines.push(`Command: ${text(args?.["command"])}`);
  const argv = args?.["args"];
  if (Array.isArray(argv) && argv.length) lines.push(`Arguments: ${text(argv)}`);
  pairs("Environment", args?.["env"]);
  if (typeof args?.["cwd"] === "string") lines.push(`Working folder: ${text(args["cwd"])}`);
  return lines;
}

/**
 * What the call will do, in lines: a command in full; for write_file the file, the content's
 * size and its first lines; for edit_file the file and the text replaced → its replacement.
 * A path alone would not tell the user what they allow.
 */
export function callSubject(toolName: string, args: Record<string, unknown> | undefined): string[] {
  if (toolName === MCP_SERVER_APPROVAL) return serverSubject(args);
  const command = shownCommand(toolName, args);
  if (command !== undefined) return ["Command:", command];
  const lines: string[] = [];
  const path = args?.["path"];
  if (typeof path === "string") lines.push(`File: ${escapeConsent(path)}`);
  const content = args?.["content"];
  if (toolName === "write_file" && typeof content === "string") {
    const count = content === "" ? 0 : content.split("\n").length - (content.endsWith("\n") ? 1 : 0);
    const bytes = new TextEncoder().encode(content).length;
    lines.push(`Writes ${plural(count, "line")} (${plural(bytes, "byte")}):`, ...quote(shown(content)));
  }
  if (isMcpTool(toolName) && args && Object.keys(args).length > 0) {
    // The server's title has them on one line; here they are in full, one field a line.
    lines.push("Arguments:", ...quote(shown(JSON.stringify(args, null, 2))));
  }
  const oldText = args?.["old_text"];
  const newText = args?.["new_text"];
  if (toolName === "edit_file" && typeof oldText === "string" && typeof newText === "string") {
    const every = args?.["replace_all"] === true ? " (every occurrence)" : "";
    lines.push(`Replaces${every}:`, ...quote(shown(oldText)), "With:", ...quote(shown(newText)));
  }
  return lines;
}

/** The dialog's text: what the agent wants, the command (or what it writes) in full, and why. */
export function permissionDialog(request: PermissionRequest): PermissionDialog {
  const what = typeof request.title === "string" && request.title !== "" ? request.title : request.toolName;
  const lines = callSubject(request.toolName, request.arguments);
  if (typeof request.reason === "string" && request.reason.trim() !== "") {
    lines.push("", `Reason: ${escapeConsent(request.reason)}`);
  }
  const approval = request.toolName === MCP_SERVER_APPROVAL;
  const scope = alwaysScope(request);
  if (scope !== undefined) lines.push("", scope);
  const labels = approval ? LABELS_MCP_SERVER : LABELS;
  const options = (Array.isArray(request.options) ? request.options : [])
    .filter((option) => typeof option?.optionId === "string")
    .filter((option) => !approval || option.kind in LABELS_MCP_SERVER);
  if (approval) options.sort((a, b) => ORDER_MCP_SERVER.indexOf(a.kind) - ORDER_MCP_SERVER.indexOf(b.kind));
  const buttons = options.map((option) => ({ label: labels[option.kind] ?? option.name, optionId: option.optionId }));
  // An approval is the user's own question (they chose the server), not the agent's.
  const message = approval ? `Approve? ${escapeConsent(String(what))}` : `The agent asks: ${escapeConsent(String(what))}`;
  return { message, detail: lines.join("\n"), buttons };
}

/** The line saying what "always" allows: the server's sentence as it is (escaped), or none. */
export function alwaysScope(request: PermissionRequest): string | undefined {
  const scope = request.alwaysScope;
  if (request.toolName === MCP_SERVER_APPROVAL || typeof scope !== "string" || scope.trim() === "") return undefined;
  return `“Always” allows: ${escapeConsent(scope)}`;
}

/** The request as the chat's card shows it: the command once, verbatim, in `code`. */
export interface PermissionCard {
  /** What the agent wants, without the command the code block shows ("Run outside the sandbox"). */
  title: string;
  code?: string;
  /** What else the call does (a file, its content), the reason, what "always" covers. */
  body: string;
  buttons: Array<{ label: string; optionId: string }>;
}

/**
 * The chat card of a request. The server's title ends with the command on one line
 * ("Run outside the sandbox: echo hi"); the code block shows it whole, so the title stops
 * before it rather than say it twice.
 */
export function permissionCard(request: PermissionRequest): PermissionCard {
  const dialog = permissionDialog(request);
  const command = shownCommand(request.toolName, request.arguments);
  let title = typeof request.title === "string" && request.title !== "" ? escapeConsent(request.title) : escapeConsent(request.toolName);
  if (command !== undefined) {
    const oneLine = escapeConsent(String(request.arguments["command"]));
    if (title.endsWith(`: ${oneLine}`)) title = title.slice(0, -oneLine.length - 2);
  }
  const lines = command === undefined ? callSubject(request.toolName, request.arguments) : [];
  if (typeof request.reason === "string" && request.reason.trim() !== "") lines.push(`Reason: ${escapeConsent(request.reason)}`);
  const scope = alwaysScope(request);
  if (scope !== undefined) lines.push(scope);
  const card: PermissionCard = { title, body: lines.join("\n"), buttons: dialog.buttons };
  if (command !== undefined) card.code = command;
  return card;
}

const CANCELLED: PermissionResult = { outcome: { outcome: "cancelled" } };

/**
 * Ask the user about one request. Cancel/Escape dismisses it (the server declines the call
 * and the ask goes on). If the server withdraws the request (`token`: the ask was cancelled
 * or nobody answered in time), the answer is "cancelled" at once; VS Code cannot close a
 * modal from code, so a later click there changes nothing.
 */
export async function answerPermission(
  request: PermissionRequest,
  ui: PermissionUi,
  token?: CancelSignal,
): Promise<PermissionResult> {
  const dialog = permissionDialog(request);
  if (dialog.buttons.length === 0 || token?.isCancellationRequested) return CANCELLED;
  let subscription: { dispose(): void } | undefined;
  const withdrawn = new Promise<undefined>((resolve) => {
    subscription = token?.onCancellationRequested(() => resolve(undefined));
  });
  try {
    const asked =
      ui.inline?.(request, permissionCard(request), withdrawn.then(() => undefined)) ??
      ui.ask(dialog.message, dialog.detail, dialog.buttons.map((b) => b.label));
    const clicked = await Promise.race([asked, withdrawn]);
    if (token?.isCancellationRequested) return CANCELLED;
    const chosen = dialog.buttons.find((b) => b.label === clicked);
    return chosen ? { outcome: { outcome: "selected", optionId: chosen.optionId } } : CANCELLED;
  } finally {
    subscription?.dispose();
  }
}

/** Listeners told of every request and its answer (e.g. the Agent view, to show it inline). */
export type PermissionListener = (request: PermissionRequest, answer: Promise<PermissionResult>) => void;

export class PermissionRequests {
  private readonly listeners = new Set<PermissionListener>();

  constructor(private readonly ui: PermissionUi) {}

  /** Subscribe; returns the unsubscribe. */
  onRequest(listener: PermissionListener): { dispose(): void } {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  }

  /** The `agent/requestPermission` handler (register it with client.onRequest). */
  handle(request: PermissionRequest, token?: CancelSignal): Promise<PermissionResult> {
    const answer = answerPermission(request, this.ui, token);
    for (const listener of this.listeners) listener(request, answer);
    return answer;
  }
}

/**
 * A vscode-languageclient StaticFeature that adds PERMISSION_CAPABILITY to the client's
 * `experimental.agent` capabilities (./agent-capability).
 */
export function permissionCapabilityFeature() {
  return agentCapabilityFeature(PERMISSION_CAPABILITY.agent);
}
