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
(require 'agent-lsp-protocol)

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
subdomains), :maxProcesses, :maxFileSizeMB, :maxMemoryMB,
:maxCallMemoryMB (positive integers), :approval, :allowedCommands,
:permissionTimeout, :contextWindow \(tokens), :compactThreshold (0.1 to 0.95),
:mcpServers (MCP servers by name),
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

(defvar agent-lsp--starting nil
  "Servers being started, without waiting: an alist of (ROOT . START).
START is a plist: :server (once eglot made it) and :queue, the functions
to call with the server once it answered `initialize', oldest first, each
a list (FUNCTION BUFFER ON-FAILURE).")

(defun agent-lsp--server-made (server)
  "Note SERVER's root (from `eglot-server-initialized-hook') if it is ours.
Eglot runs the hook before the handshake, with `default-directory' bound to
the project root.  A server started here is watched: its process ending
before it answered `initialize' (an exit, an error reply, eglot's time limit
all end there) fails the start."
  (when (cl-typep server 'agent-lsp-server)
    (let ((root (file-name-as-directory (expand-file-name default-directory))))
      (setf (agent-lsp--server-root server) root)
      (when-let ((start (cdr (assoc root agent-lsp--starting)))
                 (process (jsonrpc--process server)))
        (unless (plist-get start :server)
          (plist-put start :server server)
          (add-function :around (process-sentinel process)
                        (lambda (sentinel proc change)
                          (agent-lsp--watch-start root server sentinel proc change))))))))

(defun agent-lsp--watch-start (root server sentinel process change)
  "Run jsonrpc's SENTINEL of SERVER's PROCESS for CHANGE; if the process ended
while it started for ROOT, the start failed.  Eglot 1.9 then signals its own
error from the sentinel (\"Server died\"): said once, here, instead."
  (let ((starting (lambda () (eq (plist-get (cdr (assoc root agent-lsp--starting)) :server)
                                 server))))
    (condition-case err
        (funcall sentinel process change)
      (error (unless (funcall starting) (signal (car err) (cdr err)))))
    (when (and (not (process-live-p process)) (funcall starting))
      (agent-lsp--start-failed root server
                               (format "it ended (%s, status %s)" (process-status process)
                                       (process-exit-status process))))))

(defun agent-lsp--remember-server (server)
  "Track SERVER (from `eglot-connect-hook': it answered `initialize') if it is
ours, and call the functions waiting for it."
  (when (cl-typep server 'agent-lsp-server)
    (unless (agent-lsp--server-root server)
      (setf (agent-lsp--server-root server)
            (file-name-as-directory (expand-file-name default-directory))))
    (push server agent-lsp--servers)
    (let* ((root (agent-lsp--server-root server))
           (entry (assoc root agent-lsp--starting)))
      (when entry
        (setq agent-lsp--starting (delq entry agent-lsp--starting))
        ;; Outside eglot's process filter: a waiting function may fail, or
        ;; read from the minibuffer.
        (run-at-time 0 nil #'agent-lsp--run-queue server
                     (plist-get (cdr entry) :queue))))))

(add-hook 'eglot-server-initialized-hook #'agent-lsp--server-made)
(add-hook 'eglot-connect-hook #'agent-lsp--remember-server)

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

(defun agent-lsp--with-server (function &optional on-failure)
  "Call FUNCTION with the current project's server; start it if needed.
Nothing waits: with a running server FUNCTION is called at once; else the
server starts in the background (the echo area says so) and FUNCTION is
called, in its buffer, once the server answered `initialize', after the
functions queued before it for that project.  If the server does not
start, the echo area says so once and ON-FAILURE, if given, is called with
no argument instead; the next command tries again.  A server program that
is not found is said in the conversation, with how to install it or set
`agent-lsp-server-command', before anything starts."
  (let* ((project (agent-lsp--project))
         (root (agent-lsp--root project))
         (server (agent-lsp--live-server root))
         (entry (assoc root agent-lsp--starting))
         (waiting (list function (current-buffer) on-failure)))
    (cond
     (server (funcall function server))
     (entry (plist-put (cdr entry) :queue
                       (append (plist-get (cdr entry) :queue) (list waiting))))
     (t
      (unless (agent-lsp--server-program-found-p)
        (when agent-lsp-missing-server-function
          (funcall agent-lsp-missing-server-function (car agent-lsp-server-command)))
        (user-error "agent-lsp: the server program %s was not found; see *agent-lsp*"
                    (car agent-lsp-server-command)))
      (agent-lsp-register-with-eglot)
      (setq entry (list root :queue (list waiting)))
      (push entry agent-lsp--starting)
      (condition-case err
          (progn
            ;; A temporary buffer: `eglot' must not see (and replace) a server
            ;; that manages the current buffer.  eglot 1.9 takes one language id
            ;; string; later versions also accept one.
            (with-temp-buffer
              (setq default-directory root)
              (let ((eglot-sync-connect nil))
                (eglot (agent-lsp--modes) project 'agent-lsp-server
                       agent-lsp-server-command "plaintext")))
            ;; After eglot's own "Waiting in background" in the echo area.
            (message "agent-lsp: starting the server…"))
        (error (agent-lsp--start-failed root (plist-get (cdr entry) :server)
                                        (error-message-string err))))))))

(defun agent-lsp--run-queue (server queue)
  "Call the functions of QUEUE (see `agent-lsp--starting') with SERVER, in order.
One that fails says so in the echo area; the others still run."
  (dolist (waiting queue)
    (pcase-let ((`(,function ,buffer ,_on-failure) waiting))
      (with-current-buffer (if (buffer-live-p buffer) buffer (current-buffer))
        (condition-case err
            (funcall function server)
          (error (message "agent-lsp: %s" (error-message-string err))))))))

(defun agent-lsp--start-failed (root server &optional reason)
  "The server started for ROOT (SERVER, if eglot made it) did not start.
Drop what waited for it (their on-failure functions run) and say so once;
the next command starts it again.  REASON says why, when known."
  (let ((entry (assoc root agent-lsp--starting)))
    (when (and entry (memq (plist-get (cdr entry) :server) (list nil server)))
      (setq agent-lsp--starting (delq entry agent-lsp--starting))
      (let ((text (format "agent-lsp: the server did not start%s; see %s.  \
The next command tries again"
                          (if reason (concat ": " reason) "")
                          (if server
                              (format "*%s stderr*" (jsonrpc-name server))
                            "*Messages*"))))
        ;; After eglot's own error, which the process sentinel reports.
        (run-at-time 0 nil (lambda () (message "%s" text))))
      (dolist (waiting (plist-get (cdr entry) :queue))
        (pcase-let ((`(,_function ,buffer ,on-failure) waiting))
          (when on-failure
            (with-current-buffer (if (buffer-live-p buffer) buffer (current-buffer))
              (with-demoted-errors "agent-lsp: %S" (funcall on-failure)))))))))

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

(defconst agent-lsp--action-words
  `((,agent-lsp-action-set-api-key
     . "To set the key: `agent-lsp config set-key' in a terminal, then M-x agent-lsp-check-connection.")
    (,agent-lsp-action-set-base-url
     . "To set it: :baseUrl in `agent-lsp-settings', or `agent-lsp config set base_url URL' in a terminal.")
    (,agent-lsp-action-set-model . "To choose one: M-x agent-lsp-select-model."))
  "How an Emacs user does what an error's data.action asks.
The server's words name no editor; these name the Emacs way.")

(defun agent-lsp--with-action (message action)
  "MESSAGE, then how to do in Emacs what ACTION (an error's data.action) asks."
  (let ((words (cdr (assoc action agent-lsp--action-words))))
    (if words (concat message " " words) message)))

(defun agent-lsp--error-text (error)
  "The message of the JSON-RPC ERROR (a plist), its data.action worded."
  (let ((data (plist-get error :data)))
    (agent-lsp--with-action (format "%s" (plist-get error :message))
                            (and (listp data) (plist-get data :action)))))

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
     :error-fn (lambda (error) (funcall fail (agent-lsp--error-text error)))
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
