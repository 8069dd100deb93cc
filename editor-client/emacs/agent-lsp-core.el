;;; agent-lsp-core.el --- Settings and the eglot server of agent-lsp  -*- lexical-binding: t; -*-

;;; Commentary:

;; What every other part of the agent-lsp client builds on: the user options,
;; the eglot server class (the settings as initializationOptions and answered to
;; `workspace/configuration'), its registration in `eglot-server-programs', the
;; server of the current project, the conversation's state and the helpers that
;; send requests.

;;; Code:

(require 'cl-lib)
(require 'eglot)
(require 'jsonrpc)
(require 'project)
(require 'subr-x)

(defcustom agent-lsp-server-command '("agent-lsp" "--stdio")
  "Command line of the agent-lsp server: program and arguments.
For a checkout, e.g. (\"uv\" \"run\" \"--directory\" \"/path/to/agent-lsp\"
\"agent-lsp\" \"--stdio\")."
  :type '(repeat string)
  :group 'agent-lsp)

(defcustom agent-lsp-settings nil
  "The `agentLsp' settings section as a plist, e.g. (:model \"gpt-4o-mini\").
Keys: :model, :baseUrl, :requestTimeout, :maxRetries, :maxTurns,
:enabledTools (a vector of tool names), :bashTimeout, :systemPrompt,
:editThroughEditor, :confirmEdits (t or :json-false), :sandbox, :writableRoots,
:network, :allowedDomains (a vector of host names, \"*.example.com\" for
subdomains), :maxProcesses, :maxFileSizeMB, :maxMemoryMB (positive integers),
:approval, :allowedCommands, :permissionTimeout, :contextWindow
\(tokens), :compactThreshold (0.1 to 0.95), :mcpServers (MCP servers by name),
:instructionFiles (a vector of paths relative to the folder: the first that
exists at its root, and a subfolder's own, are given to the model; default
[\"AGENTS.md\" \"CLAUDE.md\" \".github/copilot-instructions.md\"]),
:instructionsMaxBytes (at most this many bytes of them all, default 32768;
a cut says so; see `agent-lsp-instructions').  Sent as
initializationOptions and answered to `workspace/configuration'.  Never the
API key: the server reads it from the user configuration file
~/.config/agent-lsp/config.toml (`agent-lsp config set-key') or its environment."
  :type 'plist
  :group 'agent-lsp)

(defcustom agent-lsp-managed-modes nil
  "Major modes whose project buffers the agent-lsp server manages through eglot.
The agent then reads their unsaved text and edits them through eglot
\(`workspace/applyEdit').  Eglot gives a buffer one server only, so list only
modes that use no other language server in your projects."
  :type '(repeat symbol)
  :group 'agent-lsp)

(defcustom agent-lsp-save-before-ask t
  "Non-nil means offer to save modified project buffers before an ask.
Buffers the server does not manage are read from disk by the agent."
  :type 'boolean
  :group 'agent-lsp)

(defvar agent-lsp--servers nil "Live agent-lsp eglot servers, newest first.")

;; One conversation at a time: its server, session and the ask in flight.
(defvar agent-lsp--conversation-server nil)
(defvar agent-lsp--session-id nil)
(defvar agent-lsp--request nil
  "The running ask: a plist (:server :id :token :status-marker :cancelling ...).
While the answer streams, :turn and :channel name the part being written,
:text holds it, and :answer-start marks where the last answer part began.")

;;; The eglot server class

(defclass agent-lsp-server (eglot-lsp-server)
  ((root :initform nil :accessor agent-lsp--server-root
         :documentation "The project root the server acts in."))
  :documentation "An eglot connection to the agent-lsp language server.")

(defun agent-lsp--settings-object ()
  "Return the `agentLsp' settings as a JSON object for jsonrpc."
  (or agent-lsp-settings (make-hash-table)))

(cl-defmethod eglot-initialization-options ((_server agent-lsp-server))
  "Send `agent-lsp-settings' as initializationOptions."
  (agent-lsp--settings-object))

(cl-defmethod eglot-handle-request
  ((_server agent-lsp-server) (_method (eql 'workspace/configuration)) &key items)
  "Answer the pull of the `agentLsp' section in ITEMS from `agent-lsp-settings'."
  (apply #'vector
         (mapcar (lambda (item)
                   (when (equal (plist-get item :section) "agentLsp")
                     (agent-lsp--settings-object)))
                 items)))

(defun agent-lsp--remember-server (server)
  "Track SERVER (from `eglot-server-initialized-hook') if it is ours.
Eglot runs the hook with `default-directory' bound to the project root."
  (when (cl-typep server 'agent-lsp-server)
    (setf (agent-lsp--server-root server)
          (file-name-as-directory (expand-file-name default-directory)))
    (push server agent-lsp--servers)))

(add-hook 'eglot-server-initialized-hook #'agent-lsp--remember-server)

(defun agent-lsp--modes ()
  "The major modes the server is started for.
`agent-lsp-conversation-mode' buffers visit no file, so eglot manages none of
them: without `agent-lsp-managed-modes' the server manages no buffer."
  (cons 'agent-lsp-conversation-mode agent-lsp-managed-modes))

(defun agent-lsp-register-with-eglot ()
  "Register the server in `eglot-server-programs' for `agent-lsp-managed-modes'.
Then \\[eglot] in a buffer of those modes starts agent-lsp too."
  (interactive)
  (setq eglot-server-programs
        (cl-remove-if (lambda (entry) (eq (car-safe (cdr entry)) 'agent-lsp-server))
                      eglot-server-programs))
  (push (cons (agent-lsp--modes) (cons 'agent-lsp-server agent-lsp-server-command))
        eglot-server-programs))

(agent-lsp-register-with-eglot)

;;; Projects and servers

(defun agent-lsp--project ()
  "Return the current project (outside projects, a transient one)."
  (or (project-current) (cons 'transient (expand-file-name default-directory))))

(defun agent-lsp--root (&optional project)
  "Return the root folder of PROJECT (default: the current one), with a slash."
  (file-name-as-directory (expand-file-name (project-root (or project (agent-lsp--project))))))

(defun agent-lsp--live-server (root)
  "Return the running agent-lsp server for ROOT, if any."
  (setq agent-lsp--servers (cl-remove-if-not #'jsonrpc-running-p agent-lsp--servers))
  (cl-find root agent-lsp--servers :key #'agent-lsp--server-root :test #'equal))

(defvar agent-lsp-missing-server-function nil
  "Called with the program of `agent-lsp-server-command' when it is not found.
agent-lsp-transcript sets it: the conversation says how to install or set it.")

(defun agent-lsp--server-program-found-p ()
  "Whether the program of `agent-lsp-server-command' can be run."
  (let ((program (car agent-lsp-server-command)))
    (and (stringp program)
         (if (file-name-absolute-p program)
             (file-executable-p program)
           (executable-find program)))))

(defun agent-lsp--ensure-server ()
  "Return the server for the current project, started (synchronously) if needed.
A server program that is not found is said in the conversation, with how to
install it or set `agent-lsp-server-command'."
  (let* ((project (agent-lsp--project))
         (root (agent-lsp--root project)))
    (or (agent-lsp--live-server root)
        (progn
          (unless (agent-lsp--server-program-found-p)
            (when agent-lsp-missing-server-function
              (funcall agent-lsp-missing-server-function (car agent-lsp-server-command)))
            (user-error "agent-lsp: the server program %s was not found; see *agent-lsp*"
                        (car agent-lsp-server-command)))
          (agent-lsp-register-with-eglot)
          ;; A temporary buffer: `eglot' must not see (and replace) a server
          ;; that manages the current buffer.  eglot 1.9 takes one language id
          ;; string; later versions also accept one.
          (with-temp-buffer
            (setq default-directory root)
            (let ((eglot-sync-connect t))
              (eglot (agent-lsp--modes) project 'agent-lsp-server
                     agent-lsp-server-command "plaintext")))
          (or (agent-lsp--live-server root)
              (error "The agent-lsp server did not start (see its *EGLOT ... stderr* buffer)"))))))

;;; Requests

(defun agent-lsp--async-request (server method params &rest args)
  "Send METHOD with PARAMS to SERVER, ARGS as for jsonrpc; return the request id.
`jsonrpc-async-request' returns the id from jsonrpc 1.0.24 (Emacs 30) on, nil
before; `jsonrpc--async-request-1' returns (ID ...) in every version."
  (car (apply (if (fboundp 'jsonrpc--async-request-1)
                  #'jsonrpc--async-request-1
                #'jsonrpc-async-request)
              server method params args)))

(defvar agent-lsp--commands-run 0
  "How many commands have run (`post-command-hook'): tells whether the user went
on to something else while a request was answered.")

(defun agent-lsp--count-command ()
  "Count a command (see `agent-lsp--commands-run')."
  (cl-incf agent-lsp--commands-run))

(add-hook 'post-command-hook #'agent-lsp--count-command)

(cl-defun agent-lsp--call (server method params on-result &key (timeout 30) on-error)
  "Send METHOD with PARAMS to SERVER and return at once; ON-RESULT gets the result.
Nothing waits: Emacs stays usable however long the server takes.  An error
reply, or none within TIMEOUT seconds, goes to ON-ERROR (a message) if given,
else to the echo area."
  (let ((fail (lambda (text)
                (if on-error (funcall on-error text) (message "agent-lsp: %s" text)))))
    (agent-lsp--async-request
     server method params
     :success-fn on-result
     :error-fn (lambda (error) (funcall fail (format "%s" (plist-get error :message))))
     :timeout-fn (lambda () (funcall fail (format "no answer to %s within %s s" method timeout)))
     :timeout timeout)))

(defun agent-lsp--if-still-waiting (what function)
  "FUNCTION, wrapped to run (outside the process filter) only if the user ran
no other command since this one asked for WHAT: it may read from the minibuffer,
and must not take the keys of whatever the user went on to.  Otherwise the
echo area says WHAT came late."
  (let ((mark (+ agent-lsp--commands-run (if this-command 1 0))))
    (lambda (&rest args)
      (if (and (<= agent-lsp--commands-run mark) (not (active-minibuffer-window)))
          (apply #'run-at-time 0 nil function args)
        (message "agent-lsp: %s came after you went on; run the command again" what)))))

(defun agent-lsp--flush-changes (server)
  "Send SERVER the buffer changes eglot still holds back (it sends them on an idle
timer, and before its own requests, but not before ours), so the server compares
against what the user sees."
  (when (fboundp 'eglot--signal-textDocument/didChange)
    (dolist (buffer (eglot--managed-buffers server))
      (when (buffer-live-p buffer)
        (with-current-buffer buffer
          (when eglot--recent-changes
            (eglot--signal-textDocument/didChange)))))))

(defun agent-lsp--session-server ()
  "The conversation's server and session id, or a user error."
  (unless (and agent-lsp--session-id agent-lsp--conversation-server
               (jsonrpc-running-p agent-lsp--conversation-server))
    (user-error "No conversation yet: ask something first"))
  (agent-lsp--flush-changes agent-lsp--conversation-server)
  (list agent-lsp--conversation-server agent-lsp--session-id))

;;; Server commands

(defun agent-lsp-apply-settings ()
  "Send `agent-lsp-settings' to the running agent-lsp servers."
  (interactive)
  (dolist (server (cl-remove-if-not #'jsonrpc-running-p agent-lsp--servers))
    (jsonrpc-notify server :workspace/didChangeConfiguration
                    (list :settings (list :agentLsp (agent-lsp--settings-object))))))

(defun agent-lsp-shutdown ()
  "Shut down the agent-lsp server of the current project."
  (interactive)
  (let ((server (agent-lsp--live-server (agent-lsp--root))))
    (unless server (user-error "No agent-lsp server runs for this project"))
    (eglot-shutdown server)))

(provide 'agent-lsp-core)
;;; agent-lsp-core.el ends here
