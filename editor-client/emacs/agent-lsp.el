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
;; selected text go to the model with the prompt).
;;
;; Commands: `agent-lsp-ask', `agent-lsp-cancel', `agent-lsp-new-conversation',
;; `agent-lsp-compact', `agent-lsp-list-tools', `agent-lsp-trace', `agent-lsp-show',
;; `agent-lsp-check-connection', `agent-lsp-select-model',
;; `agent-lsp-checkpoints', `agent-lsp-diff', `agent-lsp-rewind' (see what each
;; ask changed and undo it), `agent-lsp-grants' (revoke "always" answers),
;; `agent-lsp-sandbox' (what confines the agent's commands here, and what is
;; weaker), `agent-lsp-apply-settings', `agent-lsp-shutdown';
;; all of them (but the last two) are on `agent-lsp-command-map'.
;;
;; The server reads the API key, endpoint and model from the user configuration
;; file ~/.config/agent-lsp/config.toml (`agent-lsp config set-key' writes it),
;; never from Emacs.
;;
;; Works with Emacs 28 and Debian's elpa-eglot (eglot 1.9), and with Emacs 29+
;; where eglot is built in.  The protocol is in docs/protocol.md.

;;; Code:

(require 'cl-lib)
(require 'diff-mode)
(require 'parse-time)
(require 'eglot)
(require 'jsonrpc)
(require 'project)
(require 'subr-x)

(defgroup agent-lsp nil
  "Coding agent over the agent-lsp language server."
  :group 'tools
  :prefix "agent-lsp-")

(defcustom agent-lsp-server-command '("agent-lsp" "--stdio")
  "Command line of the agent-lsp server: program and arguments.
For a checkout, e.g. (\"uv\" \"run\" \"--directory\" \"/path/to/agent-lsp\"
\"agent-lsp\" \"--stdio\")."
  :type '(repeat string))

(defcustom agent-lsp-settings nil
  "The `agentLsp' settings section as a plist, e.g. (:model \"gpt-4o-mini\").
Keys: :model, :baseUrl, :requestTimeout, :maxRetries, :maxTurns,
:enabledTools (a vector of tool names), :bashTimeout, :systemPrompt,
:editThroughEditor, :confirmEdits (t or :json-false), :sandbox, :writableRoots,
:network, :allowedDomains (a vector of host names, \"*.example.com\" for
subdomains), :maxProcesses, :maxFileSizeMB, :maxMemoryMB (positive integers),
:approval, :allowedCommands, :permissionTimeout, :contextWindow
\(tokens), :compactThreshold (0.1 to 0.95).  Sent as
initializationOptions and answered to `workspace/configuration'.  Never the
API key: the server reads it from the user configuration file
~/.config/agent-lsp/config.toml (`agent-lsp config set-key') or its environment."
  :type 'plist)

(defcustom agent-lsp-managed-modes nil
  "Major modes whose project buffers the agent-lsp server manages through eglot.
The agent then reads their unsaved text and edits them through eglot
\(`workspace/applyEdit').  Eglot gives a buffer one server only, so list only
modes that use no other language server in your projects."
  :type '(repeat symbol))

(defcustom agent-lsp-save-before-ask t
  "Non-nil means offer to save modified project buffers before an ask.
Buffers the server does not manage are read from disk by the agent."
  :type 'boolean)

(defconst agent-lsp--buffer "*agent-lsp*")
(defconst agent-lsp--trace-buffer "*agent-lsp-trace*")
(defconst agent-lsp--tools-buffer "*agent-lsp-tools*")
(defconst agent-lsp--checkpoints-buffer "*agent-lsp-checkpoints*")
(defconst agent-lsp--diff-buffer "*agent-lsp-diff*")
(defconst agent-lsp--check-buffer "*agent-lsp-check*")
(defconst agent-lsp--sandbox-buffer "*agent-lsp-sandbox*")
(defconst agent-lsp--check-timeout 90
  "Seconds to wait for `agent/checkConnection' (it lists models, then asks once).")
(defconst agent-lsp--summary-chars 80 "As SUMMARY_CHARS in server/activity.py.")

(defvar agent-lsp--servers nil "Live agent-lsp eglot servers, newest first.")
(defvar agent-lsp--asks 0 "Counter for workDoneTokens.")
(defvar agent-lsp--history nil "Prompt history.")

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

(cl-defmethod eglot-handle-notification
  ((_server agent-lsp-server) (_method (eql 'agent/toolActivity)) &rest params
   &key &allow-other-keys)
  "Add a trace line for the tool call activity in PARAMS."
  (agent-lsp--trace-insert (agent-lsp-format-activity params)))

(cl-defmethod eglot-handle-notification
  ((_server agent-lsp-server) (_method (eql 'agent/compaction)) &rest params
   &key &allow-other-keys)
  "Add a trace line for the compaction in PARAMS; the ask's footer mentions it."
  (agent-lsp--trace-insert (agent-lsp-format-compaction params))
  (when agent-lsp--request
    (plist-put agent-lsp--request :compacted (agent-lsp-compaction-summary params))))

(cl-defmethod eglot-handle-notification
  ((_server agent-lsp-server) (_method (eql 'agent/answerDelta)) &key sessionId turn delta
   channel &allow-other-keys)
  "Show DELTA, the next piece of the running ask's answer (or reasoning: CHANNEL)."
  (let ((request agent-lsp--request))
    (when (and request (stringp delta)
               (or (null agent-lsp--session-id) (equal sessionId agent-lsp--session-id)))
      (agent-lsp--stream request turn channel delta))))

(cl-defmethod eglot-handle-notification
  ((_server agent-lsp-server) (_method (eql '$/progress)) &key token value)
  "Show progress VALUE on the running ask's TOKEN; leave other tokens to eglot."
  (if (and agent-lsp--request (equal token (plist-get agent-lsp--request :token)))
      (let ((message (plist-get value :message)))
        (when (and (stringp message) (not (equal (plist-get value :kind) "end"))
                   (not (plist-get agent-lsp--request :cancelling)))
          (agent-lsp--set-status (concat "working: " message))))
    (cl-call-next-method)))

;;; Permission requests

(defconst agent-lsp--permission-keys
  '(("allow_once" ?y "allow once") ("allow_always" ?a "allow always")
    ("reject_once" ?n "reject") ("reject_always" ?r "reject always"))
  "Option kind -> (key, label) of the multiple-choice prompt.")

(defvar agent-lsp--permission-pending nil
  "Non-nil while a permission prompt is open.")

(cl-defmethod eglot-client-capabilities ((_server agent-lsp-server))
  "Eglot's capabilities, plus: this client answers `agent/requestPermission'."
  (let ((capabilities (cl-call-next-method)))
    (plist-put capabilities :experimental '(:agent (:requestPermission t)))))

(defun agent-lsp-permission-choices (options)
  "The `read-multiple-choice' choices for the request's OPTIONS (a vector of plists)."
  (delq nil (mapcar (lambda (option)
                      (let ((entry (assoc (plist-get option :kind) agent-lsp--permission-keys)))
                        (when entry
                          (list (nth 1 entry) (nth 2 entry) (plist-get option :optionId)))))
                    options)))

(defun agent-lsp-permission-prompt (tool-name arguments title reason)
  "The prompt for a request about TOOL-NAME's call with ARGUMENTS (a plist).
A bash command comes first, line by line, then TITLE and REASON; all of it
escaped (`agent-lsp-escape-control'), so nothing in it can hide what runs."
  (let ((command (and (equal tool-name "bash") (plist-get arguments :command))))
    (concat (if (stringp command)
                (concat "Command:\n"
                        (mapconcat (lambda (line) (concat "    " line "\n"))
                                   (split-string (agent-lsp-escape-control command t) "\n")
                                   ""))
              "")
            "agent-lsp asks: " (agent-lsp-escape-control (format "%s" title))
            (if (and (stringp reason) (not (string-empty-p reason)))
                (concat " (" (agent-lsp-escape-control reason) ")")
              "")
            " ")))

(cl-defmethod eglot-handle-request
  ((_server agent-lsp-server) (_method (eql 'agent/requestPermission))
   &key toolName arguments title reason options &allow-other-keys)
  "Ask the user about a call with a multiple-choice prompt; answer in ACP's shape.
\[keyboard-quit] dismisses the request (the call is declined, the ask goes on).
A request the server withdraws meanwhile ($/cancelRequest) closes the prompt."
  (let* ((choices (agent-lsp-permission-choices options))
         (prompt (agent-lsp-permission-prompt toolName arguments title reason))
         (picked (catch 'agent-lsp--withdrawn
                   (let ((agent-lsp--permission-pending t))
                     (condition-case nil
                         (read-multiple-choice prompt choices)
                       (quit nil))))))
    (if (and (consp picked) (nth 2 picked))
        (list :outcome (list :outcome "selected" :optionId (nth 2 picked)))
      (list :outcome (list :outcome "cancelled")))))

(cl-defmethod eglot-handle-notification
  ((_server agent-lsp-server) (_method (eql '$/cancelRequest)) &rest _params)
  "The server withdrew a request: close the permission prompt if one is open.
It throws from a timer, as `with-timeout' does, so the prompt's own reading is
what gets unwound."
  (when agent-lsp--permission-pending
    (run-at-time 0 nil (lambda ()
                         (when agent-lsp--permission-pending
                           (message "agent-lsp: the permission request was withdrawn")
                           (throw 'agent-lsp--withdrawn nil))))))

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

(defun agent-lsp--ensure-server ()
  "Return the server for the current project, started (synchronously) if needed."
  (let* ((project (agent-lsp--project))
         (root (agent-lsp--root project)))
    (or (agent-lsp--live-server root)
        (progn
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

;;; Trace lines (same format as the terminal and Neovim clients)

(defconst agent-lsp--controls
  (rx (any (0 . 8) (10 . 31) 127 (#x80 . #x9f) #x61c (#x200b . #x200f) (#x202a . #x202e)
           (#x2060 . #x2064) (#x2066 . #x2069) #xfeff))
  "What `agent-lsp-escape-control' spells out: controls but tab, bidi, invisible.")

(defconst agent-lsp--controls-but-newline
  (rx (any (0 . 8) (11 . 31) 127 (#x80 . #x9f) #x61c (#x200b . #x200f) (#x202a . #x202e)
           (#x2060 . #x2064) (#x2066 . #x2069) #xfeff))
  "`agent-lsp--controls' without the newline.")

(defun agent-lsp-escape-control (text &optional keep-newlines)
  "TEXT (the model's) made safe to show, as the server's tooling/display.py does.
ESC becomes \\e, CR \\r, a newline ⏎ (kept with KEEP-NEWLINES), other C0,
DEL and C1 controls \\xNN, bidi and invisible formatting characters \\uXXXX;
tabs stay.  An escape sequence in a command must not hide part of it.
Escaping twice changes nothing."
  (replace-regexp-in-string
   (if keep-newlines agent-lsp--controls-but-newline agent-lsp--controls)
   (lambda (match)
     (let ((char (aref match 0)))
       (pcase char
         (?\e "\\e")
         (?\r "\\r")
         (?\n "⏎")
         (_ (format (if (< char #x100) "\\x%02x" "\\u%04x") char)))))
   text t t))

(defun agent-lsp--one-line (text &optional max)
  "TEXT on one line, escaped; cut to MAX chars with `…'.
Line breaks show as \" ⏎ \" (so `git fetch #' then `curl ... | sh' on the
next line does not read as one comment), other whitespace runs as one space."
  (let* ((max (or max agent-lsp--summary-chars))
         (parts (mapcar (lambda (part)
                          (string-trim (replace-regexp-in-string
                                        "[ \t\n\r\f\v]+" " "
                                        (agent-lsp-escape-control part))))
                        (split-string text "\n")))
         (line (string-join (delete "" parts) " ⏎ ")))
    (if (<= (length line) max) line (concat (substring line 0 (1- max)) "…"))))

(defun agent-lsp--parse-json (text)
  "TEXT parsed as JSON (objects as hash tables), or nil."
  (condition-case nil
      (if (fboundp 'json-parse-string)
          (json-parse-string text :object-type 'hash-table :null-object nil)
        (let ((json-object-type 'hash-table)) (json-read-from-string text)))
    (error nil)))

(defun agent-lsp-summarize-arguments (arguments)
  "Summarize ARGUMENTS (JSON text) by their `path', `command' or `pattern'.
Without one of those, ARGUMENTS itself on one line."
  (if (or (not (stringp arguments)) (string-blank-p arguments))
      "{}"
    (let ((parsed (agent-lsp--parse-json arguments)))
      (or (and (hash-table-p parsed)
               (cl-loop for key in '("path" "command" "pattern")
                        for value = (gethash key parsed)
                        when (and (stringp value) (not (string-empty-p value)))
                        return (agent-lsp--one-line value)))
          (agent-lsp--one-line arguments)))))

(defun agent-lsp-format-activity (params)
  "One trace line for an `agent/toolActivity' notification PARAMS (a plist)."
  (let* ((stamp (format-time-string "%H:%M:%S"))
         (name (let ((n (plist-get params :name)))  ; the model's: maybe no such tool
                 (if (stringp n) (agent-lsp-escape-control n) "?")))
         (summary (agent-lsp-summarize-arguments (plist-get params :arguments)))
         (status (plist-get params :status)))
    (cond
     ((equal status "started") (format "%s → %s %s" stamp name summary))
     ((equal status "waiting")
      (format "%s ⏸ %s %s (waiting for permission)" stamp name summary))
     (t
      (let* ((ms (plist-get params :durationMs))
             (line (format "%s %s %s %s (%.0f ms)" stamp
                           (if (equal status "completed") "✓" "✗")
                           name summary (if (numberp ms) ms 0)))
             (output (plist-get params :output))
             (first (and (equal status "failed") (stringp output)
                         (car (split-string (string-trim output) "[\r\n]")))))
        (if (and first (not (string-empty-p first)))
            (concat line ": " (truncate-string-to-width (agent-lsp-escape-control first) 200))
          line))))))

(defun agent-lsp--thousands (n)
  "N with thousands separators, as Python's format(n, \",\")."
  (let ((digits (number-to-string (truncate (if (numberp n) n 0)))))
    (while (string-match "\\([0-9]\\)\\([0-9][0-9][0-9]\\)\\(,\\|$\\)" digits)
      (setq digits (replace-match "\\1,\\2\\3" t nil digits)))
    digits))

(defun agent-lsp--count (n word)
  "N WORD, with an s unless N is 1."
  (format "%d %s%s" n word (if (eql n 1) "" "s")))

(defun agent-lsp-compaction-summary (params)
  "What a compaction did, from an `agent/compaction' notification or an
`agent/compact' result PARAMS (a plist); as compaction_summary in
server/terminal_client.py."
  (let* ((elided (or (plist-get params :elidedOutputs) 0))
         (summarized (or (plist-get params :summarizedMessages) 0))
         (details (delq nil (list (and (> elided 0)
                                       (concat (agent-lsp--count elided "output") " elided"))
                                  (and (> summarized 0)
                                       (concat (agent-lsp--count summarized "message")
                                               " summarized"))
                                  (and (equal (plist-get params :trigger) "overflow")
                                       "the model said the conversation was too long"))))
         (line (format "compacted: %s → %s tokens of %s"
                       (agent-lsp--thousands (plist-get params :tokensBefore))
                       (agent-lsp--thousands (plist-get params :tokensAfter))
                       (agent-lsp--thousands (plist-get params :contextWindow)))))
    (if details (format "%s (%s)" line (string-join details ", ")) line)))

(defun agent-lsp-format-compaction (params)
  "One trace line for an `agent/compaction' notification PARAMS (a plist)."
  (format "%s ⇣ %s" (format-time-string "%H:%M:%S") (agent-lsp-compaction-summary params)))

(defconst agent-lsp--stop-notes
  '(("max_turns" . "stopped at the turn limit (maxTurns)")
    ("max_tokens" . "the answer was cut off at the model's output token limit")
    ("empty" . "the model returned nothing (no text and no tool calls)"))
  "What the user is told when an ask ended other than with an answer (its
stopReason); the same words as the terminal client (STOP_NOTES).")

(defun agent-lsp-stop-note (stop-reason)
  "The note for a result's STOP-REASON, or nil for an ordinary answer."
  (when (and (stringp stop-reason) (not (equal stop-reason "end_turn")))
    (or (cdr (assoc stop-reason agent-lsp--stop-notes))
        (format "stopped: %s" stop-reason))))

;;; Buffers

(defalias 'agent-lsp--conversation-parent-mode
  (if (fboundp 'markdown-mode) #'markdown-mode #'text-mode))

(define-derived-mode agent-lsp-conversation-mode agent-lsp--conversation-parent-mode
  "agent-lsp"
  "Major mode of the `*agent-lsp*' conversation buffer (Markdown)."
  (setq buffer-read-only t)
  (setq-local truncate-lines nil)
  (visual-line-mode 1))

(define-derived-mode agent-lsp-trace-mode special-mode "agent-lsp-trace"
  "Major mode of `*agent-lsp-trace*': a line per tool call start and end.")

(defun agent-lsp--get-buffer (name mode)
  "Buffer NAME, created in major MODE if needed."
  (let ((buffer (get-buffer name)))
    (or buffer
        (with-current-buffer (get-buffer-create name)
          (funcall mode)
          (current-buffer)))))

(defun agent-lsp--append (name mode text)
  "Append TEXT to buffer NAME (created in MODE).
Where point was at the end, it stays at the end."
  (with-current-buffer (agent-lsp--get-buffer name mode)
    (let ((inhibit-read-only t)
          (at-end (= (point) (point-max)))
          (followers (cl-remove-if-not (lambda (w) (>= (window-point w) (point-max)))
                                       (get-buffer-window-list (current-buffer) nil t))))
      (save-excursion
        (goto-char (point-max))
        (insert text))
      (when at-end (goto-char (point-max)))
      (dolist (window followers)
        (set-window-point window (point-max))))))

(defun agent-lsp--say (text)
  "Append TEXT to the conversation buffer."
  (agent-lsp--append agent-lsp--buffer #'agent-lsp-conversation-mode text))

(defun agent-lsp--trace-insert (line)
  "Append LINE to the trace buffer."
  (agent-lsp--append agent-lsp--trace-buffer #'agent-lsp-trace-mode (concat line "\n")))

(defun agent-lsp--set-status (text)
  "Show TEXT as the running ask's status line and in the mode line."
  (plist-put agent-lsp--request :status text)
  (let ((marker (plist-get agent-lsp--request :status-marker)))
    (when (and marker (marker-buffer marker))
      (with-current-buffer (marker-buffer marker)
        (let ((inhibit-read-only t))
          (save-excursion
            (goto-char marker)
            (delete-region marker (point-max))
            ;; Below the streamed text, on a line of its own.
            (insert (if (memq (char-before) '(nil ?\n)) "" "\n") "_" text "_\n")))
        (setq mode-line-process (format " [%s]" text))
        (force-mode-line-update)))))

(defun agent-lsp--stream (request turn channel delta)
  "Insert DELTA of REQUEST's answer above its status line.
CHANNEL \"reasoning\" is quoted and dimmed; a new TURN or CHANNEL starts a
new paragraph."
  (let ((marker (plist-get request :status-marker)))
    (when (and marker (marker-buffer marker))
      (with-current-buffer (marker-buffer marker)
        (let ((inhibit-read-only t)
              (reasoning (equal channel "reasoning"))
              (followers (cl-remove-if-not (lambda (w) (>= (window-point w) (point-max)))
                                           (get-buffer-window-list (current-buffer) nil t))))
          (save-excursion
            (goto-char marker)
            (delete-region marker (point-max))
            (unless (and (equal turn (plist-get request :turn))
                         (equal channel (plist-get request :channel)))
              (when (plist-get request :turn) (insert "\n\n"))
              (plist-put request :turn turn)
              (plist-put request :channel channel)
              (plist-put request :text "")
              (plist-put request :answer-start (and (not reasoning) (copy-marker (point))))
              (when reasoning (insert (propertize "> " 'face 'shadow))))
            (insert (if reasoning
                        (propertize (replace-regexp-in-string "\n" "\n> " delta) 'face 'shadow)
                      delta))
            (plist-put request :text (concat (plist-get request :text) delta))
            (set-marker marker (point)))
          (agent-lsp--set-status (or (plist-get request :status) "working"))
          (dolist (window followers)
            (set-window-point window (point-max))))))))

(defun agent-lsp--finish (request text)
  "End REQUEST: its status line is replaced by TEXT."
  (when (eq request agent-lsp--request)
    (setq agent-lsp--request nil)
    (when-let ((timer (plist-get request :cancel-timer))) (cancel-timer timer))
    (let ((marker (plist-get request :status-marker)))
      (when (and marker (marker-buffer marker))
        (with-current-buffer (marker-buffer marker)
          (let ((inhibit-read-only t))
            (delete-region marker (point-max)))
          (setq mode-line-process nil)
          (force-mode-line-update))))
    (when (and (plist-get request :turn) (not (string-prefix-p "\n" text)))
      (setq text (concat "\n\n" text)))  ; after the streamed text
    (agent-lsp--say (concat text "\n\n"))))

(defun agent-lsp--start-conversation (server root)
  "Start a conversation with SERVER in ROOT: a heading, no session yet."
  (with-current-buffer (agent-lsp--get-buffer agent-lsp--buffer #'agent-lsp-conversation-mode)
    (agent-lsp--say (concat (if (> (buffer-size) 0) "---\n\n" "")
                            "# agent-lsp: " root "\n\n"))
    (setq default-directory root))
  (setq agent-lsp--conversation-server server
        agent-lsp--session-id nil))

(defun agent-lsp--revert-changed-buffers (root)
  "Reload unmodified buffers under ROOT whose files the agent changed."
  (dolist (buffer (buffer-list))
    (with-current-buffer buffer
      (when (and buffer-file-name (not (buffer-modified-p))
                 (string-prefix-p root (expand-file-name buffer-file-name))
                 (file-exists-p buffer-file-name)
                 (not (verify-visited-file-modtime buffer)))
        (revert-buffer t t t)))))

;;; Commands

(defun agent-lsp--on-answer (request result)
  "Show the RESULT of `agent/ask' REQUEST and keep its session."
  (when (eq request agent-lsp--request)
    (setq agent-lsp--session-id (plist-get result :sessionId))
    (let* ((calls (length (plist-get result :toolCalls)))
           (answer (plist-get result :answer))
           (stop (agent-lsp-stop-note (plist-get result :stopReason)))
           (usage (plist-get result :usage))
           (compacted (plist-get request :compacted))
           (last (and (plist-get request :answer-start)
                      (equal (plist-get request :turn) (plist-get result :turns))))
           (checkpoint (plist-get result :checkpointId))
           (notes (concat (format "%d tool call%s" calls (if (= calls 1) "" "s"))
                          (if stop (concat ", " stop) "")
                          (if (plist-get usage :contextWindow)
                              (format ", context %s of %s tokens"
                                      (agent-lsp--thousands (plist-get usage :contextTokens))
                                      (agent-lsp--thousands (plist-get usage :contextWindow)))
                            "")
                          (if compacted (concat ", " compacted) "")))
           (checkpoint-note
            (if (stringp checkpoint)
                (format "\n_(checkpoint %s: M-x agent-lsp-diff, agent-lsp-rewind)_" checkpoint)
              "")))
      (if (and last (equal (plist-get request :text) answer))
          ;; Streamed as it is: only the footer.
          (agent-lsp--finish request (concat (format "\n\n_(%s)_" notes) checkpoint-note))
        ;; Not streamed as it is (an older server; an answer of only whitespace, which
        ;; the result gives as ""): the answer itself, in place of what streamed of it.
        (when last
          (let ((start (plist-get request :answer-start))
                (inhibit-read-only t))
            (with-current-buffer (marker-buffer start)
              (delete-region start (point-max))
              (set-marker (plist-get request :status-marker) start))
            (plist-put request :turn nil)))
        (agent-lsp--finish request
                           (concat (if (and (stringp answer) (not (string-empty-p answer)))
                                       (concat answer "\n\n")
                                     "")
                                   (format "_(%s)_" notes)
                                   checkpoint-note))))
    (agent-lsp--revert-changed-buffers (plist-get request :root))))

(defun agent-lsp--on-error (request error)
  "Show the ERROR reply to `agent/ask' REQUEST (-32800: it was cancelled)."
  (when (eq request agent-lsp--request)
    (let ((code (plist-get error :code))
          (data (plist-get error :data)))
      (cond
       ((eql code -32800) (agent-lsp--finish request "_(cancelled)_"))
       (t
        (let ((text (format "**Error** (%s): %s" code (plist-get error :message))))
          (when (and (eql code -32602) (equal (plist-get data :field) "sessionId"))
            (setq agent-lsp--session-id nil)
            (setq text (concat text "\n_The next ask starts a new conversation._")))
          (agent-lsp--finish request text)))))))

(defun agent-lsp--async-request (server method params &rest args)
  "Send METHOD with PARAMS to SERVER, ARGS as for jsonrpc; return the request id.
`jsonrpc-async-request' returns the id from jsonrpc 1.0.24 (Emacs 30) on, nil
before; `jsonrpc--async-request-1' returns (ID ...) in every version."
  (car (apply (if (fboundp 'jsonrpc--async-request-1)
                  #'jsonrpc--async-request-1
                #'jsonrpc-async-request)
              server method params args)))

(defun agent-lsp--region ()
  "The active region of a file buffer as (BUFFER START END), else nil."
  (when (and (use-region-p) buffer-file-name)
    (list (current-buffer) (region-beginning) (region-end))))

(defun agent-lsp--lsp-position (pos encoding)
  "POS as an LSP position in ENCODING (\"utf-16\" unless negotiated otherwise)."
  (save-excursion
    (save-restriction
      (widen)
      (goto-char pos)
      (let ((prefix (buffer-substring-no-properties (line-beginning-position) pos)))
        (list :line (1- (line-number-at-pos pos))
              :character (pcase encoding
                           ("utf-8" (length (encode-coding-string prefix 'utf-8 t)))
                           ("utf-32" (length prefix))
                           (_ (+ (length prefix)
                                 (cl-count-if (lambda (c) (> c #xFFFF)) prefix)))))))))

(defun agent-lsp--context (region server)
  "The `context' param of `agent/ask' for REGION (see `agent-lsp--region'), or nil."
  (pcase-let ((`(,buffer ,start ,end) region))
    (when (buffer-live-p buffer)
      (with-current-buffer buffer
        (let ((encoding (plist-get (eglot--capabilities server) :positionEncoding))
              (uri (funcall (if (fboundp 'eglot-path-to-uri) #'eglot-path-to-uri
                              #'eglot--path-to-uri)
                            buffer-file-name)))
          (list :activeDocument
                (list :uri uri
                      :selection (list :start (agent-lsp--lsp-position start encoding)
                                       :end (agent-lsp--lsp-position end encoding)))))))))

(defun agent-lsp--region-note (region)
  "A line saying what REGION holds, for the conversation."
  (pcase-let ((`(,buffer ,start ,end) region))
    (with-current-buffer buffer
      (let ((first (line-number-at-pos start))
            (last (line-number-at-pos (if (and (> end start) (eq (char-before end) ?\n))
                                          (1- end) end))))
        (format "_(selection: %s, %s)_" (file-relative-name buffer-file-name)
                (if (= first last) (format "line %d" first)
                  (format "lines %d-%d" first last)))))))

;;;###autoload
(defun agent-lsp-ask (prompt &optional region)
  "Ask the agent PROMPT in the current project; show the answer in `*agent-lsp*'.
Interactively, an active region in a file buffer goes along as REGION: the
model sees the file and the selected text (a list (BUFFER START END))."
  (interactive (let ((region (agent-lsp--region)))
                 (list (read-string "Ask the agent: " nil 'agent-lsp--history) region)))
  (when (or (not (stringp prompt)) (string-blank-p prompt))
    (user-error "The prompt is empty"))
  (when agent-lsp--request
    (user-error "An ask is already running (M-x agent-lsp-cancel stops it)"))
  (let* ((root (if (eq (current-buffer) (get-buffer agent-lsp--buffer))
                   default-directory
                 (agent-lsp--root)))
         (default-directory root)
         (server (agent-lsp--ensure-server)))
    (when agent-lsp-save-before-ask
      (save-some-buffers nil (lambda ()
                               (and buffer-file-name
                                    (string-prefix-p root (expand-file-name buffer-file-name))))))
    (unless (eq server agent-lsp--conversation-server)
      (agent-lsp--start-conversation server root))
    (agent-lsp--say (format "## You\n\n%s\n\n%s## Agent\n\n" prompt
                            (if region (concat (agent-lsp--region-note region) "\n\n") "")))
    (let* ((token (format "agent-lsp-emacs-%d" (cl-incf agent-lsp--asks)))
           (marker (with-current-buffer agent-lsp--buffer (copy-marker (point-max))))
           (request (list :server server :token token :root root :status-marker marker))
           (context (and region (agent-lsp--context region server)))
           (params (append (list :prompt prompt :workDoneToken token)
                           (and agent-lsp--session-id
                                (list :sessionId agent-lsp--session-id))
                           (and context (list :context context)))))
      (setq agent-lsp--request request)
      (agent-lsp--flush-changes server)
      (agent-lsp--set-status "working: waiting for the model")
      (display-buffer agent-lsp--buffer)
      (condition-case err
          (plist-put request :id
                     (agent-lsp--async-request
                      server :agent/ask params
                      :success-fn (lambda (result) (agent-lsp--on-answer request result))
                      :error-fn (lambda (error) (agent-lsp--on-error request error))
                      ;; An ask runs as long as it needs; `agent-lsp-cancel' stops it.
                      :timeout nil))
        (error (agent-lsp--finish request (format "**Error**: %s" (error-message-string err)))
               (signal (car err) (cdr err))))
      request)))

;;;###autoload
(defun agent-lsp-cancel ()
  "Cancel the running ask (`$/cancelRequest'; the server answers RequestCancelled)."
  (interactive)
  (let ((request agent-lsp--request))
    (unless request
      (user-error "No agent-lsp ask is running"))
    (unless (plist-get request :cancelling)
      (plist-put request :cancelling t)
      (agent-lsp--set-status "cancelling…")
      (jsonrpc-notify (plist-get request :server) :$/cancelRequest
                      (list :id (plist-get request :id)))
      ;; The server's -32800 reply ends the ask; don't wait forever for it.
      (plist-put request :cancel-timer
                 (run-with-timer
                  10 nil (lambda ()
                           (agent-lsp--finish
                            request "_(cancelled; the server did not confirm)_")))))))

;;;###autoload
(defun agent-lsp-new-conversation ()
  "Start a new conversation; a running ask is cancelled."
  (interactive)
  (let ((request agent-lsp--request)
        (server agent-lsp--conversation-server))
    (when request
      (agent-lsp-cancel)
      (agent-lsp--finish request "_(cancelled)_"))
    (when (and server agent-lsp--session-id (jsonrpc-running-p server))
      (agent-lsp--async-request server :agent/endSession
                                (list :sessionId agent-lsp--session-id)
                                :success-fn #'ignore :error-fn #'ignore))
    (setq agent-lsp--conversation-server nil
          agent-lsp--session-id nil)
    (agent-lsp--trace-insert "-- new conversation --")))

;;;###autoload
(defun agent-lsp-compact ()
  "Compact the conversation now (`agent/compact').
Old tool outputs become notes and older turns the model's summary; the
result is a line in the conversation and the trace."
  (interactive)
  (when agent-lsp--request
    (user-error "An ask is running; compact after it"))
  (let ((server agent-lsp--conversation-server)
        (session agent-lsp--session-id))
    (unless (and server session (jsonrpc-running-p server))
      (user-error "No agent-lsp conversation to compact yet"))
    (agent-lsp--say "_compacting the conversation…_\n")
    (agent-lsp--async-request
     server :agent/compact (list :sessionId session)
     :success-fn (lambda (result)
                   (let ((summary (agent-lsp-compaction-summary result)))
                     (agent-lsp--trace-insert
                      (format "%s ⇣ %s" (format-time-string "%H:%M:%S") summary))
                     (agent-lsp--say (format "_(%s)_\n\n" summary))))
     :error-fn (lambda (error)
                 (agent-lsp--say (format "**Error** (%s): %s\n\n" (plist-get error :code)
                                         (plist-get error :message))))
     :timeout nil)))

;;;###autoload
(defun agent-lsp-list-tools ()
  "Show the tools the agent can call in `*agent-lsp-tools*'."
  (interactive)
  (let* ((server (agent-lsp--ensure-server))
         (tools (plist-get (jsonrpc-request server :agent/listTools (make-hash-table)) :tools)))
    (with-current-buffer (agent-lsp--get-buffer agent-lsp--tools-buffer #'agent-lsp-conversation-mode)
      (let ((inhibit-read-only t))
        (erase-buffer)
        (insert "# agent-lsp tools: " (agent-lsp--server-root server) "\n\n")
        (seq-doseq (tool tools)
          (let* ((hints (plist-get tool :annotations))
                 (kind (cond ((eq (plist-get hints :readOnlyHint) t) " (read-only)")
                             ((eq (plist-get hints :destructiveHint) t) " (destructive)")
                             (t "")))
                 (description (car (split-string (or (plist-get tool :description) "") "\n"))))
            (insert (format "- **%s**%s: %s\n" (plist-get tool :name) kind description)))))
      (goto-char (point-min)))
    (pop-to-buffer agent-lsp--tools-buffer)))

;;; The model endpoint

(defun agent-lsp-format-check (result)
  "The text of an `agent/checkConnection' RESULT: a mark and a sentence per check."
  (concat (mapconcat (lambda (check)
                       (format "%s %s: %s" (if (eq (plist-get check :ok) t) "✓" "✗")
                               (plist-get check :name) (plist-get check :message)))
                     (plist-get result :checks) "\n")
          "\n\n"
          (if (eq (plist-get result :ok) t)
              "The endpoint works."
            "The endpoint does not work yet.")
          "\n"))

(defun agent-lsp--request (method params timeout)
  "Send METHOD with PARAMS to the project's server and wait up to TIMEOUT seconds.
A JSON-RPC error becomes a `user-error' with the server's message."
  (condition-case err
      (jsonrpc-request (agent-lsp--ensure-server) method params :timeout timeout)
    (jsonrpc-error
     (user-error "agent-lsp: %s"
                 (or (alist-get 'jsonrpc-error-message (cdr err)) (error-message-string err))))))

;;;###autoload
(defun agent-lsp-check-connection ()
  "Check the model endpoint: key, URL, model; show what works and what to fix.
The result is in `*agent-lsp-check*'; returns it (a plist)."
  (interactive)
  (let ((result (agent-lsp--request :agent/checkConnection (make-hash-table)
                                    agent-lsp--check-timeout)))
    (with-current-buffer (agent-lsp--get-buffer agent-lsp--check-buffer
                                                #'agent-lsp-conversation-mode)
      (let ((inhibit-read-only t))
        (erase-buffer)
        (insert "# agent-lsp connection check\n\n" (agent-lsp-format-check result)))
      (goto-char (point-min)))
    (display-buffer agent-lsp--check-buffer)
    (message "agent-lsp: %s" (if (eq (plist-get result :ok) t)
                                 "the model endpoint works"
                               "the model endpoint does not work yet; see *agent-lsp-check*"))
    result))

;;;###autoload
(defun agent-lsp-select-model (model)
  "Use MODEL, chosen from the models the endpoint lists (`agent/listModels').
Sets :model in `agent-lsp-settings' for this session and sends it to the
running servers; keep it with `customize-variable' or in the user file
\(agent-lsp config set model NAME)."
  (interactive
   (let* ((result (agent-lsp--request :agent/listModels (make-hash-table) 30))
          (ids (mapcar (lambda (m) (plist-get m :id)) (plist-get result :models)))
          (current (plist-get result :current)))
     (list (completing-read (format "Model (current %s): " current) ids nil nil nil nil current))))
  (when (or (not (stringp model)) (string-blank-p model))
    (user-error "No model chosen"))
  (setq agent-lsp-settings (plist-put (copy-sequence agent-lsp-settings) :model model))
  (agent-lsp-apply-settings)
  (message "agent-lsp: model %s for this session" model)
  model)

;;; Checkpoints: what each ask changed, and undoing it

(defun agent-lsp--local-time (stamp)
  "The ISO 8601 UTC STAMP of a checkpoint in local time, as the terminal shows it."
  (condition-case nil
      (format-time-string "%Y-%m-%d %H:%M" (parse-iso8601-time-string stamp))
    (error stamp)))

(defun agent-lsp-format-checkpoints (checkpoints)
  "Lines for CHECKPOINTS (from `agent/checkpoints').
The same as `agent-lsp checkpoints' prints in a terminal."
  (let (lines)
    (seq-doseq (checkpoint checkpoints)
      (let ((state (plist-get checkpoint :state))
            (files (plist-get checkpoint :files)))
        (push (format "%3s  %s  %s%s" (plist-get checkpoint :id)
                      (agent-lsp--local-time (plist-get checkpoint :time))
                      (plist-get checkpoint :prompt)
                      (if (equal state "done") "" (format " [%s]" state)))
              lines)
        (seq-doseq (file files)
          (let* ((added (plist-get file :added))
                 (removed (plist-get file :removed))
                 (counts (delq nil (list (and (numberp added) (> added 0) (format "+%d" added))
                                         (and (numberp removed) (> removed 0)
                                              (format "-%d" removed))))))
            (push (format "       %s %s%s"
                          (pcase (plist-get file :status)
                            ("added" "A") ("modified" "M") ("deleted" "D") (_ "?"))
                          (plist-get file :path)
                          (if counts (format " (%s)" (string-join counts " ")) ""))
                  lines)))
        (when (seq-empty-p files) (push "       (no files changed)" lines))
        (seq-doseq (note (plist-get checkpoint :notes))
          (push (concat "       note: " note) lines))))
    (nreverse lines)))

(defun agent-lsp-format-rewind (result checkpoint)
  "Lines for the `agent/rewind' RESULT of CHECKPOINT.
The same as `agent-lsp rewind' prints in a terminal."
  (let ((dry (eq (plist-get result :dryRun) t))
        (in-editor (append (plist-get result :inEditor) nil))
        (restored (plist-get result :restored))
        (conflicts (plist-get result :conflicts))
        lines)
    (seq-doseq (path restored)
      (push (format "%s: %s%s" (if dry "would restore" "restored") path
                    (if (member path in-editor) " (in the editor, unsaved)" ""))
            lines))
    (seq-doseq (conflict conflicts)
      (push (format "%s (changed since): %s: %s" (if dry "would keep" "kept")
                    (plist-get conflict :path) (plist-get conflict :reason))
            lines))
    (when (and (seq-empty-p restored) (seq-empty-p conflicts))
      (push "no files to put back" lines))
    (when (eq (plist-get result :conversationTruncated) t)
      (push (format "conversation %s back to before ask %s" (if dry "would be cut" "cut")
                    checkpoint)
            lines))
    (nreverse lines)))

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

(defun agent-lsp--list-checkpoints ()
  "The conversation's checkpoints (a vector of plists)."
  (pcase-let ((`(,server ,session) (agent-lsp--session-server)))
    (plist-get (jsonrpc-request server :agent/checkpoints (list :sessionId session))
               :checkpoints)))

(defun agent-lsp--read-checkpoint (prompt)
  "Read a checkpoint id with PROMPT; the default is the latest ask's."
  (let* ((checkpoints (append (agent-lsp--list-checkpoints) nil))
         (choices (mapcar (lambda (c) (format "%s  %s" (plist-get c :id) (plist-get c :prompt)))
                          checkpoints)))
    (unless checkpoints (user-error "No checkpoints in this conversation"))
    (car (split-string (completing-read prompt choices nil t nil nil (car (last choices)))))))

;;;###autoload
(defun agent-lsp-checkpoints ()
  "List the conversation's asks and the files each changed.
They are shown in `*agent-lsp-checkpoints*'."
  (interactive)
  (let ((lines (agent-lsp-format-checkpoints (agent-lsp--list-checkpoints))))
    (with-current-buffer (agent-lsp--get-buffer agent-lsp--checkpoints-buffer
                                                #'agent-lsp-trace-mode)
      (let ((inhibit-read-only t))
        (erase-buffer)
        (insert (if lines (string-join lines "\n") "no checkpoints in this conversation") "\n")
        (goto-char (point-min))))
    (display-buffer agent-lsp--checkpoints-buffer)))

;;;###autoload
(defun agent-lsp-diff (checkpoint)
  "Show what ask CHECKPOINT changed as a unified diff in `*agent-lsp-diff*'."
  (interactive (list (agent-lsp--read-checkpoint "Show the changes of ask: ")))
  (pcase-let* ((`(,server ,session) (agent-lsp--session-server))
               (files (plist-get (jsonrpc-request server :agent/diff
                                                  (list :sessionId session
                                                        :checkpointId checkpoint))
                                 :files)))
    (with-current-buffer (get-buffer-create agent-lsp--diff-buffer)
      (let ((inhibit-read-only t))
        (erase-buffer)
        (seq-doseq (file files)
          (insert (if (eq (plist-get file :binary) t)
                      (format "Binary file %s %s\n" (plist-get file :path) (plist-get file :status))
                    (plist-get file :diff))))
        (when (= (buffer-size) 0) (insert (format "(ask %s changed no files)\n" checkpoint))))
      (diff-mode)
      (setq buffer-read-only t)
      (goto-char (point-min)))
    (display-buffer agent-lsp--diff-buffer)))

;;;###autoload
(defun agent-lsp-rewind (checkpoint &optional force)
  "Undo ask CHECKPOINT and every later one; the agent forgets them too.
A dry run first lists what will be restored and what is kept because it
changed since the agent's change; you confirm.  With FORCE (a prefix
argument), don't ask."
  (interactive (list (agent-lsp--read-checkpoint "Undo ask (and later ones): ")
                     current-prefix-arg))
  (when agent-lsp--request
    (user-error "An ask is running (M-x agent-lsp-cancel stops it)"))
  (pcase-let* ((`(,server ,session) (agent-lsp--session-server))
               (params (list :sessionId session :checkpointId checkpoint)))
    (when (or force
              (yes-or-no-p
               (format "%s\nUndo ask %s and later? "
                       (string-join
                        (agent-lsp-format-rewind
                         (jsonrpc-request server :agent/rewind
                                          (append params (list :dryRun t)))
                         checkpoint)
                        "\n")
                       checkpoint)))
      (let* ((result (jsonrpc-request server :agent/rewind params))
             (lines (agent-lsp-format-rewind result checkpoint)))
        (agent-lsp--say (format "_Undone: ask %s and later (the agent forgot them)._\n\n%s\n\n"
                                checkpoint
                                (mapconcat (lambda (line) (concat "- " line)) lines "\n")))
        (agent-lsp--revert-changed-buffers (agent-lsp--server-root server))
        (message "agent-lsp: undid ask %s: %d restored, %d kept" checkpoint
                 (length (plist-get result :restored)) (length (plist-get result :conflicts)))
        result))))

;;;###autoload
(defun agent-lsp-grants ()
  "List the conversation's \"always\" permission answers; revoke the one you pick.
Each is bound to one exact call; once revoked, that call is asked about again.
\[keyboard-quit] revokes nothing."
  (interactive)
  (pcase-let* ((`(,server ,session) (agent-lsp--session-server))
               (grants (append (plist-get (jsonrpc-request server :agent/grants
                                                           (list :sessionId session))
                                          :grants)
                               nil))
               (choices nil))
    (unless grants
      (user-error "No permission grants in this conversation"))
    (dolist (grant grants)
      (let ((label (agent-lsp-format-grant grant)))
        (when (assoc label choices)     ; two calls with one title: tell them apart
          (setq label (format "%s [%s]" label (plist-get grant :grantId))))
        (push (cons label grant) choices)))
    (let* ((picked (completing-read "Revoke a permission grant: " (reverse choices) nil t))
           (grant (cdr (assoc picked choices))))
      (when grant
        (let ((result (jsonrpc-request server :agent/revokeGrant
                                       (list :sessionId session
                                             :grantId (plist-get grant :grantId)))))
          (message (if (eq (plist-get result :revoked) t)
                       "agent-lsp: revoked: %s"
                     "agent-lsp: already gone: %s")
                   picked)
          result)))))

(defun agent-lsp-format-grant (grant)
  "One line for GRANT (a plist of `agent/grants'): the answer, the tool, the call."
  (format "%s  %s: %s" (plist-get grant :decision) (plist-get grant :toolName)
          (plist-get grant :title)))

;;; The bash sandbox: what confines the agent's commands here

;; In the words of every client (tests/support/sandbox_cases.json): a kind, a
;; one-line summary and the report's lines, from the server's fields only.

(defun agent-lsp--given (value)
  "Non-nil if VALUE is a JSON value other than null, false or \"\"."
  (and value (not (memq value '(:json-false :null :false))) (not (equal value ""))))

(defun agent-lsp-sandbox-kind (status)
  "\"full\", \"weakened\" (a fallback form), \"off\" (the user's choice) or \"none\"
\(the settings ask for a sandbox this system cannot give), for STATUS (a plist of
`agent/sandboxStatus')."
  (cond ((equal (plist-get status :mode) "off") "off")
        ((not (eq (plist-get status :enforced) t)) "none")
        ((or (agent-lsp--given (plist-get status :fallback))
             (> (length (plist-get status :weakened)) 0))
         "weakened")
        (t "full")))

(defun agent-lsp--sandbox-layers (status)
  "The layers line of STATUS: a mark for each layer, in force or not."
  (let* ((layers (plist-get status :layers))
         (ns (eq (plist-get layers :namespaces) t))
         (landlock (eq (plist-get layers :landlock) t))
         (limit (and (agent-lsp--given (plist-get layers :processLimit))
                     (plist-get layers :processLimit)))
         (mark (lambda (on text) (concat (if on "✓ " "✗ ") text))))
    (concat "layers: "
            (string-join
             (list (funcall mark ns (if (and ns (agent-lsp--given (plist-get status :bwrap)))
                                        (format "namespaces (%s)" (plist-get status :bwrap))
                                      "namespaces"))
                   (funcall mark (eq (plist-get layers :networkNamespace) t) "network namespace")
                   (funcall mark landlock (if landlock
                                              (format "Landlock ABI %s" (plist-get status :landlockAbi))
                                            "Landlock"))
                   (funcall mark (eq (plist-get layers :seccomp) t) "seccomp")
                   (funcall mark limit (if limit (format "process limit (%s)" limit) "process limit")))
             " · "))))

(defun agent-lsp--sandbox-network (status)
  "The network line of STATUS."
  (let ((domains (mapconcat #'identity (plist-get status :allowedDomains) ", "))
        (access (plist-get status :networkAccess)))
    (cond ((equal access "none")
           ;; The hosts were asked for, but this system cannot give the proxy its own network.
           (if (string-empty-p domains)
               "network: none (a command asks you first)"
             (format "network: none; allowedDomains (%s) need a network namespace" domains)))
          ((equal access "allowedDomains") (format "network: only %s, through the proxy" domains))
          (t (format "network: %s" access)))))

(defun agent-lsp-sandbox-view (status)
  "What to show for STATUS (a plist of `agent/sandboxStatus').
A plist (:kind KIND :summary LINE :lines LINES), KIND as
`agent-lsp-sandbox-kind' says."
  (let ((kind (agent-lsp-sandbox-kind status))
        (mode (format "%s" (plist-get status :mode))))
    (pcase kind
      ("off"
       (list :kind kind :summary "sandbox off: bash commands run with your full rights"
             :lines '("mode: off"
                      "bash commands run with your full rights: nothing is hidden or limited")))
      ("none"
       (let ((reason (if (agent-lsp--given (plist-get status :reason))
                         (plist-get status :reason)
                       "this system offers no sandbox")))
         (list :kind kind
               :summary (format "no sandbox: %s; every bash call asks first" reason)
               :lines (list (format "mode: %s, not enforced: %s" mode reason)
                            "every bash call asks for your permission first, and runs with your rights"))))
      (_
       (let* ((roots (append (plist-get status :writableRoots) nil))
              (hidden (append (plist-get status :hiddenPaths) nil))
              (weakened (append (plist-get status :weakened) nil))
              (fallback (and (agent-lsp--given (plist-get status :fallback))
                             (plist-get status :fallback)))
              (limits (plist-get status :limits))
              (lines
               (list (concat "mode: " mode)
                     (agent-lsp--sandbox-layers status)
                     (agent-lsp--sandbox-network status)
                     (if roots
                         (format "writable: %s and each call's private $TMPDIR"
                                 (string-join roots ", "))
                       "writable: only each call's private $TMPDIR")
                     (format "limits: %s processes · files up to %s MB · %s MB of memory per process"
                             (agent-lsp--thousands (plist-get limits :processes))
                             (agent-lsp--thousands (plist-get limits :fileSizeMB))
                             (agent-lsp--thousands (plist-get limits :memoryMB))))))
         (when hidden
           (setq lines (append lines (list (concat "hidden from commands: "
                                                   (string-join hidden ", "))))))
         (when (equal kind "weakened")
           (setq lines (append lines
                               (list "" (concat "weaker than the full sandbox:"
                                                (if fallback (concat " " fallback) "")))
                               (mapcar (lambda (promise) (concat "- " promise)) weakened))))
         (list :kind kind
               :summary (if (equal kind "full")
                            (format "sandbox: %s, every layer in force" mode)
                          (format "sandbox: %s, weaker here: %s" mode
                                  (or fallback (car weakened) "")))
               :lines lines))))))

;;;###autoload
(defun agent-lsp-sandbox ()
  "Show what confines the agent's bash commands in this project.
The server's `agent/sandboxStatus' in `*agent-lsp-sandbox*': the mode, the
layers in force (namespaces, network namespace, Landlock, seccomp, process
limit), the network, where commands may write, the limits and agent-lsp's files
they may not read.  Where the system refuses namespaces the server uses a
weaker form: the summary then says why (bubblewrap's own message), the last
lines what does not hold in full, and a warning says so too (also when the
sandbox is off or this system has none).  Returns the view (a plist, see
`agent-lsp-sandbox-view')."
  (interactive)
  (let* ((server (agent-lsp--ensure-server))
         (view (agent-lsp-sandbox-view
                (agent-lsp--request :agent/sandboxStatus (make-hash-table) 30))))
    (with-current-buffer (agent-lsp--get-buffer agent-lsp--sandbox-buffer
                                                #'agent-lsp-conversation-mode)
      (let ((inhibit-read-only t))
        (erase-buffer)
        (insert "# agent-lsp sandbox: " (agent-lsp--server-root server) "\n\n"
                (plist-get view :summary) "\n\n"
                (string-join (plist-get view :lines) "\n") "\n"))
      (goto-char (point-min)))
    (display-buffer agent-lsp--sandbox-buffer)
    (if (equal (plist-get view :kind) "full")
        (message "agent-lsp: %s" (plist-get view :summary))
      (display-warning 'agent-lsp (plist-get view :summary) :warning))
    view))

;;;###autoload
(defun agent-lsp-show ()
  "Show the conversation buffer `*agent-lsp*'."
  (interactive)
  (display-buffer (agent-lsp--get-buffer agent-lsp--buffer #'agent-lsp-conversation-mode)))

;;;###autoload
(defun agent-lsp-trace ()
  "Show the tool trace buffer."
  (interactive)
  (pop-to-buffer (agent-lsp--get-buffer agent-lsp--trace-buffer #'agent-lsp-trace-mode)))

;;;###autoload
(defun agent-lsp-apply-settings ()
  "Send `agent-lsp-settings' to the running agent-lsp servers."
  (interactive)
  (dolist (server (cl-remove-if-not #'jsonrpc-running-p agent-lsp--servers))
    (jsonrpc-notify server :workspace/didChangeConfiguration
                    (list :settings (list :agentLsp (agent-lsp--settings-object))))))

;;;###autoload
(defun agent-lsp-shutdown ()
  "Shut down the agent-lsp server of the current project."
  (interactive)
  (let ((server (agent-lsp--live-server (agent-lsp--root))))
    (unless server (user-error "No agent-lsp server runs for this project"))
    (eglot-shutdown server)))

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
    (define-key map "s" #'agent-lsp-sandbox)
    map)
  "Keymap of agent-lsp commands.
Bind it to a prefix, e.g. (global-set-key (kbd \"C-c a\") agent-lsp-command-map).")

(provide 'agent-lsp)
;;; agent-lsp.el ends here
