;;; agent-lsp-ask.el --- Asking the agent-lsp agent  -*- lexical-binding: t; -*-

;;; Commentary:

;; The conversation's commands: `agent-lsp-ask' (an active region goes along as
;; the ask's context; a built-in /command runs its action, see
;; agent-lsp-commands), its answer or error, `agent-lsp-cancel',
;; `agent-lsp-new-conversation', `agent-lsp-compact', and `agent-lsp-list-tools'.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'agent-lsp-core)
(require 'agent-lsp-trace)
(require 'agent-lsp-transcript)
(require 'agent-lsp-checkpoints)
(require 'agent-lsp-commands)
(require 'agent-lsp-mcp)

(defconst agent-lsp--tools-buffer "*agent-lsp-tools*")

(defvar agent-lsp--asks 0 "Counter for workDoneTokens.")

(defun agent-lsp--on-answer (request result)
  "Show the RESULT of `agent/ask' REQUEST and keep its session."
  (when (eq request agent-lsp--request)
    (setq agent-lsp--session-id (plist-get result :sessionId))
    (let ((checkpoint (plist-get result :checkpointId)))
      ;; For the completion of agent-lsp-diff and agent-lsp-rewind, without a request.
      (when (and (stringp checkpoint)
                 (not (cl-find checkpoint agent-lsp--checkpoints
                               :key (lambda (c) (plist-get c :id)) :test #'equal)))
        (setq agent-lsp--checkpoints
              (vconcat agent-lsp--checkpoints
                       (list (list :id checkpoint :prompt (plist-get request :prompt)))))))
    (let* ((calls (length (plist-get result :toolCalls)))
           (answer (plist-get result :answer))
           (stop (let ((note (plist-get result :stopNote)))
                   (and (stringp note) (agent-lsp-escape-control note))))
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
       ((eql code agent-lsp-error-request-cancelled)
        (agent-lsp--finish request "_(cancelled)_"))
       ((agent-lsp--server-ended (plist-get request :server))
        ;; jsonrpc's own error for a dead process ("Server died", -1): say what happened.
        (agent-lsp--finish
         request (format "**Error**: the agent-lsp server %s.\n_The next ask starts a new conversation._"
                         (agent-lsp--server-ended (plist-get request :server))))
        (setq agent-lsp--session-id nil))
       (t
        (let ((text (format "**Error** (%s): %s" code (agent-lsp--error-text error))))
          (when (and (eql code agent-lsp-error-invalid-params)
                     (equal (plist-get data :field) "sessionId"))
            (setq agent-lsp--session-id nil)
            (setq text (concat text "\n_The next ask starts a new conversation._")))
          (agent-lsp--finish request text)))))))

(defun agent-lsp--server-ended (server)
  "How SERVER's process ended, as Neovim says it (\"was killed by signal 9\",
\"exited (code 1)\"); nil while it runs."
  (let ((process (and server (jsonrpc--process server))))
    (when (and process (not (process-live-p process)))
      (if (eq (process-status process) 'signal)
          (format "was killed by signal %d" (process-exit-status process))
        (format "exited (code %d)" (process-exit-status process))))))

;;; The selection

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

;;; Commands

(defun agent-lsp--run-builtin (name rest)
  "Run the built-in command NAME (/NAME REST typed as a prompt)."
  (cond
   ((equal name "undo")
    (agent-lsp-rewind (if (string-empty-p rest)
                          (let ((latest (car (last (append agent-lsp--checkpoints nil)))))
                            (or (plist-get latest :id)
                                (user-error "No checkpoints in this conversation")))
                        rest)))
   ((not (string-empty-p rest)) (user-error "/%s takes no arguments" name))
   ((equal name "compact") (agent-lsp-compact))
   ((equal name "new") (agent-lsp-new-conversation))
   ((equal name "checkpoints") (agent-lsp-checkpoints))))

(defun agent-lsp-ask (prompt &optional region)
  "Ask the agent PROMPT in the current project; show the answer in `*agent-lsp*'.
Interactively, an active region in a file buffer goes along as REGION: the
model sees the file and the selected text (a list (BUFFER START END)).
In the minibuffer, TAB completes a /command typed first.  A built-in one runs
its command instead of an ask: /compact `agent-lsp-compact', /new
`agent-lsp-new-conversation', /checkpoints `agent-lsp-checkpoints', /undo [ID]
`agent-lsp-rewind' (default: the latest ask).  A prompt file's /NAME args is
sent as typed (the server expands it), as is an unknown /word."
  (interactive (let ((region (agent-lsp--region)))
                 (list (agent-lsp--read-prompt "Ask the agent: ") region)))
  (when (or (not (stringp prompt)) (string-blank-p prompt))
    (user-error "The prompt is empty"))
  (let ((builtin (agent-lsp--builtin prompt)))
    (if builtin
        (agent-lsp--run-builtin (car builtin) (cdr builtin))
      (agent-lsp--send prompt region))))

(defun agent-lsp--send (prompt region)
  "Send PROMPT (with REGION, see `agent-lsp-ask') as `agent/ask'.
Return the request.  Nothing waits: while the project's server starts the
request waits for it (it is the running ask: `agent-lsp-cancel' drops it)."
  (when agent-lsp--request
    (user-error "An ask is already running (M-x agent-lsp-cancel stops it)"))
  (let* ((root (agent-lsp--ask-root))
         (default-directory root)
         (request (list :root root :prompt prompt :starting t)))
    (when agent-lsp-save-before-ask
      (save-some-buffers nil (lambda ()
                               (and buffer-file-name
                                    (string-prefix-p root (expand-file-name buffer-file-name))))))
    (setq agent-lsp--request request)
    (condition-case err
        (agent-lsp--with-server
         (lambda (server)
           (when (eq agent-lsp--request request)
             (let ((default-directory root))
               (agent-lsp--send-to server request region))))
         (lambda () (when (eq agent-lsp--request request) (setq agent-lsp--request nil))))
      (error (when (eq agent-lsp--request request) (setq agent-lsp--request nil))
             (signal (car err) (cdr err))))
    request))

(defun agent-lsp--send-to (server request region)
  "Send REQUEST (a plist with :root and :prompt) to SERVER, with REGION."
  (let ((root (plist-get request :root))
        (prompt (plist-get request :prompt)))
    (unless (eq server agent-lsp--conversation-server)
      (agent-lsp--start-conversation server root))
    (agent-lsp--say (format "## You\n\n%s\n\n%s## Agent\n\n" prompt
                            (if region (concat (agent-lsp--region-note region) "\n\n") "")))
    (let* ((token (format "agent-lsp-emacs-%d" (cl-incf agent-lsp--asks)))
           (marker (with-current-buffer agent-lsp--buffer (copy-marker (point-max))))
           (context (and region (agent-lsp--context region server)))
           (params (append (list :prompt prompt :workDoneToken token)
                           (and agent-lsp--session-id
                                (list :sessionId agent-lsp--session-id))
                           (and context (list :context context)))))
      ;; The same plist: `agent-lsp--request' stays eq to it.
      (plist-put request :starting nil)
      (plist-put request :server server)
      (plist-put request :token token)
      (plist-put request :status-marker marker)
      (agent-lsp--flush-changes server)
      (agent-lsp--set-status "working: starting")
      (display-buffer agent-lsp--buffer)
      ;; First, whether a folder's own MCP server (new, or changed since it was approved)
      ;; waits for approval: said once in the conversation, as VS Code says it.
      (plist-put request :listing t)
      (let ((send (lambda ()
                    (when (and (eq agent-lsp--request request) (plist-get request :listing))
                      (plist-put request :listing nil)
                      (if (agent-lsp--server-ended server)
                          ;; It died meanwhile: said as a death under a sent ask is.
                          (agent-lsp--on-error request (list :code -1 :message "Server died"))
                        ;; A failure is said in the conversation (`agent-lsp--send-ask').
                        (ignore-errors (agent-lsp--send-ask server request params)))))))
        (condition-case nil
            (agent-lsp--call
             server agent-lsp-method-mcp-servers (make-hash-table)
             (lambda (result)
               (when (eq agent-lsp--request request)
                 (let ((notes (agent-lsp--mcp-awaiting-notes
                               root (plist-get result :servers)
                               "M-x agent-lsp-mcp-servers approves it")))
                   (when notes
                     (agent-lsp--insert-above-status
                      (lambda () (insert (string-join notes "\n\n") "\n"))))))
               (funcall send))
             :timeout 5
             :on-error (lambda (_text) (funcall send)))
          (error (funcall send))))
      request)))

(defun agent-lsp--send-ask (server request params)
  "Send REQUEST's `agent/ask' with PARAMS to SERVER."
  (agent-lsp--set-status "working: waiting for the model")
  (condition-case err
      (plist-put request :id
                 (agent-lsp--async-request
                  server agent-lsp-method-ask params
                  :success-fn (lambda (result) (agent-lsp--on-answer request result))
                  :error-fn (lambda (error) (agent-lsp--on-error request error))
                  ;; An ask runs as long as it needs; `agent-lsp-cancel' stops it.
                  :timeout nil))
    (error (agent-lsp--finish request (format "**Error**: %s" (error-message-string err)))
           (signal (car err) (cdr err)))))

(defun agent-lsp-cancel ()
  "Cancel the running ask (`$/cancelRequest'; the server answers RequestCancelled)."
  (interactive)
  (let ((request agent-lsp--request))
    (unless request
      (user-error "No agent-lsp ask is running"))
    (cond
     ((plist-get request :starting)
      ;; Not sent yet: its server is starting.
      (setq agent-lsp--request nil)
      (message "agent-lsp: cancelled before it was sent"))
     ((plist-get request :listing)
      ;; Not sent yet: its MCP servers are being listed.
      (agent-lsp--finish request "_(cancelled)_"))
     ((not (plist-get request :cancelling))
      (plist-put request :cancelling t)
      (agent-lsp--set-status "cancelling…")
      (jsonrpc-notify (plist-get request :server) :$/cancelRequest
                      (list :id (plist-get request :id)))
      ;; The server's -32800 reply ends the ask; don't wait forever for it.
      (plist-put request :cancel-timer
                 (run-with-timer
                  10 nil (lambda ()
                           (agent-lsp--finish
                            request "_(cancelled; the server did not confirm)_"))))))))

(defun agent-lsp-new-conversation ()
  "Start a new conversation; a running ask is cancelled.
The old one is kept (`agent-lsp-history' reopens it,
`agent-lsp-delete-conversation' deletes it)."
  (interactive)
  (let ((request agent-lsp--request))
    (when request
      (agent-lsp-cancel)
      (agent-lsp--finish request "_(cancelled)_"))
    (setq agent-lsp--conversation-server nil
          agent-lsp--session-id nil
          agent-lsp--checkpoints nil)
    (agent-lsp--trace-insert "-- new conversation --")
    (agent-lsp--say "_(a new conversation: the next ask starts it)_\n\n")
    (message "agent-lsp: a new conversation starts with the next ask")))

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
     server agent-lsp-method-compact (list :sessionId session)
     :success-fn (lambda (result)
                   (let ((summary (agent-lsp-compaction-summary result)))
                     (agent-lsp--trace-insert
                      (format "%s ⇣ %s" (format-time-string "%H:%M:%S") summary))
                     (agent-lsp--say (format "_(%s)_\n\n" summary))))
     :error-fn (lambda (error)
                 (agent-lsp--say (format "**Error** (%s): %s\n\n" (plist-get error :code)
                                         (plist-get error :message))))
     :timeout nil)))

(defun agent-lsp-list-tools ()
  "Show the tools the agent can call in `*agent-lsp-tools*'."
  (interactive)
  (agent-lsp--with-server
   (lambda (server)
     (agent-lsp--call server agent-lsp-method-list-tools (make-hash-table)
                      (lambda (result)
                        (agent-lsp--show-tools server (plist-get result :tools)))))))

(defun agent-lsp--show-tools (server tools)
  "Show SERVER's TOOLS in `*agent-lsp-tools*'."
  (with-current-buffer (agent-lsp--get-buffer agent-lsp--tools-buffer
                                              #'agent-lsp-conversation-mode)
    (let ((inhibit-read-only t))
      (erase-buffer)
      (insert "# agent-lsp tools: " (agent-lsp--server-root server) "\n\n")
      (seq-doseq (tool tools)
        ;; An MCP server's tool: its name and description are that server's text.
        (let* ((hints (plist-get tool :annotations))
               (source (plist-get tool :source))
               (notes (delq nil
                            (list (cond ((eq (plist-get hints :readOnlyHint) t) "read-only")
                                        ((eq (plist-get hints :destructiveHint) t) "destructive"))
                                  (when (and (equal (plist-get source :kind) "mcp")
                                             (stringp (plist-get source :server)))
                                    (concat "MCP server "
                                            (agent-lsp-escape-control
                                             (plist-get source :server))))
                                  ;; A language tool: who answers it here.
                                  (when (stringp (plist-get hints :languageSource))
                                    (agent-lsp-escape-control
                                     (plist-get hints :languageSource))))))
               (description (car (split-string (or (plist-get tool :description) "") "\n"))))
          (insert (format "- **%s**%s: %s\n"
                          (agent-lsp-escape-control (format "%s" (plist-get tool :name)))
                          (if notes (concat " (" (string-join notes ", ") ")") "")
                          (agent-lsp-escape-control description))))))
    (goto-char (point-min)))
  (display-buffer agent-lsp--tools-buffer))

(provide 'agent-lsp-ask)
;;; agent-lsp-ask.el ends here
