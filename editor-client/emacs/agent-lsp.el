;;; agent-lsp.el --- Agent chat over the agent-lsp language server  -*- lexical-binding: t; -*-

;; Version: 0.1.0
;; Package-Requires: ((emacs "28.1") (eglot "1.9"))
;; Keywords: tools, convenience, languages

;;; Commentary:

;; A thin client for the agent-lsp language server: the server runs the coding
;; agent (model, tools, workspace sandbox); this package starts it through eglot
;; for the current project, sends `agent/ask', and shows
;;
;; - the conversation in the `*agent-lsp*' buffer (Markdown; asks continue one
;;   server session until `agent-lsp-new-conversation'), the answer appearing as
;;   the model writes it (`agent/answerDelta'), its reasoning, if the model sends
;;   any, quoted and dimmed above it,
;; - one line per tool call start and end in `*agent-lsp-trace*', fed by the
;;   server's `agent/toolActivity' notifications,
;; - progress ("turn 2: read_file src/app.py") in the mode line of `*agent-lsp*'.
;;
;; With an active region, `agent-lsp-ask' sends it along (the file and the
;; selected text go to the model with the prompt).  In its prompt, TAB
;; completes a /command: the built-ins (/compact, /new, /checkpoints, /undo)
;; run their command, the folder's and the user's prompt files are expanded by
;; the server.
;;
;; Commands: `agent-lsp-ask', `agent-lsp-cancel', `agent-lsp-new-conversation',
;; `agent-lsp-compact', `agent-lsp-list-tools', `agent-lsp-trace', `agent-lsp-show',
;; `agent-lsp-check-connection', `agent-lsp-select-model',
;; `agent-lsp-checkpoints', `agent-lsp-diff', `agent-lsp-rewind' (see what each
;; ask changed and undo it), `agent-lsp-permissions' (answer a waiting
;; permission request), `agent-lsp-grants' (revoke "always" answers),
;; `agent-lsp-sandbox' (what confines the agent's commands here, and what is
;; weaker), `agent-lsp-mcp-servers' (the folder's MCP servers; approve a
;; folder's own), `agent-lsp-instructions' (the instruction files and skills
;; the model is given), `agent-lsp-compose' (a prompt of several lines),
;; `agent-lsp-history' (reopen a past conversation),
;; `agent-lsp-apply-settings', `agent-lsp-shutdown';
;; all of them (but the last two) are on `agent-lsp-command-map'.
;;
;; The server reads the API key, endpoint and model from the user configuration
;; file ~/.config/agent-lsp/config.toml (`agent-lsp config set-key' writes it),
;; never from Emacs.
;;
;; Works with Emacs 28 and Debian's elpa-eglot (eglot 1.9), and with Emacs 29+
;; where eglot is built in.  The protocol is in docs/protocol.md.
;;
;; The parts, beside this file: agent-lsp-core (settings, the eglot server
;; class, the project's server, requests), agent-lsp-trace (trace lines,
;; escaping), agent-lsp-transcript (the conversation and trace buffers),
;; agent-lsp-permissions, agent-lsp-commands (the /commands of a prompt),
;; agent-lsp-ask, agent-lsp-model, agent-lsp-checkpoints, agent-lsp-sandbox,
;; agent-lsp-mcp, agent-lsp-instructions, agent-lsp-compose (the compose
;; buffer), agent-lsp-history (a call's output, past conversations).  This
;; file loads them all and holds the command map.

;;; Code:

(defgroup agent-lsp nil
  "Coding agent over the agent-lsp language server."
  :group 'tools
  :prefix "agent-lsp-")

(require 'agent-lsp-core)
(require 'agent-lsp-trace)
(require 'agent-lsp-transcript)
(require 'agent-lsp-permissions)
(require 'agent-lsp-commands)
(require 'agent-lsp-ask)
(require 'agent-lsp-model)
(require 'agent-lsp-checkpoints)
(require 'agent-lsp-sandbox)
(require 'agent-lsp-mcp)
(require 'agent-lsp-instructions)
(require 'agent-lsp-compose)
(require 'agent-lsp-history)
(require 'agent-lsp-language)

;; The commands autoload this file, not the part that defines each, so the
;; first of them loads every part: a server is told when it starts that this
;; client answers permission requests, and its notifications need the buffers.
;;;###autoload (autoload 'agent-lsp-ask "agent-lsp" nil t)
;;;###autoload (autoload 'agent-lsp-cancel "agent-lsp" nil t)
;;;###autoload (autoload 'agent-lsp-new-conversation "agent-lsp" nil t)
;;;###autoload (autoload 'agent-lsp-compact "agent-lsp" nil t)
;;;###autoload (autoload 'agent-lsp-list-tools "agent-lsp" nil t)
;;;###autoload (autoload 'agent-lsp-trace "agent-lsp" nil t)
;;;###autoload (autoload 'agent-lsp-show "agent-lsp" nil t)
;;;###autoload (autoload 'agent-lsp-check-connection "agent-lsp" nil t)
;;;###autoload (autoload 'agent-lsp-select-model "agent-lsp" nil t)
;;;###autoload (autoload 'agent-lsp-checkpoints "agent-lsp" nil t)
;;;###autoload (autoload 'agent-lsp-diff "agent-lsp" nil t)
;;;###autoload (autoload 'agent-lsp-rewind "agent-lsp" nil t)
;;;###autoload (autoload 'agent-lsp-permissions "agent-lsp" nil t)
;;;###autoload (autoload 'agent-lsp-grants "agent-lsp" nil t)
;;;###autoload (autoload 'agent-lsp-sandbox "agent-lsp" nil t)
;;;###autoload (autoload 'agent-lsp-mcp-servers "agent-lsp" nil t)
;;;###autoload (autoload 'agent-lsp-instructions "agent-lsp" nil t)
;;;###autoload (autoload 'agent-lsp-compose "agent-lsp" nil t)
;;;###autoload (autoload 'agent-lsp-history "agent-lsp" nil t)
;;;###autoload (autoload 'agent-lsp-delete-conversation "agent-lsp" nil t)
;;;###autoload (autoload 'agent-lsp-apply-settings "agent-lsp" nil t)
;;;###autoload (autoload 'agent-lsp-shutdown "agent-lsp" nil t)

;;;###autoload
(defvar agent-lsp-command-map
  (let ((map (make-sparse-keymap)))
    (define-key map "a" #'agent-lsp-ask)
    (define-key map "c" #'agent-lsp-cancel)
    (define-key map "n" #'agent-lsp-new-conversation)
    (define-key map "z" #'agent-lsp-compact)
    (define-key map "l" #'agent-lsp-list-tools)
    (define-key map "t" #'agent-lsp-trace)
    (define-key map "b" #'agent-lsp-show)
    (define-key map "h" #'agent-lsp-checkpoints)
    (define-key map "d" #'agent-lsp-diff)
    (define-key map "u" #'agent-lsp-rewind)
    (define-key map "k" #'agent-lsp-check-connection)
    (define-key map "m" #'agent-lsp-select-model)
    (define-key map "p" #'agent-lsp-grants)
    (define-key map "y" #'agent-lsp-permissions)
    (define-key map "w" #'agent-lsp-compose)
    (define-key map "r" #'agent-lsp-history)
    (define-key map "D" #'agent-lsp-delete-conversation)
    (define-key map "s" #'agent-lsp-sandbox)
    (define-key map "M" #'agent-lsp-mcp-servers)
    (define-key map "i" #'agent-lsp-instructions)
    map)
  "Keymap of agent-lsp commands.
Bind it to a prefix, e.g. (global-set-key (kbd \"C-c a\") agent-lsp-command-map).")

(provide 'agent-lsp)
;;; agent-lsp.el ends here
