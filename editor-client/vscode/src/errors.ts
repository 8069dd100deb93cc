// Server errors -> what the user is told and which button helps. The server's message is shown
// as is (it says what to set and where); the buttons open the place to fix it.

import { ErrorCodes } from "./protocol";

export type ErrorAction =
  | "openSettings"
  | "openReadme"
  | "openFolder"
  | "showLog"
  | "setApiKey"
  | "checkConnection";

export interface ErrorReport {
  cancelled: boolean;
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

export function describeAskError(error: unknown): ErrorReport {
  const code = codeOf(error);
  const message = messageOf(error);
  const report = (actions: ErrorReport["actions"]): ErrorReport => {
    const r: ErrorReport = { cancelled: false, message, actions };
    if (code !== undefined) r.code = code;
    return r;
  };
  switch (code) {
    case ErrorCodes.requestCancelled:
      return { cancelled: true, code, message: "Agent request cancelled.", actions: [] };
    case ErrorCodes.modelNotConfigured:
      return report([
        { title: "Set API Key", action: "setApiKey" },
        { title: "Check Connection", action: "checkConnection" },
        { title: "Open Settings", action: "openSettings" },
      ]);
    case ErrorCodes.modelRequestFailed:
      return report([
        { title: "Check Connection", action: "checkConnection" },
        { title: "Open Settings", action: "openSettings" },
        { title: "Show Server Log", action: "showLog" },
      ]);
    case ErrorCodes.noWorkspaceFolder:
      return report([{ title: "Open Folder…", action: "openFolder" }]);
    default:
      return report([{ title: "Show Server Log", action: "showLog" }]);
  }
}
