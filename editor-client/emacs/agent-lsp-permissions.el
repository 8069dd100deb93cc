;;; agent-lsp-permissions.el --- Permission requests and grants of agent-lsp  -*- lexical-binding: t; -*-

;;; Commentary:

;; The server's `agent/requestPermission' as a multiple-choice prompt (closed when
;; the server withdraws the request), and `agent-lsp-grants', which revokes the
;; conversation's "always" answers.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'agent-lsp-core)
(require 'agent-lsp-trace)

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

;;; Grants: the "always" answers

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

(provide 'agent-lsp-permissions)
;;; agent-lsp-permissions.el ends here
