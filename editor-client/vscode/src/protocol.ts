// The agent-lsp custom protocol as the client sees it (docs/protocol.md is authoritative).
// Types only plus the method names and error codes: no vscode import, so unit tests can use it.

export const Methods = {
  ask: "agent/ask",
  newSession: "agent/newSession",
  listTools: "agent/listTools",
  endSession: "agent/endSession",
  checkpoints: "agent/checkpoints",
  diff: "agent/diff",
  rewind: "agent/rewind",
  sessions: "agent/sessions",
  sessionHistory: "agent/sessionHistory",
  toolOutput: "agent/toolOutput",
  toolActivity: "agent/toolActivity",
  askProgress: "agent/askProgress",
  answerDelta: "agent/answerDelta",
  listModels: "agent/listModels",
  checkConnection: "agent/checkConnection",
  compact: "agent/compact",
  compaction: "agent/compaction",
  grants: "agent/grants",
  revokeGrant: "agent/revokeGrant",
  sandboxStatus: "agent/sandboxStatus",
} as const;

export const ErrorCodes = {
  methodNotFound: -32601,
  invalidParams: -32602,
  requestCancelled: -32800,
  modelNotConfigured: -32001,
  modelRequestFailed: -32002,
  noWorkspaceFolder: -32003,
  sessionBusy: -32004,
  contextWindowExceeded: -32005,
} as const;

/** `capabilities.experimental.agent` of the initialize result: what this server offers. */
export interface AgentCapabilities {
  version?: number;
  requests?: string[];
  notifications?: string[];
  /** Issue 16: `agent/ask` accepts `context` (the active editor, its selection). */
  askContext?: boolean;
}

export interface ToolAnnotations {
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  /** bash: it may use the network, or runs unconfined. */
  openWorldHint?: boolean;
  /** bash: how it is confined (the same object as agent/sandboxStatus's result). */
  sandbox?: SandboxStatus;
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

export interface NewSessionResult {
  sessionId: string;
  /** The folder the session acts in (a URI); every ask of the session names it. */
  workspaceFolder: string;
}

export interface Range {
  start: { line: number; character: number };
  end: { line: number; character: number };
}

/** Editor context of an ask (issue 16). */
export interface AskContext {
  activeDocument?: { uri: string; selection?: Range };
  documents?: string[];
}

export interface AskParams {
  prompt: string;
  sessionId?: string;
  workspaceFolder?: string;
  workDoneToken?: string | number;
  context?: AskContext;
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
  contextTokens?: number;
  contextWindow?: number;
}

export type StopReason = "end_turn" | "max_turns" | "max_tokens" | "empty";

export interface AskResult {
  answer: string;
  sessionId: string;
  /** This ask's checkpoint: agent/diff shows what it changed, agent/rewind undoes it. */
  checkpointId?: string | null;
  stopReason: StopReason | string;
  turns?: number;
  toolCalls: ToolCallRecord[];
  usage?: Usage;
  /** The model that answered, when the server says. */
  model?: string;
}

export interface ToolActivity {
  sessionId: string;
  callId: string;
  name: string;
  arguments: string;
  status: "started" | "waiting" | "completed" | "failed" | string;
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

export type AskPhase = "model" | "writing" | "tools" | "permission" | "compacting" | "done";

export interface AskProgress {
  sessionId: string;
  turn: number;
  phase: AskPhase | string;
  /** For humans; clients show it, never parse it. */
  message?: string;
}

export interface AnswerDelta {
  sessionId: string;
  turn: number;
  delta: string;
  channel: "answer" | "reasoning" | string;
}

/** `agent/compact`'s result: the conversation's estimated size before and after. */
export interface CompactResult {
  tokensBefore: number;
  tokensAfter: number;
  contextWindow: number;
  elidedOutputs?: number;
  summarizedMessages?: number;
}

/** `agent/compaction`: an ask compacted its conversation before a model request. */
export interface CompactionNotice extends CompactResult {
  sessionId: string;
  turn?: number;
  /** "threshold" or "overflow" (the provider said the request did not fit). */
  trigger?: string;
  durationMs?: number;
}

export interface SessionInfo {
  sessionId: string;
  workspaceFolder: string;
  title: string;
  /** Seconds or milliseconds since the epoch, or an ISO date: see toDate(). */
  created: number | string;
  updated: number | string;
  turns: number;
}

export interface SessionsResult {
  sessions: SessionInfo[];
}

/** One entry of `agent/sessionHistory`: a prompt, or one model turn with its tool calls. */
export interface HistoryEntry {
  role: "user" | "assistant" | string;
  content: string;
  toolCalls?: { id: string; name: string; arguments: string; ok: boolean; output: string }[];
}

export interface SessionHistoryResult {
  sessionId: string;
  workspaceFolder: string;
  entries: HistoryEntry[];
}

export interface ToolOutputResult {
  callId: string;
  name: string;
  arguments: string;
  ok: boolean;
  output: string;
  /** The tool itself cut the output (bash keeps its head and tail). */
  truncated: boolean;
}

/** Timestamps from the server: epoch seconds, epoch milliseconds or ISO text. */
export function toDate(value: number | string | undefined): Date | undefined {
  if (value === undefined) return undefined;
  if (typeof value === "number") return new Date(value < 1e12 ? value * 1000 : value);
  const parsed = Date.parse(value);
  return Number.isNaN(parsed) ? undefined : new Date(parsed);
}

export type FileStatus = "added" | "modified" | "deleted";

export interface CheckpointFile {
  path: string;
  status: FileStatus | string;
  /** Lines added/removed; null for binary or very large files. */
  added: number | null;
  removed: number | null;
}

export interface Checkpoint {
  id: string;
  /** The ask's prompt, shortened. */
  prompt: string;
  /** ISO 8601, UTC. */
  time: string;
  state: "running" | "done" | "interrupted" | string;
  /** "fileTools": only write_file/edit_file changes are recorded (no git), not bash's. */
  coverage: "all" | "fileTools" | string;
  notes: string[];
  files: CheckpointFile[];
}

export interface CheckpointsResult {
  checkpoints: Checkpoint[];
}

export interface FileDiff {
  path: string;
  status: FileStatus | string;
  /** Unified diff ("" when binary). */
  diff: string;
  binary: boolean;
  /** Whole texts when includeContent was asked (null: absent, binary or too large). */
  before?: string | null;
  after?: string | null;
}

export interface DiffResult {
  files: FileDiff[];
}

export interface RewindResult {
  restored: string[];
  /** Of restored: put back in an open editor buffer (unsaved, undoable there). */
  inEditor: string[];
  conflicts: { path: string; reason: string }[];
  conversationTruncated: boolean;
  dryRun: boolean;
}

/** One "always" answer of a conversation (agent/grants), bound to one exact call. */
export interface GrantInfo {
  grantId: string;
  toolName: string;
  /** Canonical JSON of the call's arguments. */
  arguments: string;
  title: string;
  decision: "allow" | "reject" | string;
  /** Seconds since the epoch. */
  created: number;
}

export interface GrantsResult {
  grants: GrantInfo[];
}

export interface RevokeGrantResult {
  revoked: boolean;
}

/** `agent/sandboxStatus`'s params: the folder whose sandbox (default: the first). */
export interface SandboxStatusParams {
  workspaceFolder?: string;
}

/** Which layers of the bash sandbox are in force on this system (README "The bash sandbox"). */
export interface SandboxLayers {
  namespaces: boolean;
  networkNamespace: boolean;
  landlock: boolean;
  seccomp: boolean;
  /** How the process limit is kept; null: none. */
  processLimit: "cgroup" | "rlimit" | string | null;
}

export interface SandboxLimits {
  processes: number;
  fileSizeMB: number;
  memoryMB: number;
}

/**
 * `agent/sandboxStatus`'s result, also the bash tool's `sandbox` annotation: the policy the
 * settings ask for and what this system enforces of it.
 */
export interface SandboxStatus {
  mode: "workspace-write" | "read-only" | "off" | string;
  enforced: boolean;
  /** With `enforced: false` while the settings ask for a sandbox: why there is none. */
  reason?: string;
  /** True only for `networkAccess: "all"`. */
  network: boolean;
  /** "allowedDomains": only those hosts, through the call's proxy. */
  networkAccess: "none" | "allowedDomains" | "all" | string;
  allowedDomains: string[];
  writableRoots: string[];
  landlockAbi: number;
  /** agent-lsp's own files no sandboxed command may read. */
  hiddenPaths: string[];
  layers: SandboxLayers;
  limits: SandboxLimits;
  bwrap: string | null;
  /** Why the full form is not in force (bubblewrap's own message); null when it is. */
  fallback: string | null;
  /** For the user: the promises that do not hold in full here. */
  weakened: string[];
}
