;;; agent-lsp-model.el --- The model endpoint of agent-lsp  -*- lexical-binding: t; -*-

;;; Commentary:

;; The model endpoint: `agent-lsp-check-connection' (key, URL, model) and
;; `agent-lsp-select-model' (from the endpoint's list).

;;; Code:

(require 'subr-x)
(require 'agent-lsp-core)
(require 'agent-lsp-transcript)

(defconst agent-lsp--check-buffer "*agent-lsp-check*")

(defconst agent-lsp--check-timeout 90
  "Seconds to wait for `agent/checkConnection' (it lists models, then asks once).")

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

(provide 'agent-lsp-model)
;;; agent-lsp-model.el ends here
