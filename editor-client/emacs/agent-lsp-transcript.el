;;; agent-lsp-transcript.el --- Conversation and trace buffers of agent-lsp  -*- lexical-binding: t; -*-

;;; Commentary:

;; The `*agent-lsp*' conversation and the `*agent-lsp-trace*' buffers: their modes,
;; appending to them, the running ask's status line and streamed answer, and the
;; server notifications that feed them (`agent/toolActivity', `agent/compaction',
;; `agent/answerDelta', `$/progress').

;;; Code:

(require 'cl-lib)
(require 'diff-mode)  ; the faces of an edit's diff lines
(require 'subr-x)
(require 'agent-lsp-core)
(require 'agent-lsp-trace)

(defconst agent-lsp--buffer "*agent-lsp*")
(defconst agent-lsp--trace-buffer "*agent-lsp-trace*")

(defvar agent-lsp--checkpoints nil
  "The conversation's checkpoints as last listed or answered (a vector of plists),
for the completion of `agent-lsp-diff' and `agent-lsp-rewind'.")

(defalias 'agent-lsp--conversation-parent-mode
  (if (fboundp 'markdown-mode) #'markdown-mode #'text-mode))

(defface agent-lsp-heading '((t :inherit (bold font-lock-function-name-face)))
  "Face of a Markdown heading in the conversation, without `markdown-mode'."
  :group 'agent-lsp)

(defface agent-lsp-code '((t :inherit font-lock-constant-face))
  "Face of Markdown code in the conversation, without `markdown-mode'."
  :group 'agent-lsp)

(defun agent-lsp--match-fence (limit)
  "Match a fenced code block (``` to ```) starting before LIMIT, for font-lock.
An unclosed one (a block still streaming) runs to the end of the buffer."
  (when (re-search-forward "^[ \t]*```.*$" limit t)
    (let ((start (match-beginning 0)))
      (goto-char (min (1+ (match-end 0)) (point-max)))
      (let ((end (if (re-search-forward "^[ \t]*```[ \t]*$" nil t)
                     (match-end 0)
                   (point-max))))
        (set-match-data (list start end))
        (goto-char end)
        t))))

(defconst agent-lsp--markdown-keywords
  '((agent-lsp--match-fence 0 'agent-lsp-code t)
    ("^#\\{1,6\\} .*$" 0 'agent-lsp-heading)
    ("\\*\\*\\([^*\n]+\\)\\*\\*" 0 'bold)
    ("`[^`\n]+`" 0 'agent-lsp-code))
  "Font-lock of the conversation without `markdown-mode': headings, fenced and
inline code, bold.")

(defvar agent-lsp-conversation-mode-map
  (let ((map (make-sparse-keymap)))
    ;; A read-only view: special-mode's keys (q quits, SPC and DEL scroll), not
    ;; the editing keys of markdown-mode or text-mode.
    (set-keymap-parent map special-mode-map)
    (define-key map "g" nil)
    (define-key map "w" 'agent-lsp-compose)
    (define-key map "h" 'agent-lsp-history)
    (define-key map "o" 'agent-lsp-tool-output-at-point)
    (define-key map (kbd "TAB") #'forward-button)
    (define-key map (kbd "<backtab>") #'backward-button)
    map)
  "Keys of `*agent-lsp*' and the other views in `agent-lsp-conversation-mode'.")

(define-derived-mode agent-lsp-conversation-mode agent-lsp--conversation-parent-mode
  "agent-lsp"
  "Major mode of the `*agent-lsp*' conversation buffer (Markdown).
With `markdown-mode' installed it is derived from it; without, headings,
code and bold are highlighted by the client's own font-lock rules.
\\{agent-lsp-conversation-mode-map}"
  (setq buffer-read-only t)
  (setq-local truncate-lines nil)
  (unless (derived-mode-p 'markdown-mode)
    (setq-local font-lock-defaults '(agent-lsp--markdown-keywords t))
    (setq-local font-lock-multiline t))
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

(defun agent-lsp--followers (buffer)
  "BUFFER's windows whose point is at the end of what was written so far.
That end is the running ask's status line in the conversation (the status
line itself is rewritten at every update), else the buffer's end."
  (let* ((marker (plist-get agent-lsp--request :status-marker))
         (end (if (and marker (eq (marker-buffer marker) buffer))
                  (marker-position marker)
                (with-current-buffer buffer (point-max)))))
    (cl-remove-if-not (lambda (w) (>= (window-point w) end))
                      (get-buffer-window-list buffer nil t))))

(defun agent-lsp--follow (windows)
  "Keep WINDOWS at the end of their buffer, the last line at the bottom.
Only when the end is out of sight does the window scroll, and then only so
far that the end shows on the last line: no recentering into a half-empty
window."
  (dolist (window windows)
    (when (window-live-p window)
      (with-current-buffer (window-buffer window)
        (set-window-point window (point-max))
        (unless (pos-visible-in-window-p (point-max) window)
          (with-selected-window window
            (goto-char (point-max))
            (recenter -1)))))))

(defun agent-lsp--append (name mode text)
  "Append TEXT to buffer NAME (created in MODE).
Where point was at the end, it stays at the end; so do windows there."
  (with-current-buffer (agent-lsp--get-buffer name mode)
    (let ((inhibit-read-only t)
          (at-end (= (point) (point-max)))
          (followers (agent-lsp--followers (current-buffer))))
      (save-excursion
        (goto-char (point-max))
        (insert text))
      (when at-end (goto-char (point-max)))
      (agent-lsp--follow followers))))

(defun agent-lsp--insert-above-status (insert &optional line)
  "Call INSERT to write in the conversation above the running ask's status line.
Without a running ask, at the end.  A block is set off by a blank line; a
LINE (a tool call's) follows another line directly."
  (with-current-buffer (agent-lsp--get-buffer agent-lsp--buffer #'agent-lsp-conversation-mode)
    (let* ((inhibit-read-only t)
           (marker (plist-get agent-lsp--request :status-marker))
           (marker (and marker (eq (marker-buffer marker) (current-buffer)) marker))
           (at-end (= (point) (point-max)))
           (followers (agent-lsp--followers (current-buffer))))
      (save-excursion
        (goto-char (or marker (point-max)))
        (unless (bolp) (insert "\n"))
        (unless (or (bobp) (eq (char-before (1- (point))) ?\n)
                    (and line (get-text-property (1- (point)) 'agent-lsp-call)))
          (insert "\n"))
        (funcall insert)
        (when marker (set-marker marker (point))))
      (when at-end (goto-char (point-max)))
      (agent-lsp--follow followers))))

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
        (let ((inhibit-read-only t)
              (followers (agent-lsp--followers (current-buffer))))
          (save-excursion
            (goto-char marker)
            (delete-region marker (point-max))
            ;; Below the streamed text, on a line of its own.
            (insert (if (memq (char-before) '(nil ?\n)) "" "\n") "_" text "_\n"))
          (agent-lsp--follow followers))
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
              (followers (agent-lsp--followers (current-buffer))))
          (save-excursion
            (goto-char marker)
            (delete-region marker (point-max))
            (unless (and (equal turn (plist-get request :turn))
                         (equal channel (plist-get request :channel)))
              (when (plist-get request :turn)
                ;; A blank line after what came before (text, or a tool call's line).
                (insert (cond ((bolp) (if (eq (char-before (1- (point))) ?\n) "" "\n"))
                              (t "\n\n"))))
              (plist-put request :turn turn)
              (plist-put request :channel channel)
              (plist-put request :text "")
              (plist-put request :answer-start (and (not reasoning) (copy-marker (point))))
              (when reasoning (insert (propertize "> " 'face 'shadow 'font-lock-face 'shadow))))
            ;; face for a buffer without font-lock, font-lock-face for one with.
            (insert (if reasoning
                        (propertize (replace-regexp-in-string "\n" "\n> " delta)
                                    'face 'shadow 'font-lock-face 'shadow)
                      delta))
            (plist-put request :text (concat (plist-get request :text) delta))
            (set-marker marker (point)))
          (agent-lsp--set-status (or (plist-get request :status) "working"))
          (agent-lsp--follow followers))))))

(defvar agent-lsp--finish-functions nil
  "Functions called with an ask's request plist once it ended.")

(defun agent-lsp--finish (request text)
  "End REQUEST: its status line is replaced by TEXT."
  (when (eq request agent-lsp--request)
    (setq agent-lsp--request nil)
    (run-hook-with-args 'agent-lsp--finish-functions request)
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
        agent-lsp--session-id nil
        agent-lsp--checkpoints nil))

(defun agent-lsp--revert-changed-buffers (root)
  "Reload unmodified buffers under ROOT whose files the agent changed."
  (dolist (buffer (buffer-list))
    (with-current-buffer buffer
      (when (and buffer-file-name (not (buffer-modified-p))
                 (string-prefix-p root (expand-file-name buffer-file-name))
                 (file-exists-p buffer-file-name)
                 (not (verify-visited-file-modtime buffer)))
        (revert-buffer t t t)))))

;;; What the server reports while an ask runs

(cl-defmethod eglot-handle-notification
  ((_server agent-lsp-server)
   (_method (eql (agent-lsp-method-symbol agent-lsp-method-tool-activity)))
   &rest params
   &key &allow-other-keys)
  "Add a trace line for the tool call activity in PARAMS.
A finished call gets a line in the conversation too, with a button to its
whole output."
  (agent-lsp--trace-insert (agent-lsp-format-activity params))
  (when (and agent-lsp--request
             (member (plist-get params :status) '("completed" "failed"))
             (stringp (plist-get params :callId)))
    (agent-lsp--tool-line params)))

(declare-function agent-lsp-tool-output "agent-lsp-history")

(defun agent-lsp--tool-line (params)
  "One line in the conversation for the finished tool call of PARAMS."
  (let ((session (plist-get params :sessionId))
        (call (plist-get params :callId))
        (line (substring (agent-lsp-format-activity params) 9)))  ; no time of day
    (agent-lsp--insert-above-status
     (lambda ()
       (let ((start (point)))
         (insert line " ")
         (insert-text-button "[output]"
                             'action (lambda (_) (agent-lsp-tool-output session call))
                             'follow-link t
                             'help-echo "The call's whole output")
         (insert "\n")
         ;; An edit that was made: its diff under its line.
         (when (equal (plist-get params :status) "completed")
           (dolist (edit (agent-lsp-edit-lines (plist-get params :name)
                                               (plist-get params :arguments)))
             (insert (propertize (concat "  ┆ " edit) 'face
                                 (pcase (aref edit 0)
                                   (?+ 'diff-added) (?- 'diff-removed) (_ 'shadow)))
                     "\n")))
         (put-text-property start (point) 'agent-lsp-call (cons session call))))
     t)))

(cl-defmethod eglot-handle-notification
  ((_server agent-lsp-server)
   (_method (eql (agent-lsp-method-symbol agent-lsp-method-ask-progress)))
   &key sessionId phase message
   &allow-other-keys)
  "Show the `starting' PHASE of an ask (its MESSAGE): the MCP servers it waits for, then
those it goes without, as trace lines; the second also stays in the conversation (the
status line follows `$/progress')."
  (when (and (equal phase "starting") (stringp message))
    (let ((text (agent-lsp-escape-control message))
          (request agent-lsp--request))
      (agent-lsp--trace-insert (format "%s … %s" (format-time-string "%H:%M:%S") text))
      (when (and request (or (null agent-lsp--session-id)
                             (equal sessionId agent-lsp--session-id)))
        (plist-put request :starting (1+ (or (plist-get request :starting) 0)))
        (when (> (plist-get request :starting) 1)
          (agent-lsp--insert-above-status (lambda () (insert "_" text "_\n"))))))))

(cl-defmethod eglot-handle-notification
  ((_server agent-lsp-server)
   (_method (eql (agent-lsp-method-symbol agent-lsp-method-compaction)))
   &rest params
   &key &allow-other-keys)
  "Add a trace line for the compaction in PARAMS; the ask's footer mentions it."
  (agent-lsp--trace-insert (agent-lsp-format-compaction params))
  (when agent-lsp--request
    (plist-put agent-lsp--request :compacted (agent-lsp-compaction-summary params))))

(cl-defmethod eglot-handle-notification
  ((_server agent-lsp-server)
   (_method (eql (agent-lsp-method-symbol agent-lsp-method-answer-delta)))
   &key sessionId turn delta
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

;;; A server that is not installed

(defun agent-lsp--say-missing-server (program)
  "Say in the conversation that PROGRAM, the server, was not found, and what to do."
  (agent-lsp--say
   (format "**The agent-lsp server was not found**: `%s` is not on `exec-path` \
(the command line is `agent-lsp-server-command`: %s).

- Install it once: `uv tool install /path/to/agent-lsp` puts `agent-lsp` on `PATH` \
(a checkout of the agent-lsp repository; uv: `pip install uv`).
- Or point Emacs at it: set `agent-lsp-server-command`, e.g. \
`(setq agent-lsp-server-command '(\"uv\" \"run\" \"--directory\" \"/path/to/agent-lsp\" \
\"agent-lsp\" \"--stdio\"))`, or "
           program (mapconcat #'identity agent-lsp-server-command " ")))
  (with-current-buffer agent-lsp--buffer
    (let ((inhibit-read-only t))
      (save-excursion
        (goto-char (point-max))
        (insert-text-button "customize it"
                            'action (lambda (_) (customize-variable 'agent-lsp-server-command))
                            'follow-link t)
        (insert ".\n\n"))))
  (display-buffer agent-lsp--buffer))

(setq agent-lsp-missing-server-function #'agent-lsp--say-missing-server)

;;; Showing the buffers

(defun agent-lsp-show ()
  "Show the conversation buffer `*agent-lsp*'."
  (interactive)
  (display-buffer (agent-lsp--get-buffer agent-lsp--buffer #'agent-lsp-conversation-mode)))

(defun agent-lsp-trace ()
  "Show the tool trace buffer."
  (interactive)
  (pop-to-buffer (agent-lsp--get-buffer agent-lsp--trace-buffer #'agent-lsp-trace-mode)))

(provide 'agent-lsp-transcript)
;;; agent-lsp-transcript.el ends here
