// Server errors -> what the user is told and the action that fixes it. The server's message is
// shown as is (it says what to set and where); the buttons do the fix: set the key for an
// authentication failure, Retry for a provider's 5xx or a timeout, open a folder when none is.

import { ErrorActions, ErrorCodes, type ErrorActionName } from "./protocol";
import { formatDuration } from "./summary";

export type ErrorAction =
  | "openSettings"
  | "openEndpointSettings"
  | "selectModel"
  | "openReadme"
  | "openFolder"
  | "showLog"
  | "setApiKey"
  | "checkConnection"
  | "retry"
  | "compact"
  | "stop";

export type ErrorKind =
  | "cancelled"
  | "notConfigured"
  | "auth"
  | "transient"
  | "request"
  | "noFolder"
  | "busy"
  | "contextWindow"
  | "other";

export interface ErrorReport {
  cancelled: boolean;
  kind: ErrorKind;
  code?: number;
  message: string;
  actions: { title: string; action: ErrorAction }[];
}

function codeOf(error: unknown): number | undefined {
  if (typeof error === "object" && error !== null && "code" in error) {
    const code = (error as { code: unknown }).code;
    if (typeof code === "number") return code;
  }
  return undefined;
}

function messageOf(error: unknown): string {
  if (typeof error === "object" && error !== null && "message" in error) {
    const message = (error as { message: unknown }).message;
    if (typeof message === "string" && message.trim() !== "") return message;
  }
  return typeof error === "string" && error !== "" ? error : "Unknown error";
}

interface RequestFailure {
  /** What the user does to fix it (ErrorActions): the server names no editor, the buttons do. */
  action?: string;
  status?: number | null;
  kind?: string;
  attempts?: number;
  elapsedMs?: number;
}

function dataOf(error: unknown): RequestFailure {
  if (typeof error === "object" && error !== null && "data" in error) {
    const data = (error as { data: unknown }).data;
    if (typeof data === "object" && data !== null) return data as RequestFailure;
  }
  return {};
}

/** The buttons for an error's data.action (a setting to set), this client's words for it. */
export function buttonsFor(action: ErrorActionName): ErrorReport["actions"] {
  switch (action) {
    case ErrorActions.setApiKey:
      return [
        { title: "Set API Key", action: "setApiKey" },
        { title: "Check Connection", action: "checkConnection" },
        { title: "Open Settings", action: "openSettings" },
      ];
    case ErrorActions.setBaseUrl:
      return [
        { title: "Open Settings", action: "openEndpointSettings" },
        { title: "Check Connection", action: "checkConnection" },
      ];
    case ErrorActions.setModel:
      return [
        { title: "Select Model", action: "selectModel" },
        { title: "Open Settings", action: "openEndpointSettings" },
        { title: "Check Connection", action: "checkConnection" },
      ];
  }
}

function knownAction(action: unknown): ErrorActionName | undefined {
  return Object.values(ErrorActions).find((a) => a === action);
}

/** "3 attempts over 12.4s", from the server's structured fields. */
export function attemptsText(data: RequestFailure): string {
  if (typeof data.attempts !== "number" || data.attempts < 1) return "";
  const over = typeof data.elapsedMs === "number" ? ` over ${formatDuration(data.elapsedMs)}` : "";
  return `${data.attempts} attempt${data.attempts === 1 ? "" : "s"}${over}`;
}

function requestFailure(message: string, data: RequestFailure): Pick<ErrorReport, "kind" | "message" | "actions"> {
  const status = typeof data.status === "number" ? data.status : undefined;
  if (data.kind === "auth" || status === 401 || status === 403) {
    return {
      kind: "auth",
      message,
      actions: [
        { title: "Set API Key", action: "setApiKey" },
        { title: "Check Connection", action: "checkConnection" },
      ],
    };
  }
  const attempts = attemptsText(data);
  // Say how often it was tried unless the server's text already does.
  const text = attempts && !/attempt/i.test(message) ? `${message} (${attempts})` : message;
  if (data.kind === "connection") {
    // Nothing answers at the base URL (refused, no such host): most often the setting is
    // wrong or a local server is not running; the endpoint's setting first.
    return {
      kind: "transient",
      message: text,
      actions: [
        { title: "Open Settings", action: "openEndpointSettings" },
        { title: "Retry", action: "retry" },
        { title: "Check Connection", action: "checkConnection" },
        { title: "Show Server Log", action: "showLog" },
      ],
    };
  }
  if (status === 404) {
    // No such model, or no such path (a base URL without /v1): the model picker, then settings.
    return {
      kind: "request",
      message: text,
      actions: [
        { title: "Select Model", action: "selectModel" },
        { title: "Open Settings", action: "openEndpointSettings" },
        { title: "Check Connection", action: "checkConnection" },
      ],
    };
  }
  const transient = data.kind === "timeout" || status === 429 || (status !== undefined && status >= 500);
  if (transient) {
    return {
      kind: "transient",
      message: text,
      actions: [
        { title: "Retry", action: "retry" },
        { title: "Check Connection", action: "checkConnection" },
        { title: "Show Server Log", action: "showLog" },
      ],
    };
  }
  return {
    kind: "request",
    message: text,
    actions: [
      { title: "Retry", action: "retry" },
      { title: "Check Connection", action: "checkConnection" },
      { title: "Open Settings", action: "openSettings" },
    ],
  };
}

export function describeAskError(error: unknown): ErrorReport {
  const code = codeOf(error);
  const message = messageOf(error);
  const report = (kind: ErrorKind, actions: ErrorReport["actions"], text = message): ErrorReport => {
    const r: ErrorReport = { cancelled: false, kind, message: text, actions };
    if (code !== undefined) r.code = code;
    return r;
  };
  switch (code) {
    case ErrorCodes.requestCancelled:
      return { cancelled: true, kind: "cancelled", code, message: "Agent request cancelled.", actions: [] };
    case ErrorCodes.modelNotConfigured: {
      // data.action says which setting; a server without it (older) or a broken user file:
      // the key first, as most often.
      const action = knownAction(dataOf(error).action);
      return report("notConfigured", buttonsFor(action ?? ErrorActions.setApiKey));
    }
    case ErrorCodes.modelRequestFailed: {
      const failure = requestFailure(message, dataOf(error));
      return report(failure.kind, failure.actions, failure.message);
    }
    case ErrorCodes.noWorkspaceFolder:
      return report("noFolder", [{ title: "Open Folder…", action: "openFolder" }]);
    case ErrorCodes.sessionBusy:
      return report("busy", [{ title: "Stop It", action: "stop" }]);
    case ErrorCodes.contextWindowExceeded:
      // The conversation does not fit even compacted: compacting it all now (older turns
      // summarized) may make room; the message says what else to do.
      return report("contextWindow", [
        { title: "Compact", action: "compact" },
        { title: "Retry", action: "retry" },
      ]);
    default:
      return report("other", [{ title: "Show Server Log", action: "showLog" }]);
  }
}

/**
 * The buttons of an error toast (shown when the chat view is not in sight): what the view's
 * buttons would do, Retry included when there is an ask to retry; never Stop (the ask ended).
 */
export function toastActions(report: ErrorReport, canRetry: boolean): ErrorReport["actions"] {
  return report.actions.filter((a) => a.action !== "stop" && (a.action !== "retry" || canRetry));
}
