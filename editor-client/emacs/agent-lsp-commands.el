;;; agent-lsp-commands.el --- The /commands of agent-lsp prompts  -*- lexical-binding: t; -*-

;;; Commentary:

;; The /commands a prompt may start with: `agent-lsp-ask' reads its prompt with
;; `agent-lsp--read-prompt', where TAB (`completion-at-point') completes a /word
;; typed first from the folder's `agent/listCommands' (cached per folder, fetched
;; again when stale), each with its description; and `agent-lsp--builtin' tells
;; a built-in command (a client action that agent-lsp-ask runs: /compact, /new,
;; /checkpoints, /undo [ID]) from a prompt to send.  A prompt file's `/NAME
;; args' is sent as typed: the server expands it.  So is an unknown /word.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'agent-lsp-core)
(require 'agent-lsp-trace)
(require 'agent-lsp-transcript)

(defconst agent-lsp--builtin-commands '("compact" "new" "checkpoints" "undo")
  "The built-in commands: the client's own actions, never sent to the model.")

(defvar agent-lsp--commands-stale-seconds 10
  "A folder's commands are fetched again when older than this.")

(defvar agent-lsp--commands-cache (make-hash-table :test #'equal)
  "Folder root -> (TIME . COMMANDS), COMMANDS the plists of `agent/listCommands'.")

(defvar agent-lsp--history nil "Prompt history.")

(defvar-local agent-lsp--prompt-root nil
  "The folder whose commands the prompt being read completes.")

(defun agent-lsp--builtin (prompt)
  "The built-in command PROMPT names, as (NAME . REST).
Nil for a prompt to send."
  (when (and (stringp prompt)
             (string-match "\\`[ \t\n]*/\\([^ \t\n]+\\)\\(\\(?:.\\|\n\\)*\\)\\'" prompt))
    (let ((name (match-string 1 prompt)))
      (when (member name agent-lsp--builtin-commands)
        (cons name (string-trim (match-string 2 prompt)))))))

(defun agent-lsp--ask-root ()
  "The folder an ask from the current buffer acts in (the conversation's, in it)."
  (if (eq (current-buffer) (get-buffer agent-lsp--buffer))
      default-directory
    (agent-lsp--root)))

(defun agent-lsp--folder-uri (root)
  "ROOT as a file URI."
  (funcall (if (fboundp 'eglot-path-to-uri) #'eglot-path-to-uri #'eglot--path-to-uri)
           (directory-file-name root)))

(defvar agent-lsp--commands-fetching nil "Folder roots whose commands are being fetched.")

(defun agent-lsp--commands (root)
  "ROOT's commands (plists of `agent/listCommands') as last fetched.
Nothing waits: a stale or missing list is fetched again in the background
for the next completion (the prompt fetches it as it opens); until the
first answer, the built-ins."
  (let ((cached (gethash root agent-lsp--commands-cache)))
    (unless (and cached (< (- (float-time) (car cached)) agent-lsp--commands-stale-seconds))
      (agent-lsp--fetch-commands root))
    (if cached
        (cdr cached)
      (mapcar (lambda (name) (list :name name :source "builtin"))
              agent-lsp--builtin-commands))))

(defun agent-lsp--fetch-commands (root)
  "Fetch ROOT's commands into `agent-lsp--commands-cache', without waiting."
  (unless (member root agent-lsp--commands-fetching)
    (push root agent-lsp--commands-fetching)
    (let ((done (lambda () (setq agent-lsp--commands-fetching
                                 (delete root agent-lsp--commands-fetching)))))
      ;; A server not running yet starts in the background: this completion
      ;; has the built-ins, the next one the folder's commands.
      (condition-case nil
          (let ((default-directory root))
            (agent-lsp--with-server
             (lambda (server)
               (agent-lsp--call server agent-lsp-method-list-commands
                                (list :workspaceFolder (agent-lsp--folder-uri root))
                                (lambda (result)
                                  (funcall done)
                                  (puthash root (cons (float-time)
                                                      (append (plist-get result :commands) nil))
                                           agent-lsp--commands-cache))
                                :timeout 10
                                :on-error (lambda (_) (funcall done))))
             done))
        (error (funcall done))))))

(defun agent-lsp-command-capf ()
  "Complete a /word typed first in the prompt: the folder's commands.
For `completion-at-point-functions' of the prompt that
`agent-lsp--read-prompt' reads."
  (let* ((start (if (minibufferp) (minibuffer-prompt-end) (point-min)))
         (end (save-excursion (goto-char start) (skip-chars-forward "^ \t\n") (point)))
         (root (or agent-lsp--prompt-root (agent-lsp--ask-root)))
         commands)
    (when (and (eq (char-after start) ?/) (<= (point) end))
      (cl-flet ((commands ()
                  (or commands (setq commands (agent-lsp--commands root)))))
        (list start end
              (lambda (string pred action)
                (if (eq action 'metadata)
                    '(metadata (category . agent-lsp-command))
                  (complete-with-action
                   action (mapcar (lambda (c) (concat "/" (plist-get c :name))) (commands))
                   string pred)))
              :annotation-function
              (lambda (candidate)
                (let ((command (cl-find (substring candidate 1) (commands)
                                        :key (lambda (c) (plist-get c :name)) :test #'equal)))
                  (concat (when (stringp (plist-get command :argumentHint))
                            (concat " " (agent-lsp-escape-control
                                         (plist-get command :argumentHint))))
                          (when (stringp (plist-get command :description))
                            (concat "  " (agent-lsp-escape-control
                                          (plist-get command :description)))))))
              :exclusive 'no)))))

(defvar agent-lsp-prompt-map
  (let ((map (make-sparse-keymap)))
    (define-key map (kbd "TAB") #'completion-at-point)
    map)
  "Keys of the prompt `agent-lsp-ask' reads, over the minibuffer's own.")

(defun agent-lsp--prompt-setup (root)
  "Make the current buffer complete ROOT's /commands (TAB)."
  (setq agent-lsp--prompt-root root)
  (agent-lsp--commands root)            ; fetched now, for the first TAB
  (add-hook 'completion-at-point-functions #'agent-lsp-command-capf nil t)
  (use-local-map (make-composed-keymap agent-lsp-prompt-map (current-local-map))))

(defun agent-lsp--read-prompt (prompt)
  "Read an ask's prompt with PROMPT; TAB completes a /command typed first."
  (let ((root (agent-lsp--ask-root)))
    (minibuffer-with-setup-hook (lambda () (agent-lsp--prompt-setup root))
      (read-string prompt nil 'agent-lsp--history))))

(provide 'agent-lsp-commands)
;;; agent-lsp-commands.el ends here
