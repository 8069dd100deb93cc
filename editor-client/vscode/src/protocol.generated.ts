// Generated from docs/protocol.schema.json by scripts/generate-protocol.mjs; do not edit.
// Regenerate: uv run python docs/protocol_schema.py && node scripts/generate-protocol.mjs

/**
 * Every agent/* method: its params and (for a request) its result.
 */
export interface AgentMethods {
  /**
   * request, clientToServer
   */
  "agent/ask": {
    params: AskParams;
    result: AskResult;
  };
  /**
   * request, clientToServer
   */
  "agent/newSession": {
    params: FolderParams;
    result: NewSessionResult;
  };
  /**
   * request, clientToServer
   */
  "agent/listTools": {
    params: FolderParams;
    result: ListToolsResult;
  };
  /**
   * request, clientToServer
   */
  "agent/endSession": {
    params: SessionParams;
    result: EndSessionResult;
  };
  /**
   * request, clientToServer
   */
  "agent/sessions": {
    params: FolderParams;
    result: SessionsResult;
  };
  /**
   * request, clientToServer
   */
  "agent/sessionHistory": {
    params: SessionParams;
    result: SessionHistoryResult;
  };
  /**
   * request, clientToServer
   */
  "agent/toolOutput": {
    params: ToolOutputParams;
    result: ToolOutputResult;
  };
  /**
   * request, clientToServer
   */
  "agent/checkpoints": {
    params: SessionParams;
    result: CheckpointsResult;
  };
  /**
   * request, clientToServer
   */
  "agent/diff": {
    params: DiffParams;
    result: DiffResult;
  };
  /**
   * request, clientToServer
   */
  "agent/rewind": {
    params: RewindParams;
    result: RewindResult;
  };
  /**
   * request, clientToServer
   */
  "agent/listModels": {
    params: FolderParams;
    result: ListModelsResult;
  };
  /**
   * request, clientToServer
   */
  "agent/checkConnection": {
    params: FolderParams;
    result: CheckConnectionResult;
  };
  /**
   * request, clientToServer
   */
  "agent/grants": {
    params: SessionParams;
    result: GrantsResult;
  };
  /**
   * request, clientToServer
   */
  "agent/revokeGrant": {
    params: RevokeGrantParams;
    result: RevokeGrantResult;
  };
  /**
   * request, clientToServer
   */
  "agent/compact": {
    params: SessionParams;
    result: CompactResult;
  };
  /**
   * request, clientToServer
   */
  "agent/sandboxStatus": {
    params: ProjectParams;
    result: SandboxStatus;
  };
  /**
   * request, clientToServer
   */
  "agent/mcpServers": {
    params: FolderParams;
    result: McpServersResult;
  };
  /**
   * request, clientToServer
   */
  "agent/approveMcpServer": {
    params: ApproveMcpServerParams;
    result: ApproveMcpServerResult;
  };
  /**
   * request, clientToServer
   */
  "agent/controlMcpServer": {
    params: ControlMcpServerParams;
    result: McpServerInfo;
  };
  /**
   * request, clientToServer
   */
  "agent/mcpServerLog": {
    params: ApproveMcpServerParams;
    result: McpServerLogResult;
  };
  /**
   * request, clientToServer
   */
  "agent/instructions": {
    params: ProjectParams;
    result: InstructionsResult;
  };
  /**
   * request, clientToServer
   */
  "agent/listCommands": {
    params: ProjectParams;
    result: CommandsResult;
  };
  /**
   * notification, serverToClient
   */
  "agent/toolActivity": {
    params: ToolActivity;
  };
  /**
   * notification, serverToClient
   */
  "agent/askProgress": {
    params: AskProgress;
  };
  /**
   * notification, serverToClient
   */
  "agent/compaction": {
    params: CompactionNotice;
  };
  /**
   * notification, serverToClient
   */
  "agent/answerDelta": {
    params: AnswerDelta;
  };
  /**
   * request, serverToClient
   */
  "agent/requestPermission": {
    params: RequestPermissionParams;
    result: unknown;
  };
  /**
   * request, serverToClient
   */
  "agent/languageDiagnostics": {
    params: LanguageDiagnosticsParams;
    result: LanguageDiagnosticsResult;
  };
  /**
   * request, serverToClient
   */
  "agent/languageRequest": {
    params: LanguageRequestParams;
    result: LanguageRequestResult;
  };
}
export interface AskParams {
  prompt: string;
  sessionId?: string | null;
  workspaceFolder?: string | null;
  workDoneToken?: number | string | null;
  context?: EditorContext | null;
  disabledTools?: string[] | null;
}
/**
 * What the user is looking at, sent with an ask (``agent/ask`` ``context``).
 */
export interface EditorContext {
  activeDocument?: ActiveDocument | null;
  /**
   * other documents the user points at (URIs)
   */
  documents?: string[] | null;
}
export interface ActiveDocument {
  uri: string;
  /**
   * an empty range: the cursor
   */
  selection?: Range | null;
}
/**
 * LSP's Range (lsprotocol.types.Range).
 */
export interface Range {
  start: Position;
  end: Position;
}
/**
 * LSP's Position (lsprotocol.types.Position).
 */
export interface Position {
  line: number;
  character: number;
}
export interface AskResult {
  answer: string;
  sessionId: string;
  stopReason: string;
  turns: number;
  toolCalls: ToolCallResult[];
  usage: {
    [k: string]: number | undefined;
  };
  /**
   * the model that answered (clients show it under the answer)
   */
  model?: string;
  /**
   * agent/diff shows what it changed, agent/rewind undoes it
   */
  checkpointId?: string | null;
  stopNote?: string | null;
}
export interface ToolCallResult {
  id: string;
  name: string;
  arguments: string;
  ok: boolean;
  /**
   * a preview; agent/toolOutput serves the whole output
   */
  output: string;
  /**
   * without the time its permission request waited for the user
   */
  durationMs: number;
  /**
   * that time (0: nobody was asked)
   */
  waitedMs?: number;
  title?: string;
  durationText?: string;
  subject?: string;
  outputHead?: string;
}
/**
 * Params of requests that act on one open folder (default: the first).
 */
export interface FolderParams {
  workspaceFolder?: string | null;
}
export interface NewSessionResult {
  sessionId: string;
  workspaceFolder: string;
}
export interface ListToolsResult {
  tools: ToolInfo[];
}
/**
 * One tool as ``agent/listTools`` lists it: MCP's ``Tool`` shape, and its ``source``.
 */
export interface ToolInfo {
  name: string;
  description: string;
  /**
   * the JSON Schema of its arguments, as the model sees it
   */
  inputSchema: {
    [k: string]: unknown | undefined;
  };
  annotations: {
    [k: string]: unknown | undefined;
  };
  source: ToolSource;
  title?: string;
}
export interface ToolSource {
  /**
   * "builtin" or "mcp"
   */
  kind: string;
  /**
   * an MCP tool's server
   */
  server?: string;
}
export interface SessionParams {
  sessionId: string;
}
export interface EndSessionResult {
  ended: boolean;
}
export interface SessionsResult {
  sessions: SessionSummary[];
}
export interface SessionSummary {
  sessionId: string;
  workspaceFolder: string;
  /**
   * the first prompt, shortened
   */
  title: string;
  /**
   * seconds since the epoch
   */
  created: number;
  updated: number;
  /**
   * asks answered
   */
  turns: number;
  state?: string;
}
export interface SessionHistoryResult {
  sessionId: string;
  workspaceFolder: string;
  entries: HistoryEntry[];
}
export interface HistoryEntry {
  /**
   * "user" or "assistant"
   */
  role: string;
  content: string;
  toolCalls?: HistoryToolCall[];
}
export interface HistoryToolCall {
  id: string;
  name: string;
  arguments: string;
  ok: boolean;
  /**
   * a preview
   */
  output: string;
  displayName?: string | null;
  /**
   * as agent/toolActivity's title: the call's one line, ready to show
   */
  title?: string;
  /**
   * as agent/toolActivity's subject
   */
  subject?: string;
  /**
   * as agent/toolActivity's outputHead
   */
  outputHead?: string;
}
export interface ToolOutputParams {
  sessionId: string;
  callId: string;
}
export interface ToolOutputResult {
  callId: string;
  name: string;
  arguments: string;
  ok: boolean;
  output: string;
  /**
   * the tool itself cut the output (bash keeps head and tail)
   */
  truncated: boolean;
  /**
   * as agent/toolActivity's title: the call's one line, ready to show
   */
  title?: string;
}
export interface CheckpointsResult {
  checkpoints: CheckpointSummary[];
}
export interface CheckpointSummary {
  id: string;
  /**
   * shortened
   */
  prompt: string;
  /**
   * when the ask started: ISO 8601, UTC
   */
  time: string;
  /**
   * "running" | "done" | "interrupted"
   */
  state: string;
  /**
   * "all" | "fileTools" (no git: bash changes not recorded)
   */
  coverage: string;
  notes: string[];
  files: CheckpointFile[];
}
export interface CheckpointFile {
  /**
   * relative to the session's folder, "/"-separated
   */
  path: string;
  /**
   * "added" | "modified" | "deleted"
   */
  status: string;
  /**
   * lines; None for binary or very large files
   */
  added: number | null;
  removed: number | null;
}
export interface DiffParams {
  sessionId: string;
  checkpointId: string;
  /**
   * whole texts before and after, for a diff view
   */
  includeContent?: boolean;
}
export interface DiffResult {
  files: FileDiff[];
}
export interface FileDiff {
  path: string;
  status: string;
  /**
   * unified; "" when binary
   */
  diff: string;
  binary: boolean;
  /**
   * with includeContent only (None: absent, binary, too large)
   */
  before?: string | null;
  after?: string | null;
}
export interface RewindParams {
  sessionId: string;
  checkpointId: string;
  dryRun?: boolean;
}
export interface RewindResult {
  restored: string[];
  /**
   * of restored: put back in an open editor buffer, unsaved
   */
  inEditor: string[];
  conflicts: RewindConflict[];
  conversationTruncated: boolean;
  dryRun: boolean;
}
export interface RewindConflict {
  path: string;
  reason: string;
}
export interface ListModelsResult {
  /**
   * what GET /models lists, sorted
   */
  models: ModelInfo[];
  /**
   * the model asks use now
   */
  current: string;
}
export interface ModelInfo {
  id: string;
}
export interface CheckConnectionResult {
  ok: boolean;
  checks: ConnectionCheck[];
}
export interface ConnectionCheck {
  /**
   * configuration, models, model, request
   */
  name: string;
  ok: boolean;
  /**
   * plain words: what works, or what to fix
   */
  message: string;
  /**
   * a failed check's fix: unreachable | url | auth | model | other
   */
  kind?: string | null;
  /**
   * a failed check's ErrorAction (setApiKey, ...): clients word it
   */
  action?: string | null;
}
export interface GrantsResult {
  grants: GrantInfo[];
}
/**
 * An always-answer of the user, bound to one exact call.
 */
export interface GrantInfo {
  grantId: string;
  toolName: string;
  /**
   * canonical JSON of the call's arguments
   */
  arguments: string;
  title: string;
  /**
   * "allow" or "reject"
   */
  decision: string;
  created: number;
}
export interface RevokeGrantParams {
  sessionId: string;
  grantId: string;
}
export interface RevokeGrantResult {
  revoked: boolean;
}
/**
 * ``agent/compact``: the history's estimated size before and after, in tokens.
 */
export interface CompactResult {
  tokensBefore: number;
  tokensAfter: number;
  contextWindow: number;
  /**
   * tool outputs replaced by a note (agent/toolOutput still has them)
   */
  elidedOutputs: number;
  /**
   * messages replaced by the model's summary
   */
  summarizedMessages: number;
  summary?: string;
}
/**
 * Params of requests about what an ask would be told, or may do: of a conversation (its
 * folder, and what it has been told or allowed since) or of a folder (default: the first).
 */
export interface ProjectParams {
  sessionId?: string | null;
  workspaceFolder?: string | null;
}
/**
 * ``agent/sandboxStatus``: the bash sandbox of a folder, its layers in force (also
 * bash's ``sandbox`` annotation in ``agent/listTools``).
 */
export interface SandboxStatus {
  /**
   * read-only | workspace-write | off
   */
  mode: string;
  enforced: boolean;
  /**
   * the whole network is allowed
   */
  network: boolean;
  /**
   * all | allowedDomains | none
   */
  networkAccess: string;
  allowedDomains: string[];
  writableRoots: string[];
  landlockAbi: number;
  /**
   * agent-lsp's own files no sandboxed command may read
   */
  hiddenPaths: string[];
  layers: SandboxLayers;
  limits: SandboxLimits;
  /**
   * the bubblewrap program, when namespaces are used
   */
  bwrap: string | null;
  /**
   * why the full form is not in force
   */
  fallback: string | null;
  /**
   * the promises that do not hold in full on this system
   */
  weakened: string[];
  /**
   * why there is no sandbox at all
   */
  reason?: string;
  grants?: SandboxGrant[];
}
/**
 * The confinement layers in force for a bash call.
 */
export interface SandboxLayers {
  namespaces: boolean;
  networkNamespace: boolean;
  landlock: boolean;
  seccomp: boolean;
  /**
   * "cgroup", "rlimit", or none
   */
  processLimit: string | null;
  /**
   * "cgroup", or none
   */
  callMemoryLimit: string | null;
}
export interface SandboxLimits {
  processes: number;
  fileSizeMB: number;
  memoryMB: number;
  callMemoryMB: number;
}
export interface SandboxGrant {
  grantId: string;
  /**
   * as agent/grants words it
   */
  title: string;
}
export interface McpServersResult {
  servers: McpServerInfo[];
}
/**
 * One MCP server of a folder, as ``agent/mcpServers`` lists it.
 */
export interface McpServerInfo {
  name: string;
  /**
   * "user" (the configuration file), "editor" (mcpServers), "workspace"
   */
  origin: string;
  /**
   * "stdio" | "http"; "" when the definition names neither
   */
  transport: string;
  /**
   * the command line or URL as written (variables not replaced)
   */
  target: string;
  state: string;
  /**
   * the registry names of its tools (while ready)
   */
  tools: string[];
  /**
   * why it failed (a stdio server's stderr tail included)
   */
  error?: string | null;
  /**
   * trust = true: its tools run without asking
   */
  trusted?: boolean;
  /**
   * problems of its definition
   */
  warnings?: string[];
}
export interface ApproveMcpServerParams {
  name: string;
  workspaceFolder?: string | null;
}
/**
 * ``approved``: the user allowed it (it is starting); else ``state`` says where it is.
 */
export interface ApproveMcpServerResult {
  approved: boolean;
  state: string;
}
/**
 * ``agent/controlMcpServer``: the user starts, stops or restarts one server.
 */
export interface ControlMcpServerParams {
  name: string;
  /**
   * one of MCP_SERVER_ACTIONS
   */
  action: string;
  workspaceFolder?: string | null;
}
/**
 * ``agent/mcpServerLog``: one server's own output: its state changes (timed), then
 * the last lines of a stdio server's stderr (escape it to show it).
 */
export interface McpServerLogResult {
  name: string;
  text: string;
}
export interface InstructionsResult {
  instructions: InstructionInfo[];
  skills: SkillInfo[];
  /**
   * a file refused (outside the workspace), cut, a malformed skill
   */
  warnings: string[];
}
/**
 * One instruction file the model is given (``agent/instructions``).
 */
export interface InstructionInfo {
  /**
   * absolute
   */
  path: string;
  uri: string;
  /**
   * as the prompt's heading names it: "AGENTS.md", "sub/AGENTS.md", "~/…"
   */
  name: string;
  /**
   * "user" (agent-lsp's config folder), "workspace" (its root), "nested"
   */
  source: string;
  /**
   * the file's size
   */
  bytes: number;
  /**
   * only its first part is given (instructionsMaxBytes)
   */
  cut: boolean;
}
/**
 * One skill the system prompt lists (its SKILL.md is read by the model when it applies).
 */
export interface SkillInfo {
  name: string;
  description: string;
  /**
   * the SKILL.md, absolute
   */
  path: string;
  /**
   * "user" | "workspace"
   */
  source: string;
}
export interface CommandsResult {
  commands: CommandInfo[];
}
/**
 * One ``/NAME`` a prompt may start with (``agent/listCommands``).
 */
export interface CommandInfo {
  name: string;
  description: string;
  /**
   * "builtin" (a client action), "user", "workspace" (a prompt file)
   */
  source: string;
  argumentHint?: string | null;
  /**
   * a prompt file's path
   */
  path?: string | null;
}
/**
 * ``agent/toolActivity``: a tool call's state, sent as it changes (built by
 * server/agent/activity.py tool_activity). ``title``, ``output_head`` and
 * ``duration_text`` are the words to show, escaped and on one line: clients show them as
 * they are; the other fields are data (escape them to show them).
 */
export interface ToolActivity {
  sessionId: string;
  callId: string;
  /**
   * the model's: possibly a tool that does not exist (escape it to show it)
   */
  name: string;
  /**
   * the raw JSON text the model sent (escape it to show it)
   */
  arguments: string;
  turn: number;
  /**
   * waiting (for the user's permission), started, completed or failed
   */
  status: string;
  /**
   * completed/failed: the result's first 2,000 characters
   */
  output?: string | null;
  durationMs?: number | null;
  /**
   * completed/failed, after a permission request
   */
  waitedMs?: number | null;
  summaryKey?: string | null;
  displayName?: string | null;
  title?: string;
  /**
   * completed/failed: the output's first line, cut at 200
   */
  outputHead?: string | null;
  durationText?: string | null;
  subject?: string;
}
/**
 * ``agent/askProgress``: what an ask is doing, for clients to show (never parse
 * the human ``message``). ``phase``: model, writing, tools, permission, compacting,
 * starting (MCP servers the ask waits for, then those it goes without: ``servers``), done.
 */
export interface AskProgress {
  sessionId: string;
  turn: number;
  phase: string;
  message: string;
  callId?: string | null;
  progress?: number | null;
  total?: number | null;
  /**
   * phase starting: the servers waited for / missing
   */
  servers?: string[] | null;
  text?: string;
}
/**
 * ``agent/compaction``: an ask compacted its conversation before a model request.
 * ``trigger``: ``threshold`` (it would have passed compactThreshold of the window) or
 * ``overflow`` (the provider answered that it does not fit).
 */
export interface CompactionNotice {
  sessionId: string;
  turn: number;
  trigger: string;
  tokensBefore: number;
  tokensAfter: number;
  contextWindow: number;
  elidedOutputs: number;
  summarizedMessages: number;
  durationMs: number;
  /**
   * ready to show, as agent/compact's summary
   */
  summary?: string;
}
/**
 * ``agent/answerDelta``: the next piece of a turn's text, in order, as it streams.
 *
 * Coalesced (a few dozen a second at most; the first one as soon as the model
 * starts). The ``answer`` deltas of the ask's last turn add up to its ``answer``.
 */
export interface AnswerDelta {
  sessionId: string;
  turn: number;
  delta: string;
  /**
   * ANSWER_CHANNEL or REASONING_CHANNEL
   */
  channel: string;
}
/**
 * ``agent/requestPermission`` (server -> client). The result is ACP's
 * ``{"outcome": {"outcome": "selected", "optionId": ...}}`` or
 * ``{"outcome": {"outcome": "cancelled"}}``.
 */
export interface RequestPermissionParams {
  sessionId: string;
  callId: string;
  toolName: string;
  arguments: {
    [k: string]: unknown | undefined;
  };
  title: string;
  reason: string;
  options: PermissionOption[];
  alwaysScope?: string | null;
}
export interface PermissionOption {
  optionId: string;
  name: string;
  /**
   * allow_once | allow_always | reject_once | reject_always (ACP's kinds)
   */
  kind: string;
}
/**
 * ``agent/languageDiagnostics`` (server -> client): the problems the editor's own
 * language servers report for ``uris`` (a file not open is loaded first, not shown).
 * ``wait_ms`` > 0: first wait, at most that long, for the editor's diagnostics of each
 * uri to change after the request arrived; 0: answer at once with what is known.
 */
export interface LanguageDiagnosticsParams {
  uris: string[];
  waitMs: number;
}
export interface LanguageDiagnosticsResult {
  files: LanguageDiagnosticsFile[];
}
export interface LanguageDiagnosticsFile {
  uri: string;
  diagnostics: {
    [k: string]: unknown | undefined;
  }[];
  answered: boolean;
}
/**
 * ``agent/languageRequest`` (server -> client): run one LSP request (``method``, one
 * of ``LANGUAGE_REQUEST_METHODS``, with LSP's ``params``, positions in the client's
 * encoding) against the editor's own providers.
 */
export interface LanguageRequestParams {
  method: string;
  params: {
    [k: string]: unknown | undefined;
  };
}
export interface LanguageRequestResult {
  result?: {
    [k: string]: unknown | undefined;
  };
}
/**
 * The `agentLsp` settings: initializationOptions and workspace/didChangeConfiguration (docs/protocol.md, Settings). Every key is optional; "scope": "machine" marks those a client takes from the user's own settings only, never a workspace's. Generated from server/settings/settings.py.
 */
export interface Settings {
  /**
   * Model name sent to the endpoint.
   */
  model?: string;
  /**
   * OpenAI-compatible endpoint.
   */
  baseUrl?: string;
  /**
   * Seconds for one model request, retries included.
   */
  requestTimeout?: number | null;
  /**
   * Retries of a failed model request.
   */
  maxRetries?: number | null;
  /**
   * Model requests per ask.
   */
  maxTurns?: number | null;
  /**
   * The model's context window in tokens.
   */
  contextWindow?: number | null;
  /**
   * Share of the window past which the history is compacted.
   */
  compactThreshold?: number | null;
  /**
   * The tools the agent has (null: all).
   */
  enabledTools?: string[] | null;
  /**
   * Default timeout of a bash call (s).
   */
  bashTimeout?: number | null;
  /**
   * Edits to open documents go through workspace/applyEdit.
   */
  editThroughEditor?: boolean;
  /**
   * Those edits are marked needsConfirmation.
   */
  confirmEdits?: boolean;
  /**
   * How long a file tool waits for a language server's problems of what it wrote (ms).
   */
  diagnosticsWait?: number | null;
  /**
   * Replaces the system prompt; {workspace} is the folder's path.
   */
  systemPrompt?: string;
  /**
   * Files whose text instructs the model: the first found at a folder's root.
   */
  instructionFiles?: string[];
  /**
   * At most this much of the instruction files reaches the model (bytes).
   */
  instructionsMaxBytes?: number | null;
  /**
   * MCP servers by name, in the shape of .vscode/mcp.json's servers.
   */
  mcpServers?: {} | null;
  /**
   * How bash is confined.
   */
  sandbox?: "workspace-write" | "read-only" | "off";
  /**
   * Extra folders sandboxed commands may write.
   */
  writableRoots?: string[];
  /**
   * Sandboxed commands may use the whole network.
   */
  network?: boolean;
  /**
   * Hosts sandboxed commands may reach by proxy.
   */
  allowedDomains?: string[];
  /**
   * Limit of a sandboxed call: processes.
   */
  maxProcesses?: number | null;
  /**
   * Limit of a sandboxed call: file size mb.
   */
  maxFileSizeMB?: number | null;
  /**
   * Limit of a sandboxed call: memory mb.
   */
  maxMemoryMB?: number | null;
  /**
   * Limit of a sandboxed call: call memory mb.
   */
  maxCallMemoryMB?: number | null;
  /**
   * When calls need the user's permission.
   */
  approval?: "on-request" | "always" | "never";
  /**
   * Bash command prefixes that never ask.
   */
  allowedCommands?: string[];
  /**
   * Seconds a permission request waits before it counts as rejected.
   */
  permissionTimeout?: number | null;
}

/** Every agent/* method's name. */
export const Methods = {
  ask: "agent/ask",
  newSession: "agent/newSession",
  listTools: "agent/listTools",
  endSession: "agent/endSession",
  sessions: "agent/sessions",
  sessionHistory: "agent/sessionHistory",
  toolOutput: "agent/toolOutput",
  checkpoints: "agent/checkpoints",
  diff: "agent/diff",
  rewind: "agent/rewind",
  listModels: "agent/listModels",
  checkConnection: "agent/checkConnection",
  grants: "agent/grants",
  revokeGrant: "agent/revokeGrant",
  compact: "agent/compact",
  sandboxStatus: "agent/sandboxStatus",
  mcpServers: "agent/mcpServers",
  approveMcpServer: "agent/approveMcpServer",
  controlMcpServer: "agent/controlMcpServer",
  mcpServerLog: "agent/mcpServerLog",
  instructions: "agent/instructions",
  listCommands: "agent/listCommands",
  toolActivity: "agent/toolActivity",
  askProgress: "agent/askProgress",
  compaction: "agent/compaction",
  answerDelta: "agent/answerDelta",
  requestPermission: "agent/requestPermission",
  languageDiagnostics: "agent/languageDiagnostics",
  languageRequest: "agent/languageRequest",
} as const satisfies Record<string, keyof AgentMethods>;

/** The JSON-RPC error codes the server answers with. */
export const ErrorCodes = {
  methodNotFound: -32601,
  invalidParams: -32602,
  internalError: -32603,
  modelNotConfigured: -32001,
  modelRequestFailed: -32002,
  noWorkspaceFolder: -32003,
  sessionBusy: -32004,
  contextWindowExceeded: -32005,
  requestCancelled: -32800,
} as const;

/** What an error's data.action asks the user to do (the client words it in its menus). */
export const ErrorActions = {
  setApiKey: "setApiKey",
  setBaseUrl: "setBaseUrl",
  setModel: "setModel",
} as const;
export type ErrorActionName = (typeof ErrorActions)[keyof typeof ErrorActions];
