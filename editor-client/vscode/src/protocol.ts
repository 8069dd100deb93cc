// The agent-lsp custom protocol as the client sees it (docs/protocol.md is authoritative).
// Types only plus the method names and error codes: no vscode import, so unit tests can use it.

export const Methods = {
  ask: "agent/ask",
  listTools: "agent/listTools",
  endSession: "agent/endSession",
  toolActivity: "agent/toolActivity",
  listModels: "agent/listModels",
  checkConnection: "agent/checkConnection",
} as const;

export const ErrorCodes = {
  invalidParams: -32602,
  requestCancelled: -32800,
  modelNotConfigured: -32001,
  modelRequestFailed: -32002,
  noWorkspaceFolder: -32003,
  sessionBusy: -32004,
} as const;

export interface ToolAnnotations {
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
}

export interface ToolInfo {
  name: string;
  title?: string;
  description: string;
  inputSchema?: unknown;
  annotations?: ToolAnnotations;
}

export interface ListToolsResult {
  tools: ToolInfo[];
}

export interface AskParams {
  prompt: string;
  sessionId?: string;
  workspaceFolder?: string;
  workDoneToken?: string | number;
}

export interface ToolCallRecord {
  id: string;
  name: string;
  /** JSON text exactly as the model produced it (may be invalid JSON). */
  arguments: string;
  ok: boolean;
  /** A preview of the tool's output. */
  output?: string;
  durationMs?: number;
}

export interface Usage {
  prompt_tokens?: number;
  completion_tokens?: number;
  total_tokens?: number;
}

export interface AskResult {
  answer: string;
  sessionId: string;
  stopReason: "end_turn" | "max_turns" | string;
  toolCalls: ToolCallRecord[];
  usage?: Usage;
}

export interface ToolActivity {
  sessionId: string;
  callId: string;
  name: string;
  arguments: string;
  status: "started" | "completed" | "failed" | string;
  output?: string;
  durationMs?: number;
  turn?: number;
}

export interface ListModelsResult {
  models: { id: string }[];
  /** The model asks use now. */
  current: string;
}

export interface ConnectionCheck {
  /** "configuration", "models", "model" or "request". */
  name: string;
  ok: boolean;
  message: string;
}

export interface CheckConnectionResult {
  ok: boolean;
  checks: ConnectionCheck[];
}
