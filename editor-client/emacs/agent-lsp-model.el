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
                               (plist-get check :name)
                               (agent-lsp--with-action (plist-get check :message)
                                                       (plist-get check :action))))
                     (plist-get result :checks) "\n")
          "\n\n"
          (if (eq (plist-get result :ok) t)
              "The endpoint works."
            "The endpoint does not work yet.")
          "\n"))

(defun agent-lsp--show-check (text)
  "Show TEXT in `*agent-lsp-check*'."
  (with-current-buffer (agent-lsp--get-buffer agent-lsp--check-buffer
                                              #'agent-lsp-conversation-mode)
    (let ((inhibit-read-only t))
      (erase-buffer)
      (insert "# agent-lsp connection check\n\n" text))
    (goto-char (point-min)))
  (display-buffer agent-lsp--check-buffer))

(defun agent-lsp-check-connection ()
  "Check the model endpoint: key, URL, model; show what works and what to fix.
The result shows in `*agent-lsp-check*' when the server has it (it asks the
endpoint, which may take long); Emacs does not wait for it, nor for the
server to start."
  (interactive)
  (agent-lsp--show-check "_checking… (the result shows here)_\n")
  (agent-lsp--with-server
   (lambda (server)
     (agent-lsp--call
      server agent-lsp-method-check-connection (make-hash-table)
      (lambda (result)
        (agent-lsp--show-check (agent-lsp-format-check result))
        (message "agent-lsp: %s" (if (eq (plist-get result :ok) t)
                                     "the model endpoint works"
                                   "the model endpoint does not work yet; see *agent-lsp-check*")))
      :timeout agent-lsp--check-timeout
      :on-error (lambda (text)
                  (agent-lsp--show-check (format "**The check failed**: %s\n" text)))))
   (lambda () (agent-lsp--show-check "**The check failed**: the server did not start\n"))))

(defun agent-lsp-select-model (&optional model)
  "Use MODEL, chosen from the models the endpoint lists (`agent/listModels').
Sets :model in `agent-lsp-settings' for this session and sends it to the
running servers; keep it with `customize-variable' or in the user file
\(agent-lsp config set model NAME).  Interactively the list is asked for
without waiting; the choice is offered when it comes, unless you went on to
something else meanwhile."
  (interactive)
  (if model
      (agent-lsp--use-model model)
    ;; Made now, so that a command run while the server starts counts too.
    (let ((choose (agent-lsp--if-still-waiting
                   "the list of models"
                   (lambda (result)
                     (let ((ids (mapcar (lambda (m) (plist-get m :id))
                                        (plist-get result :models)))
                           (current (plist-get result :current)))
                       (agent-lsp--use-model
                        (completing-read (format "Model (current %s): " current) ids
                                         nil nil nil nil current)))))))
      (agent-lsp--with-server
       (lambda (server)
         (message "agent-lsp: listing the endpoint's models…")
         (agent-lsp--call server agent-lsp-method-list-models (make-hash-table) choose))))))

(defun agent-lsp--use-model (model)
  "Use MODEL for this session."
  (when (or (not (stringp model)) (string-blank-p model))
    (user-error "No model chosen"))
  (setq agent-lsp-settings (plist-put (copy-sequence agent-lsp-settings) :model model))
  (agent-lsp-apply-settings)
  (message "agent-lsp: model %s for this session" model)
  model)

(provide 'agent-lsp-model)
;;; agent-lsp-model.el ends here
