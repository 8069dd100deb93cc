;;; agent-lsp-protocol.el --- The agent protocol's names  -*- lexical-binding: t; -*-

;; Generated from server/protocol/ by docs/protocol_schema.py; do not edit.
;; Regenerate: uv run python docs/protocol_schema.py

;;; Code:

(defconst agent-lsp-method-ask :agent/ask
  "The method agent/ask, as the keyword jsonrpc sends.")
(defconst agent-lsp-method-new-session :agent/newSession
  "The method agent/newSession, as the keyword jsonrpc sends.")
(defconst agent-lsp-method-list-tools :agent/listTools
  "The method agent/listTools, as the keyword jsonrpc sends.")
(defconst agent-lsp-method-end-session :agent/endSession
  "The method agent/endSession, as the keyword jsonrpc sends.")
(defconst agent-lsp-method-sessions :agent/sessions
  "The method agent/sessions, as the keyword jsonrpc sends.")
(defconst agent-lsp-method-session-history :agent/sessionHistory
  "The method agent/sessionHistory, as the keyword jsonrpc sends.")
(defconst agent-lsp-method-tool-output :agent/toolOutput
  "The method agent/toolOutput, as the keyword jsonrpc sends.")
(defconst agent-lsp-method-checkpoints :agent/checkpoints
  "The method agent/checkpoints, as the keyword jsonrpc sends.")
(defconst agent-lsp-method-diff :agent/diff
  "The method agent/diff, as the keyword jsonrpc sends.")
(defconst agent-lsp-method-rewind :agent/rewind
  "The method agent/rewind, as the keyword jsonrpc sends.")
(defconst agent-lsp-method-list-models :agent/listModels
  "The method agent/listModels, as the keyword jsonrpc sends.")
(defconst agent-lsp-method-check-connection :agent/checkConnection
  "The method agent/checkConnection, as the keyword jsonrpc sends.")
(defconst agent-lsp-method-grants :agent/grants
  "The method agent/grants, as the keyword jsonrpc sends.")
(defconst agent-lsp-method-revoke-grant :agent/revokeGrant
  "The method agent/revokeGrant, as the keyword jsonrpc sends.")
(defconst agent-lsp-method-compact :agent/compact
  "The method agent/compact, as the keyword jsonrpc sends.")
(defconst agent-lsp-method-sandbox-status :agent/sandboxStatus
  "The method agent/sandboxStatus, as the keyword jsonrpc sends.")
(defconst agent-lsp-method-mcp-servers :agent/mcpServers
  "The method agent/mcpServers, as the keyword jsonrpc sends.")
(defconst agent-lsp-method-approve-mcp-server :agent/approveMcpServer
  "The method agent/approveMcpServer, as the keyword jsonrpc sends.")
(defconst agent-lsp-method-control-mcp-server :agent/controlMcpServer
  "The method agent/controlMcpServer, as the keyword jsonrpc sends.")
(defconst agent-lsp-method-mcp-server-log :agent/mcpServerLog
  "The method agent/mcpServerLog, as the keyword jsonrpc sends.")
(defconst agent-lsp-method-instructions :agent/instructions
  "The method agent/instructions, as the keyword jsonrpc sends.")
(defconst agent-lsp-method-list-commands :agent/listCommands
  "The method agent/listCommands, as the keyword jsonrpc sends.")
(defconst agent-lsp-method-tool-activity :agent/toolActivity
  "The method agent/toolActivity, as the keyword jsonrpc sends.")
(defconst agent-lsp-method-ask-progress :agent/askProgress
  "The method agent/askProgress, as the keyword jsonrpc sends.")
(defconst agent-lsp-method-compaction :agent/compaction
  "The method agent/compaction, as the keyword jsonrpc sends.")
(defconst agent-lsp-method-answer-delta :agent/answerDelta
  "The method agent/answerDelta, as the keyword jsonrpc sends.")
(defconst agent-lsp-method-request-permission :agent/requestPermission
  "The method agent/requestPermission, as the keyword jsonrpc sends.")
(defconst agent-lsp-method-language-diagnostics :agent/languageDiagnostics
  "The method agent/languageDiagnostics, as the keyword jsonrpc sends.")
(defconst agent-lsp-method-language-request :agent/languageRequest
  "The method agent/languageRequest, as the keyword jsonrpc sends.")

(defun agent-lsp-method-symbol (method)
  "The symbol Eglot dispatches METHOD (a keyword above) to, as in `eql'."
  (intern (substring (symbol-name method) 1)))

(defconst agent-lsp-error-method-not-found -32601
  "The JSON-RPC error code METHOD_NOT_FOUND.")
(defconst agent-lsp-error-invalid-params -32602
  "The JSON-RPC error code INVALID_PARAMS.")
(defconst agent-lsp-error-internal-error -32603
  "The JSON-RPC error code INTERNAL_ERROR.")
(defconst agent-lsp-error-model-not-configured -32001
  "The JSON-RPC error code MODEL_NOT_CONFIGURED.")
(defconst agent-lsp-error-model-request-failed -32002
  "The JSON-RPC error code MODEL_REQUEST_FAILED.")
(defconst agent-lsp-error-no-workspace-folder -32003
  "The JSON-RPC error code NO_WORKSPACE_FOLDER.")
(defconst agent-lsp-error-session-busy -32004
  "The JSON-RPC error code SESSION_BUSY.")
(defconst agent-lsp-error-context-window-exceeded -32005
  "The JSON-RPC error code CONTEXT_WINDOW_EXCEEDED.")
(defconst agent-lsp-error-request-cancelled -32800
  "The JSON-RPC error code REQUEST_CANCELLED.")

(defconst agent-lsp-action-set-api-key "setApiKey"
  "An error's data.action: setApiKey.")
(defconst agent-lsp-action-set-base-url "setBaseUrl"
  "An error's data.action: setBaseUrl.")
(defconst agent-lsp-action-set-model "setModel"
  "An error's data.action: setModel.")

(provide 'agent-lsp-protocol)
;;; agent-lsp-protocol.el ends here
