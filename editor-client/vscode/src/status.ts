// The status bar item's text for the agent's state; the extension owns the StatusBarItem.

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

export function describeStatus(state: AgentState): StatusView {
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
