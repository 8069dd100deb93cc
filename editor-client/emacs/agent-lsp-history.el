;;; agent-lsp-history.el --- Tool outputs and past conversations  -*- lexical-binding: t; -*-

;;; Commentary:

;; A tool call's whole output (`agent/toolOutput'), opened from its line in
;; the conversation; and the folder's past conversations (`agent/sessions'),
;; one of which `agent-lsp-history' reopens (`agent/sessionHistory'): it is
;; drawn again in `*agent-lsp*' and the next ask continues it, also after
;; Emacs or the server restarted.

;;; Code:

(require 'cl-lib)
(require 'seq)
(require 'subr-x)
(require 'agent-lsp-core)
(require 'agent-lsp-trace)
(require 'agent-lsp-transcript)
(require 'agent-lsp-commands)

(defconst agent-lsp--output-buffer "*agent-lsp-output*")
(defconst agent-lsp--history-buffer "*agent-lsp-history*")

;;; A tool call's output

(defun agent-lsp-tool-output (session call-id)
  "Show the whole output of tool call CALL-ID of SESSION in `*agent-lsp-output*'."
  (if (and agent-lsp--conversation-server
           (jsonrpc-running-p agent-lsp--conversation-server))
      (agent-lsp--tool-output agent-lsp--conversation-server session call-id)
    (agent-lsp--with-server
     (lambda (server) (agent-lsp--tool-output server session call-id)))))

(defun agent-lsp--tool-output (server session call-id)
  "Ask SERVER for the output of SESSION's CALL-ID; show it when it comes."
  (agent-lsp--call
   server agent-lsp-method-tool-output (list :sessionId session :callId call-id)
   (lambda (result)
     (with-current-buffer (agent-lsp--get-buffer agent-lsp--output-buffer
                                                 #'agent-lsp-trace-mode)
       (let ((inhibit-read-only t))
         (erase-buffer)
         (insert (format "%s: %s%s\n\n"
                         (agent-lsp-call-title result)
                         (if (eq (plist-get result :ok) t) "ok" "failed")
                         (if (eq (plist-get result :truncated) t)
                             " (cut by the server)" ""))
                 (agent-lsp-escape-control (or (plist-get result :output) "") t))
         (goto-char (point-min))))
     (pop-to-buffer agent-lsp--output-buffer))))

(defun agent-lsp-tool-output-at-point ()
  "Show the whole output of the tool call on this line of the conversation."
  (interactive)
  (let ((call (or (get-text-property (point) 'agent-lsp-call)
                  (get-text-property (line-beginning-position) 'agent-lsp-call))))
    (unless call (user-error "No tool call on this line"))
    (agent-lsp-tool-output (car call) (cdr call))))

;;; Past conversations

(defvar agent-lsp-history-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map (kbd "RET") #'agent-lsp-history-reopen)
    (define-key map "g" #'agent-lsp-history)
    (define-key map "D" #'agent-lsp-delete-conversation)
    map)
  "Keys of `*agent-lsp-history*'.")

(define-derived-mode agent-lsp-history-mode special-mode "agent-lsp-history"
  "The folder's past conversations: RET reopens the one at point, D deletes it.
\\{agent-lsp-history-mode-map}")

(defvar-local agent-lsp--history-server nil "The server `*agent-lsp-history*' lists.")

(defun agent-lsp-history-line (session)
  "One line for SESSION (a plist of `agent/sessions')."
  (let ((turns (or (plist-get session :turns) 0))
        (state (plist-get session :state)))
    (format "%s  %3d ask%s  %s%s"
            (format-time-string "%Y-%m-%d %H:%M" (or (plist-get session :updated) 0))
            turns (if (eql turns 1) " " "s")
            (if (member state '("interrupted" "running")) (concat state ": ") "")
            (agent-lsp--one-line (format "%s" (or (plist-get session :title) "")) 80))))

(defun agent-lsp-history ()
  "List the folder's past conversations in `*agent-lsp-history*'; RET reopens one.
Interrupted ones (their server stopped mid-ask) are marked; the next ask
continues a reopened conversation."
  (interactive)
  (agent-lsp--with-server #'agent-lsp--history-list))

(defun agent-lsp--history-list (server)
  "List SERVER's folder's past conversations when it answers."
  (let ((root (agent-lsp--server-root server)))
    (agent-lsp--call
     server agent-lsp-method-sessions (list :workspaceFolder (agent-lsp--folder-uri root))
     (lambda (result)
       (with-current-buffer (get-buffer-create agent-lsp--history-buffer)
         (unless (derived-mode-p 'agent-lsp-history-mode) (agent-lsp-history-mode))
         (setq agent-lsp--history-server server
               default-directory root)
         (let ((inhibit-read-only t)
               (sessions (append (plist-get result :sessions) nil)))
           (erase-buffer)
           (insert "Conversations in " root " (RET reopens one, D deletes it):\n\n")
           (dolist (session sessions)
             (insert (propertize (agent-lsp-history-line session)
                                 'agent-lsp-session session)
                     "\n"))
           (unless sessions (insert "none yet\n"))
           (goto-char (point-min))
           (forward-line 2)))
       (pop-to-buffer agent-lsp--history-buffer)))))

(defun agent-lsp-history-reopen ()
  "Reopen the conversation on this line of `*agent-lsp-history*'."
  (interactive)
  (let ((session (get-text-property (line-beginning-position) 'agent-lsp-session)))
    (unless session (user-error "No conversation on this line"))
    (agent-lsp-reopen agent-lsp--history-server session)))

(defun agent-lsp-delete-conversation ()
  "Delete a conversation for good, once confirmed: its saved files and its
checkpoints (`agent/endSession').  In `*agent-lsp-history*' the one at
point; elsewhere the current one, after which the next ask starts a new
conversation.  (`agent-lsp-new-conversation' deletes nothing.)"
  (interactive)
  (let* ((listed (and (derived-mode-p 'agent-lsp-history-mode)
                      (get-text-property (line-beginning-position) 'agent-lsp-session)))
         (server (if listed agent-lsp--history-server agent-lsp--conversation-server))
         (id (if listed (plist-get listed :sessionId) agent-lsp--session-id))
         (title (if listed
                    (format "\"%s\"" (agent-lsp--one-line
                                      (format "%s" (or (plist-get listed :title) "")) 80))
                  "the current conversation"))
         (current (and id (equal id agent-lsp--session-id)
                       (eq server agent-lsp--conversation-server))))
    (when (and (derived-mode-p 'agent-lsp-history-mode) (not listed))
      (user-error "No conversation on this line"))
    (unless (and server id (jsonrpc-running-p server))
      (user-error "No conversation to delete (M-x agent-lsp-history lists them; D deletes one)"))
    (when (and current agent-lsp--request)
      (user-error "An ask is running in it (M-x agent-lsp-cancel stops it)"))
    (when (let ((use-dialog-box nil))  ; the whole question, never a popup
            (yes-or-no-p
             (format "Delete %s for good (its saved files and its checkpoints: its asks can no longer be undone)? "
                     (if listed (concat "the conversation " title) title))))
      (agent-lsp--call
       server agent-lsp-method-end-session (list :sessionId id)
       (lambda (_result)
         (when (and (equal id agent-lsp--session-id)
                    (eq server agent-lsp--conversation-server))
           (setq agent-lsp--conversation-server nil
                 agent-lsp--session-id nil
                 agent-lsp--checkpoints nil)
           (agent-lsp--trace-insert "-- conversation deleted; a new one --")
           (agent-lsp--say "_(conversation deleted: the next ask starts a new one)_\n\n"))
         (when (get-buffer agent-lsp--history-buffer)
           (agent-lsp--history-list server))
         (message "agent-lsp: deleted %s" title))))))

(defun agent-lsp-reopen (server session)
  "Draw SERVER's conversation SESSION (a plist of `agent/sessions') in
`*agent-lsp*'; the next ask continues it."
  (when agent-lsp--request
    (user-error "An ask is running (M-x agent-lsp-cancel stops it)"))
  (agent-lsp--call
   server agent-lsp-method-session-history (list :sessionId (plist-get session :sessionId))
   (lambda (result)
     (agent-lsp--draw-history server session result)
     (pop-to-buffer agent-lsp--buffer))))

(defun agent-lsp--draw-history (server session result)
  "Draw the conversation SESSION of SERVER from its history RESULT; continue it."
  (let ((root (agent-lsp--server-root server))
        (id (plist-get result :sessionId)))
    (agent-lsp--start-conversation server root)
    (agent-lsp--say (format "_(reopened: %s)_\n\n"
                            (agent-lsp--one-line (format "%s" (plist-get session :title)) 80)))
    (seq-doseq (entry (plist-get result :entries))
      (let ((content (agent-lsp-escape-control (format "%s" (or (plist-get entry :content) ""))
                                               t)))
        (if (equal (plist-get entry :role) "user")
            (agent-lsp--say (format "## You\n\n%s\n\n## Agent\n\n" content))
          (seq-doseq (call (plist-get entry :toolCalls))
            (agent-lsp--tool-line
             (list :sessionId id :callId (plist-get call :id) :name (plist-get call :name)
                   :displayName (plist-get call :displayName)
                   :arguments (plist-get call :arguments)
                   :status (if (eq (plist-get call :ok) t) "completed" "failed")
                   :output (plist-get call :output))))
          (unless (string-empty-p (string-trim content))
            (agent-lsp--say (concat content "\n\n"))))))
    (when (equal (plist-get session :state) "interrupted")
      (agent-lsp--say "_(interrupted: its last ask never finished; ask to go on)_\n\n"))
    (setq agent-lsp--session-id id)
    (message "agent-lsp: reopened; the next ask continues this conversation")))

(provide 'agent-lsp-history)
;;; agent-lsp-history.el ends here
