-- Generated from server/protocol/ by docs/protocol_schema.py; do not edit.
-- Regenerate: uv run python docs/protocol_schema.py
local M = {}

M.methods = {
  ask = 'agent/ask',
  new_session = 'agent/newSession',
  list_tools = 'agent/listTools',
  end_session = 'agent/endSession',
  sessions = 'agent/sessions',
  session_history = 'agent/sessionHistory',
  tool_output = 'agent/toolOutput',
  checkpoints = 'agent/checkpoints',
  diff = 'agent/diff',
  rewind = 'agent/rewind',
  list_models = 'agent/listModels',
  check_connection = 'agent/checkConnection',
  grants = 'agent/grants',
  revoke_grant = 'agent/revokeGrant',
  compact = 'agent/compact',
  sandbox_status = 'agent/sandboxStatus',
  mcp_servers = 'agent/mcpServers',
  approve_mcp_server = 'agent/approveMcpServer',
  control_mcp_server = 'agent/controlMcpServer',
  mcp_server_log = 'agent/mcpServerLog',
  instructions = 'agent/instructions',
  list_commands = 'agent/listCommands',
  tool_activity = 'agent/toolActivity',
  ask_progress = 'agent/askProgress',
  compaction = 'agent/compaction',
  answer_delta = 'agent/answerDelta',
  request_permission = 'agent/requestPermission',
  language_diagnostics = 'agent/languageDiagnostics',
  language_request = 'agent/languageRequest',
}

M.error_codes = {
  method_not_found = -32601,
  invalid_params = -32602,
  internal_error = -32603,
  model_not_configured = -32001,
  model_request_failed = -32002,
  no_workspace_folder = -32003,
  session_busy = -32004,
  context_window_exceeded = -32005,
  request_cancelled = -32800,
}

-- An error's data.action: what the user does to fix it.
M.actions = {
  set_api_key = 'setApiKey',
  set_base_url = 'setBaseUrl',
  set_model = 'setModel',
}

return M
