// The agent-lsp custom protocol as the client sees it (docs/protocol.md is authoritative).
// Types only plus the method names, error codes and actions (generated): no vscode import, so
// unit tests can use it.
//
// The types the server declares (server/protocol/) come from protocol.generated.ts,
// generated from docs/protocol.schema.json; this file gives them the names the extension
// uses. What is still written by hand: types narrower than the server's (the tools with their
// sources and annotations, tool activity and the sandbox's status, checked below), the
// initialize capabilities, and the types richer
// than the server's (AskResult: its usage keys and stop reasons) or more lenient (fields the
// extension does without: ToolCallRecord, CompactResult, CompactionNotice), each checked
// below against the generated one so that a changed server type fails `npm run typecheck`.

import type * as Wire from "./protocol.generated";

export type { AgentMethods } from "./protocol.generated";

// The method names, error codes and error actions are generated from the server's declaration.
export { ErrorActions, ErrorCodes, Methods } from "./protocol.generated";
export type { ErrorActionName } from "./protocol.generated";

// -- the server's types under the extension's names ------------------------------------

export type Range = Wire.Range;
/** Editor context of an ask. */
export type AskContext = Wire.EditorContext;
export type AskParams = Wire.AskParams;
export type NewSessionResult = Wire.NewSessionResult;
export type ListModelsResult = Wire.ListModelsResult;
export type ConnectionCheck = Wire.ConnectionCheck;
export type CheckConnectionResult = Wire.CheckConnectionResult;
export type AskProgress = Wire.AskProgress;
export type AnswerDelta = Wire.AnswerDelta;
export type SessionInfo = Wire.SessionSummary;
export type SessionsResult = Wire.SessionsResult;
export type HistoryEntry = Wire.HistoryEntry;
export type SessionHistoryResult = Wire.SessionHistoryResult;
export type ToolOutputResult = Wire.ToolOutputResult;
export type CheckpointFile = Wire.CheckpointFile;
export type Checkpoint = Wire.CheckpointSummary;
export type CheckpointsResult = Wire.CheckpointsResult;
export type FileDiff = Wire.FileDiff;
export type DiffResult = Wire.DiffResult;
export type RewindResult = Wire.RewindResult;
export type GrantInfo = Wire.GrantInfo;
export type GrantsResult = Wire.GrantsResult;
export type RevokeGrantResult = Wire.RevokeGrantResult;
/** `agent/sandboxStatus`'s params: the folder whose sandbox (default: the first). */
export type SandboxStatusParams = Wire.ProjectParams;
/** `agent/mcpServers`' params: the folder whose MCP servers (default: the first). */
export type McpServersParams = Wire.FolderParams;
export type McpServersResult = Wire.McpServersResult;
export type McpServerInfo = Wire.McpServerInfo;
export type ApproveMcpServerParams = Wire.ApproveMcpServerParams;
export type ApproveMcpServerResult = Wire.ApproveMcpServerResult;
export type McpServerLogResult = Wire.McpServerLogResult;
/** `agent/instructions` and `agent/listCommands` params: a conversation's, else a folder's. */
export type ProjectParams = Wire.ProjectParams;
export type InstructionsResult = Wire.InstructionsResult;
export type CommandsResult = Wire.CommandsResult;

/** Values of string fields the server declares as plain strings (server/protocol/'s comments). */
export type AskPhase = "model" | "writing" | "tools" | "permission" | "compacting" | "done";
export type FileStatus = "added" | "modified" | "deleted";
/** `McpServerInfo.state` (docs/protocol.md, agent/mcpServers). */
export type McpState = "starting" | "ready" | "failed" | "disabled" | "stopped" | "awaiting-approval" | "rejected";
/** `McpServerInfo.origin`: the user file, the `mcpServers` setting, the folder's own files. */
export type McpOrigin = "user" | "editor" | "workspace";

// -- written by hand -------------------------------------------------------------------

/** `capabilities.experimental.agent` of the initialize result: what this server offers. */
export interface AgentCapabilities {
  version?: number;
  requests?: string[];
  notifications?: string[];
  /** `agent/ask` accepts `context` (the active editor, its selection). */
  askContext?: boolean;
  /** The model asks use as configured at initialize (absent: none configured). */
  model?: string;
}

export interface ToolAnnotations {
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  /** bash: it may use the network, or runs unconfined. */
  openWorldHint?: boolean;
  /** bash: how it is confined (the same object as agent/sandboxStatus's result). */
  sandbox?: SandboxStatus;
}

/** Where a tool comes from: the server's own, or an MCP server's (by its name). */
export type ToolSource = { kind: "builtin" } | { kind: "mcp"; server: string };

export interface ToolInfo {
  name: string;
  title?: string;
  description: string;
  inputSchema?: unknown;
  annotations?: ToolAnnotations;
  /** Absent from a server older than MCP support: a built-in tool. */
  source?: ToolSource;
}

export interface ListToolsResult {
  tools: ToolInfo[];
}

export interface Usage {
  prompt_tokens?: number;
  completion_tokens?: number;
  total_tokens?: number;
  contextTokens?: number;
  contextWindow?: number;
}

export type StopReason = "end_turn" | "max_turns" | "max_tokens" | "empty";

export interface ToolCallRecord {
  id: string;
  name: string;
  /** JSON text exactly as the model produced it (may be invalid JSON). */
  arguments: string;
  ok: boolean;
  /** A preview of the tool's output. */
  output?: string;
  /** Without the time its permission request waited for the user (waitedMs). */
  durationMs?: number;
  waitedMs?: number;
  /** The server's words, as agent/toolActivity's title, subject, durationText and outputHead. */
  title?: string;
  subject?: string;
  durationText?: string;
  outputHead?: string;
}

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
  /** What to tell the user when the ask ended other than with an answer, as the server words it. */
  stopNote?: string | null;
}

export interface ToolActivity {
  sessionId: string;
  callId: string;
  name: string;
  arguments: string;
  status: "started" | "waiting" | "completed" | "failed" | string;
  output?: string;
  /** Without the time its permission request waited for the user (waitedMs). */
  durationMs?: number;
  /** How long the call waited for the user's answer to its permission request. */
  waitedMs?: number;
  turn?: number;
  /** The argument a one-line summary leads with (the tool's definition says; absent for an unknown tool). */
  summaryKey?: string;
  /** How to name the call when the tool's name reads badly ("get_current_time — time (MCP server)"). */
  displayName?: string;
  /** The server's words, ready to show (server/agent/activity.py): the call's one line... */
  title?: string;
  /** ...its duration ("12 ms; 8.0 s waiting for permission")... */
  durationText?: string | null;
  /** ...its output's first line... */
  outputHead?: string | null;
  /** ...and what the call acts on, its title without the tool ("pytest -q"). */
  subject?: string;
}

/** `agent/compact`'s result: the conversation's estimated size before and after. */
export interface CompactResult {
  tokensBefore: number;
  tokensAfter: number;
  contextWindow: number;
  elidedOutputs?: number;
  summarizedMessages?: number;
  /** What it did, as the server words it: "compacted: 30,512 → 9,880 tokens of 32,000 (...)". */
  summary?: string;
}

/** `agent/compaction`: an ask compacted its conversation before a model request. */
export interface CompactionNotice extends CompactResult {
  sessionId: string;
  turn?: number;
  /** "threshold" or "overflow" (the provider said the request did not fit). */
  trigger?: string;
  durationMs?: number;
}

/** Timestamps from the server: epoch seconds, epoch milliseconds or ISO text. */
export function toDate(value: number | string | undefined): Date | undefined {
  if (value === undefined) return undefined;
  if (typeof value === "number") return new Date(value < 1e12 ? value * 1000 : value);
  const parsed = Date.parse(value);
  return Number.isNaN(parsed) ? undefined : new Date(parsed);
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
  /** Asked with a session: its "always" answers that let bash leave the sandbox. */
  grants?: { grantId: string; title: string }[];
}

// What the server sends must fit each hand-written type the extension reads it as: a field
// the server drops or retypes fails here, at `npm run typecheck`.
type Fits<Sent extends Read, Read> = [Sent, Read];
// Optional fields the server builds as a dict it leaves out, never sends as null.
type LeftOut<T> = { [K in keyof T]: Exclude<T[K], null> };
export type WireChecks = [
  Fits<LeftOut<Wire.ToolActivity>, ToolActivity>,
  Fits<Wire.AskResult, AskResult>,
  Fits<Wire.ToolCallResult, ToolCallRecord>,
  Fits<Wire.CompactResult, CompactResult>,
  Fits<Wire.CompactionNotice, CompactionNotice>,
  Fits<Wire.SandboxStatus, SandboxStatus>,
];
