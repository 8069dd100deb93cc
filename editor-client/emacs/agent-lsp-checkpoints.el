;;; agent-lsp-checkpoints.el --- What agent-lsp asks changed, and undoing it  -*- lexical-binding: t; -*-

;;; Commentary:

;; Checkpoints: `agent-lsp-checkpoints' lists the conversation's asks and the files
;; each changed, `agent-lsp-diff' shows one ask's changes, `agent-lsp-rewind' undoes
;; asks (after a dry run).  The lines are those the terminal client prints.

;;; Code:

(require 'diff-mode)
(require 'parse-time)
(require 'subr-x)
(require 'agent-lsp-core)
(require 'agent-lsp-transcript)

(defconst agent-lsp--checkpoints-buffer "*agent-lsp-checkpoints*")
(defconst agent-lsp--diff-buffer "*agent-lsp-diff*")

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

(defun agent-lsp--fetch-checkpoints (then)
  "Ask for the conversation's checkpoints; call THEN with them (a vector)."
  (pcase-let ((`(,server ,session) (agent-lsp--session-server)))
    (agent-lsp--call server agent-lsp-method-checkpoints (list :sessionId session)
                     (lambda (result)
                       (setq agent-lsp--checkpoints (plist-get result :checkpoints))
                       (funcall then agent-lsp--checkpoints)))))

(defun agent-lsp--read-checkpoint (prompt)
  "Read a checkpoint id with PROMPT; the default, shown, is the latest ask's.
Completes from the checkpoints as last listed (`agent-lsp-checkpoints', an
answer's footer), so nothing waits for the server."
  (let* ((checkpoints (append agent-lsp--checkpoints nil))
         (choices (mapcar (lambda (c) (format "%s  %s" (plist-get c :id) (plist-get c :prompt)))
                          checkpoints))
         (default (car (last choices))))
    (unless checkpoints (user-error "No checkpoints in this conversation"))
    (car (split-string (completing-read (format-prompt prompt (car (split-string default)))
                                        choices nil t nil nil default)))))

;;; Commands

(defun agent-lsp-checkpoints ()
  "List the conversation's asks and the files each changed.
They are shown in `*agent-lsp-checkpoints*' when the server answers."
  (interactive)
  (agent-lsp--fetch-checkpoints
   (lambda (checkpoints)
     (let ((lines (agent-lsp-format-checkpoints checkpoints)))
       (with-current-buffer (agent-lsp--get-buffer agent-lsp--checkpoints-buffer
                                                   #'agent-lsp-trace-mode)
         (let ((inhibit-read-only t))
           (erase-buffer)
           (insert (if lines (string-join lines "\n") "no checkpoints in this conversation")
                   "\n")
           (goto-char (point-min))))
       (display-buffer agent-lsp--checkpoints-buffer)))))

(defun agent-lsp-diff (checkpoint)
  "Show what ask CHECKPOINT changed as a unified diff in `*agent-lsp-diff*'.
The buffer shows when the server answers."
  (interactive (list (agent-lsp--read-checkpoint "Show the changes of ask")))
  (pcase-let ((`(,server ,session) (agent-lsp--session-server)))
    (agent-lsp--call
     server agent-lsp-method-diff (list :sessionId session :checkpointId checkpoint)
     (lambda (result)
       (with-current-buffer (get-buffer-create agent-lsp--diff-buffer)
         (let ((inhibit-read-only t))
           (erase-buffer)
           (seq-doseq (file (plist-get result :files))
             (insert (if (eq (plist-get file :binary) t)
                         (format "Binary file %s %s\n" (plist-get file :path)
                                 (plist-get file :status))
                       (plist-get file :diff))))
           (when (= (buffer-size) 0) (insert (format "(ask %s changed no files)\n" checkpoint))))
         (diff-mode)
         (setq buffer-read-only t)
         (goto-char (point-min)))
       (display-buffer agent-lsp--diff-buffer)))))

(defun agent-lsp-rewind (checkpoint &optional force)
  "Undo ask CHECKPOINT and every later one; the agent forgets them too.
A dry run first lists what will be restored and what is kept because it
changed since the agent's change; you confirm (unless you went on to
something else before the dry run came).  With FORCE (a prefix argument),
don't ask.  Nothing waits for the server."
  (interactive (list (agent-lsp--read-checkpoint "Undo ask (and later ones)")
                     current-prefix-arg))
  (when agent-lsp--request
    (user-error "An ask is running (M-x agent-lsp-cancel stops it)"))
  (pcase-let* ((`(,server ,session) (agent-lsp--session-server))
               (params (list :sessionId session :checkpointId checkpoint))
               (apply (lambda () (agent-lsp--call server agent-lsp-method-rewind params
                                                  (lambda (result)
                                                    (agent-lsp--rewound server checkpoint
                                                                        result))))))
    (if force
        (funcall apply)
      (agent-lsp--call
       server agent-lsp-method-rewind (append params (list :dryRun t))
       (agent-lsp--if-still-waiting
        "the dry run"
        (lambda (dry)
          ;; Asked in the minibuffer, the question first and last around what the
          ;; undo would do: from a callback `yes-or-no-p' may pick a dialog, which a
          ;; terminal shows as a popup menu hiding all but its first line.
          (when (let ((use-dialog-box nil))
                  (yes-or-no-p
                   (format "Undo ask %s and every later one? It would do this:\n%s\nUndo ask %s and later? "
                           checkpoint
                           (mapconcat (lambda (line) (concat "  " line))
                                      (agent-lsp-format-rewind dry checkpoint) "\n")
                           checkpoint)))
            (funcall apply))))))))

(defun agent-lsp--rewound (server checkpoint result)
  "Say what undoing ask CHECKPOINT on SERVER did (its RESULT)."
  (let ((lines (agent-lsp-format-rewind result checkpoint)))
    (agent-lsp--say (format "_Undone: ask %s and later (the agent forgot them)._\n\n%s\n\n"
                            checkpoint
                            (mapconcat (lambda (line) (concat "- " line)) lines "\n")))
    (agent-lsp--revert-changed-buffers (agent-lsp--server-root server))
    (setq agent-lsp--checkpoints
          (cl-remove-if-not (lambda (c) (< (string-to-number (format "%s" (plist-get c :id)))
                                           (string-to-number (format "%s" checkpoint))))
                            (append agent-lsp--checkpoints nil)))
    (message "agent-lsp: undid ask %s: %d restored, %d kept" checkpoint
             (length (plist-get result :restored)) (length (plist-get result :conflicts)))))

(provide 'agent-lsp-checkpoints)
;;; agent-lsp-checkpoints.el ends here
