// The status bar item's text for the agent's state; the extension owns the StatusBarItem.

import type { SandboxView } from "./sandbox";

export type AgentState =
  | { kind: "idle" }
  | { kind: "starting" }
  | { kind: "working"; turn?: number | undefined; detail?: string | undefined }
  | { kind: "error"; message: string }
  | { kind: "stopped"; message: string };

export interface StatusView {
  text: string;
  tooltip: string;
  isError: boolean;
}

function describeState(state: AgentState): StatusView {
  switch (state.kind) {
    case "idle":
      return { text: "$(hubot) Agent: idle", tooltip: "agent-lsp is ready — click to open the Agent chat", isError: false };
    case "starting":
      return { text: "$(loading~spin) Agent: starting", tooltip: "Starting the agent-lsp server…", isError: false };
    case "working": {
      const turn = state.turn !== undefined ? `: turn ${state.turn}` : "";
      const detail = state.detail ? ` — ${state.detail}` : "";
      return {
        text: `$(sync~spin) Agent: working${turn}`,
        tooltip: `The agent is working${detail} — click to open the Agent chat`,
        isError: false,
      };
    }
    case "error":
      return { text: "$(error) Agent: error", tooltip: `Last request failed: ${state.message}`, isError: true };
    case "stopped":
      return { text: "$(debug-disconnect) Agent: stopped", tooltip: state.message, isError: true };
  }
}

/**
 * The item for `state`, and, while the server runs, what its bash sandbox is: a warning mark
 * when it is weaker than the full sandbox or off, so that is seen without asking.
 */
export function describeStatus(state: AgentState, sandbox?: SandboxView): StatusView {
  const view = describeState(state);
  if (!sandbox || state.kind === "stopped") return view;
  const weaker = sandbox.kind !== "full";
  const summary = sandbox.summary.charAt(0).toUpperCase() + sandbox.summary.slice(1);
  return {
    text: weaker ? `${view.text} $(warning)` : view.text,
    tooltip: `${view.tooltip}\n\n${summary}${weaker ? " (Agent: Sandbox Status says more)" : ""}`,
    isError: view.isError,
  };
}
