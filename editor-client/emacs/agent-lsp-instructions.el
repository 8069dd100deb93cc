;;; agent-lsp-instructions.el --- What the agent-lsp model is told of the project  -*- lexical-binding: t; -*-

;;; Commentary:

;; `agent-lsp-instructions' lists what the model is told of the project
;; (`agent/instructions') in `*agent-lsp-instructions*': the instruction files in
;; force (AGENTS.md and its kin, and the subfolders' ones the conversation was
;; given so far), the skills, and the warnings.  There RET opens the file at
;; point and `g' lists them again.
;;
;; The names, descriptions and warnings are the project's text (a repository
;; writes its skills), so all of it is escaped.  The lines are those of the
;; Neovim client (instructions.lua); tests/support/editor_scenarios/project.py
;; holds both to them.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'agent-lsp-core)
(require 'agent-lsp-trace)
(require 'agent-lsp-commands)

(defconst agent-lsp--instructions-buffer "*agent-lsp-instructions*")

(defvar-local agent-lsp--instructions-server nil
  "The agent-lsp server whose folder's instructions the buffer lists.")

(defun agent-lsp--instructions-string (value)
  "VALUE if it is a string, else \"\"."
  (if (stringp value) value ""))

(defun agent-lsp--instructions-file-line (text path)
  "TEXT, a line naming the file PATH (for RET)."
  (propertize text 'agent-lsp-file path))

(defun agent-lsp-instructions-lines (result root)
  "The lines of the `agent/instructions' RESULT of folder ROOT, escaped.
A line that names a file carries it as its `agent-lsp-file' property."
  (let* ((str #'agent-lsp--instructions-string)
         (files (append (plist-get result :instructions) nil))
         (skills (append (plist-get result :skills) nil))
         (warnings (append (plist-get result :warnings) nil))
         (prefix (file-name-as-directory (directory-file-name root)))
         lines)
    (if (null files)
        (push (concat "Instruction files: none (an AGENTS.md at the folder's root,"
                      " or a file the instructionFiles setting names)")
              lines)
      (push "Instruction files, in the order the model reads them:" lines)
      (dolist (file files)
        (push (agent-lsp--instructions-file-line
               (format "- %s (%s)"
                       (agent-lsp-escape-control (funcall str (plist-get file :name)))
                       (string-join
                        (delq nil (list (agent-lsp-escape-control
                                         (funcall str (plist-get file :source)))
                                        (format "%s bytes" (agent-lsp--thousands
                                                            (or (plist-get file :bytes) 0)))
                                        (when (eq (plist-get file :cut) t) "cut")))
                        ", "))
               (funcall str (plist-get file :path)))
              lines)))
    (push "" lines)
    (if (null skills)
        (push "Skills: none (a folder with a SKILL.md in .agents/skills/ or .claude/skills/)"
              lines)
      (push "Skills, each read by the model when it applies:" lines)
      (dolist (skill skills)
        (let ((path (funcall str (plist-get skill :path))))
          (push (agent-lsp--instructions-file-line
                 (format "- %s: %s (%s)"
                         (agent-lsp-escape-control (funcall str (plist-get skill :name)))
                         (agent-lsp-escape-control (funcall str (plist-get skill :description)))
                         (agent-lsp-escape-control (if (string-prefix-p prefix path)
                                                       (substring path (length prefix))
                                                     path)))
                 path)
                lines))))
    (when warnings
      (push "" lines)
      (push "Warnings:" lines)
      (dolist (warning warnings)
        (push (concat "- " (agent-lsp-escape-control (funcall str warning))) lines)))
    (nreverse lines)))

(defvar agent-lsp-instructions-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map (kbd "RET") #'agent-lsp-instructions-open)
    map)
  "Keymap of `*agent-lsp-instructions*'; `g' (`revert-buffer') lists them again.")

(define-derived-mode agent-lsp-instructions-mode special-mode "agent-lsp-instructions"
  "Major mode of `*agent-lsp-instructions*': what the model is told of the project.
\\<agent-lsp-instructions-mode-map>\\[agent-lsp-instructions-open] opens the file at point,
\\[revert-buffer] lists them again."
  (setq-local revert-buffer-function
              (lambda (&rest _)
                (if (and agent-lsp--instructions-server
                         (jsonrpc-running-p agent-lsp--instructions-server))
                    (agent-lsp--instructions-list agent-lsp--instructions-server)
                  (agent-lsp--with-server #'agent-lsp--instructions-list))))
  (setq-local truncate-lines nil))

(defun agent-lsp--instructions-list (server &optional show)
  "Ask what SERVER's folder's model is told; show it in `*agent-lsp-instructions*'.
With the conversation's session when SERVER has it (then the subfolders'
files it was given too).  Nothing waits: the buffer is filled when the
answer comes, and then popped up with SHOW."
  (let* ((root (agent-lsp--server-root server))
         (params (if (and (eq server agent-lsp--conversation-server) agent-lsp--session-id)
                     (list :sessionId agent-lsp--session-id)
                   (list :workspaceFolder (agent-lsp--folder-uri root)))))
    (agent-lsp--call
     server agent-lsp-method-instructions params
     (lambda (result)
       (let ((buffer (or (get-buffer agent-lsp--instructions-buffer)
                         (with-current-buffer (get-buffer-create agent-lsp--instructions-buffer)
                           (agent-lsp-instructions-mode)
                           (current-buffer)))))
         (with-current-buffer buffer
           (let ((inhibit-read-only t))
             (setq agent-lsp--instructions-server server
                   default-directory root)
             (erase-buffer)
             (insert "# agent-lsp instructions: " root "\n\n"
                     (string-join (agent-lsp-instructions-lines result root) "\n")
                     "\n\nRET: open the file at point · g: list again\n")
             (goto-char (point-min))
             (forward-line 3)))
         (when show (pop-to-buffer buffer)))))))

(defun agent-lsp-instructions ()
  "List what the model is told of the current project.
In `*agent-lsp-instructions*': the instruction files in force (name, where
from, size, and whether only its first part is given: `:instructionsMaxBytes'),
the skills (name, description, SKILL.md) and the warnings; of the conversation
when there is one (then also the subfolders' instruction files it was given).
\\<agent-lsp-instructions-mode-map>
In the buffer, \\[agent-lsp-instructions-open] opens the file at point and
\\[revert-buffer] lists them again.  The buffer shows when the server answers."
  (interactive)
  (let ((default-directory (agent-lsp--ask-root)))
    (agent-lsp--with-server (lambda (server) (agent-lsp--instructions-list server t)))))

(defun agent-lsp-instructions-open ()
  "Open the file the line at point names."
  (interactive)
  (let ((path (get-text-property (line-beginning-position) 'agent-lsp-file)))
    (unless (and path (not (string-empty-p path)))
      (user-error "No file on this line"))
    (pop-to-buffer (find-file-noselect path))))

(provide 'agent-lsp-instructions)
;;; agent-lsp-instructions.el ends here
