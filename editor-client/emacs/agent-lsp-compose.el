;;; agent-lsp-compose.el --- A buffer to write a prompt in  -*- lexical-binding: t; -*-

;;; Commentary:

;; `agent-lsp-compose': a prompt of several lines (a pasted traceback, a
;; list of steps) written in `*agent-lsp-compose*', where TAB completes a
;; /command typed first as in the minibuffer; C-c C-c sends it as
;; `agent-lsp-ask' would (with the region that was active in the file buffer it
;; was opened from), C-c C-k cancels.

;;; Code:

(require 'subr-x)
(require 'agent-lsp-core)
(require 'agent-lsp-commands)
(require 'agent-lsp-transcript)
(require 'agent-lsp-ask)

(defconst agent-lsp--compose-buffer "*agent-lsp-compose*")

(defvar-local agent-lsp--compose-region nil
  "The region (BUFFER START END) active where the compose buffer was opened.")

(defvar agent-lsp-compose-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map (kbd "C-c C-c") #'agent-lsp-compose-send)
    (define-key map (kbd "C-c C-k") #'agent-lsp-compose-cancel)
    map)
  "Keys of `*agent-lsp-compose*'.")

(define-derived-mode agent-lsp-compose-mode text-mode "agent-lsp-compose"
  "Write a prompt for the agent: \\[agent-lsp-compose-send] sends it,
\\[agent-lsp-compose-cancel] cancels.
\\{agent-lsp-compose-mode-map}"
  (setq header-line-format
        (substitute-command-keys
         "Prompt for the agent: \\[agent-lsp-compose-send] sends, \\[agent-lsp-compose-cancel] \
cancels, TAB completes a /command")))

(defun agent-lsp-compose ()
  "Write a prompt of several lines in `*agent-lsp-compose*'; C-c C-c sends it.
An active region in a file buffer goes along, as with `agent-lsp-ask'."
  (interactive)
  (let ((region (agent-lsp--region))
        (directory default-directory)
        (root (agent-lsp--ask-root)))
    (pop-to-buffer (get-buffer-create agent-lsp--compose-buffer))
    (unless (derived-mode-p 'agent-lsp-compose-mode)
      (agent-lsp-compose-mode))
    (agent-lsp--prompt-setup root)
    (setq agent-lsp--compose-region region
          default-directory directory)))

(defun agent-lsp-compose-send ()
  "Send the prompt written here (`agent-lsp-ask') and close the buffer."
  (interactive)
  (let ((prompt (string-trim (buffer-string)))
        (region agent-lsp--compose-region)
        (directory default-directory))
    (when (string-empty-p prompt)
      (user-error "Write the prompt first (C-c C-k cancels)"))
    (add-to-history 'agent-lsp--history prompt)
    (let ((inhibit-read-only t)) (erase-buffer))
    (quit-window t)
    (let ((default-directory directory))
      (agent-lsp-ask prompt region))))

(defun agent-lsp-compose-cancel ()
  "Close the compose buffer; nothing is sent."
  (interactive)
  (quit-window t)
  (message "agent-lsp: nothing sent"))

(provide 'agent-lsp-compose)
;;; agent-lsp-compose.el ends here
