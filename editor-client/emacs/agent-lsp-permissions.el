;;; agent-lsp-permissions.el --- Permission requests and grants of agent-lsp  -*- lexical-binding: t; -*-

;;; Commentary:

;; The server's `agent/requestPermission', and `agent-lsp-grants', which revokes
;; the conversation's "always" answers.
;;
;; A request never takes the keyboard: keys typed for something else (a
;; command in the minibuffer, text in a buffer) must never answer it.  It is
;; shown in the conversation with a button per answer, the echo area says one
;; is waiting and which key opens it, and it is answered only by a button or
;; by a key in `*agent-lsp-permission*' (`agent-lsp-permissions'), which shows
;; one request at a time: after an answer the next is shown only on `g'.
;; Leaving that buffer (q, C-g) answers nothing; the request keeps waiting
;; until it is answered, or the server withdraws it (`agent-lsp-cancel',
;; `:permissionTimeout').
;;
;; The reply is sent when the user answers, not when the request arrives: the
;; request is taken out of `jsonrpc-connection-receive' (whose dispatchers
;; must return the reply at once) with its id, and answered with
;; `jsonrpc-connection-send'.

;;; Code:

(require 'button)
(require 'cl-lib)
(require 'json)
(require 'subr-x)
(require 'agent-lsp-core)
(require 'agent-lsp-trace)
(require 'agent-lsp-transcript)

(defconst agent-lsp--permission-keys
  '(("allow_once" ?y "allow once" "allowed once")
    ("allow_always" ?a "always allow this call" "always allowed")
    ("reject_once" ?n "reject" "rejected")
    ("reject_always" ?r "always reject this call" "always rejected"))
  "Option kind -> key in `*agent-lsp-permission*', button label, what it did.")

(defconst agent-lsp--permission-buffer "*agent-lsp-permission*")

(defvar agent-lsp--permission-requests nil
  "The permission requests waiting for an answer, oldest first.
Each a plist: :server, :id (of the JSON-RPC request), :prompt (its text,
escaped), :title, :choices (see `agent-lsp-permission-choices'), and the
markers of its answer line in the conversation, :line and :line-end.")

(defvar agent-lsp-permission-functions nil
  "Functions called with a permission request (a plist) once it is shown.")

(cl-defmethod eglot-client-capabilities ((_server agent-lsp-server))
  "Eglot's capabilities, plus: this client answers `agent/requestPermission'."
  (let ((capabilities (cl-call-next-method)))
    (plist-put capabilities :experimental '(:agent (:requestPermission t)))))

(defun agent-lsp-permission-choices (options)
  "The answers the request's OPTIONS (a vector of plists) offer.
Each a list (KEY LABEL OPTION-ID KIND DONE), in the order of
`agent-lsp--permission-keys'.  LABEL is the option's name as the server
words it (\"Approve and start\", what an \"always\" covers), else ours."
  (delq nil (mapcar (lambda (entry)
                      (let* ((option (cl-find (car entry) options
                                              :key (lambda (o) (plist-get o :kind))
                                              :test #'equal))
                             (name (plist-get option :name)))
                        (when option
                          (list (nth 1 entry)
                                (if (and (stringp name) (not (string-empty-p name)))
                                    (agent-lsp-escape-control name)
                                  (nth 2 entry))
                                (plist-get option :optionId)
                                (car entry) (nth 3 entry)))))
                    agent-lsp--permission-keys)))

(defun agent-lsp-permission-prompt (tool-name arguments title reason &optional scope)
  "The text of a request about TOOL-NAME's call with ARGUMENTS (a plist).
A bash command comes first, line by line (an edit or a write: its diff,
`agent-lsp-edit-lines'), then TITLE and REASON, then on a line of its own
what an \"always\" answer allows: SCOPE, the server's sentence (the request's
alwaysScope) shown as it is; all of it escaped (`agent-lsp-escape-consent'),
so nothing in it can hide what runs."
  (let ((command (and (equal tool-name "bash") (plist-get arguments :command)))
        (edit (and (listp arguments) arguments
                   (agent-lsp-edit-lines tool-name (json-encode arguments)))))
    (concat (if (stringp command)
                (concat "Command:\n"
                        (mapconcat (lambda (line) (concat "    " line "\n"))
                                   (split-string (agent-lsp-escape-consent command t) "\n")
                                   ""))
              "")
            (if edit
                (mapconcat (lambda (line) (concat "    " line "\n")) edit "")
              "")
            "agent-lsp asks: " (agent-lsp-escape-consent (format "%s" title))
            (if (and (stringp reason) (not (string-empty-p reason)))
                (concat " (" (agent-lsp-escape-consent reason) ")")
              "")
            " "
            (if (and (stringp scope) (not (string-empty-p scope)))
                (concat "\n\"Always\" allows: " (agent-lsp-escape-consent scope))
              ""))))

;;; Receiving a request

(defvar agent-lsp--permission-lighter nil
  "The mode line's note that permission requests wait (in `global-mode-string').")
(put 'agent-lsp--permission-lighter 'risky-local-variable t)

(defun agent-lsp--permission-update-lighter ()
  "Show in every mode line whether requests wait, and the key that answers them."
  (setq agent-lsp--permission-lighter
        (when agent-lsp--permission-requests
          (propertize (format " [agent-lsp asks: %s]"
                              (agent-lsp--command-key 'agent-lsp-permissions))
                      'face 'warning)))
  (unless (memq 'agent-lsp--permission-lighter global-mode-string)
    (setq global-mode-string
          (append (or global-mode-string '("")) '(agent-lsp--permission-lighter))))
  (force-mode-line-update t))

(defun agent-lsp--receive (receive connection message)
  "Around `jsonrpc-connection-receive' (RECEIVE): keep CONNECTION's permission
request MESSAGE to answer it later; everything else goes to RECEIVE."
  (let ((method (plist-get message :method))
        (id (plist-get message :id)))
    (if (and id method (cl-typep connection 'agent-lsp-server)
             (equal (format ":%s" method)
                    (symbol-name agent-lsp-method-request-permission)))
        (progn
          (when (fboundp 'jsonrpc--log-event)
            (ignore-errors (jsonrpc--log-event connection message 'server)))
          (agent-lsp--permission-arrived connection id (plist-get message :params)))
      (funcall receive connection message))))

(advice-add 'jsonrpc-connection-receive :around #'agent-lsp--receive)

(defun agent-lsp--command-key (command)
  "The key sequence that runs COMMAND, else \"M-x COMMAND\"."
  (let ((keys (where-is-internal command nil t)))
    (if keys (key-description keys) (format "M-x %s" command))))

(defun agent-lsp--permission-arrived (server id params)
  "Show SERVER's permission request ID (its PARAMS); the user answers later."
  (let* ((title (agent-lsp-escape-consent (format "%s" (plist-get params :title))))
         (request (list :server server :id id :title title
                        :prompt (agent-lsp-permission-prompt
                                 (plist-get params :toolName) (plist-get params :arguments)
                                 (plist-get params :title) (plist-get params :reason)
                                 (plist-get params :alwaysScope))
                        :choices (agent-lsp-permission-choices (plist-get params :options)))))
    (setq agent-lsp--permission-requests
          (append agent-lsp--permission-requests (list request)))
    (agent-lsp--permission-insert request)
    (agent-lsp--permission-update-lighter)
    (agent-lsp--permission-render)     ; its count of other requests; never shows this one
    (display-buffer agent-lsp--buffer)
    (message "agent-lsp asks permission: %s. Answer with the buttons in %s, or %s"
             title agent-lsp--buffer (agent-lsp--command-key 'agent-lsp-permissions))
    (run-hook-with-args 'agent-lsp-permission-functions request)))

(defun agent-lsp--permission-insert (request)
  "Show REQUEST in the conversation, with a button per answer.
While an ask runs it goes above the ask's status line, and the answer
streams on below it."
  (agent-lsp--insert-above-status
   (lambda ()
     (insert (propertize "Permission requested" 'face 'warning 'font-lock-face 'warning) "\n"
             (plist-get request :prompt) "\n")
     (plist-put request :line (copy-marker (point)))
     (dolist (choice (plist-get request :choices))
       (let ((kind (nth 3 choice)))
         (insert-text-button (let ((label (nth 1 choice)))
                                       (format "[%s%s]" (upcase (substring label 0 1))
                                               (substring label 1)))
                             'action (lambda (_) (agent-lsp--permission-answer request kind))
                             'follow-link t
                             'help-echo (format "Answer: %s" (nth 1 choice))))
       (insert " "))
     (insert (format "(or %s)" (agent-lsp--command-key 'agent-lsp-permissions)))
     (plist-put request :line-end (copy-marker (point)))
     (insert "\n\n"))))

;;; Answering

(defun agent-lsp--permission-settle (request note)
  "REQUEST no longer waits: NOTE replaces its buttons in the conversation."
  (setq agent-lsp--permission-requests (delq request agent-lsp--permission-requests))
  (agent-lsp--permission-update-lighter)
  (let ((start (plist-get request :line))
        (end (plist-get request :line-end)))
    (when (and start (marker-buffer start))
      (with-current-buffer (marker-buffer start)
        (let ((inhibit-read-only t))
          (save-excursion
            (delete-region start end)
            (goto-char start)
            (insert (propertize (concat "→ " note) 'face 'italic 'font-lock-face 'italic)))
          ;; Point on the buttons (one was just pressed) goes back to the end, so that
          ;; the window follows the answer as it streams on.
          (let ((line-start (save-excursion (goto-char start) (line-beginning-position)))
                (line-end (save-excursion (goto-char start) (line-end-position))))
            (when (<= line-start (point) line-end)
              (goto-char (point-max)))
            (dolist (window (get-buffer-window-list (current-buffer) nil t))
              (when (<= line-start (window-point window) line-end)
                (set-window-point window (point-max)))))))))
  (agent-lsp--permission-render))

(defun agent-lsp--permission-answer (request kind)
  "Answer REQUEST with its option of KIND (\"allow_once\"...); nil dismisses it."
  (agent-lsp--permission-forget-dead)
  (unless (memq request agent-lsp--permission-requests)
    (user-error "That permission request no longer waits"))
  (let* ((choice (and kind (cl-find kind (plist-get request :choices)
                                    :key (lambda (c) (nth 3 c)) :test #'equal)))
         (server (plist-get request :server)))
    (when (and kind (not choice))
      (user-error "This request offers no such answer"))
    (when (jsonrpc-running-p server)
      (jsonrpc-connection-send
       server :id (plist-get request :id)
       :result (list :outcome (if choice
                                  (list :outcome "selected" :optionId (nth 2 choice))
                                (list :outcome "cancelled")))))
    (agent-lsp--permission-settle request (if choice (nth 4 choice) "dismissed"))
    (message "agent-lsp: %s: %s" (if choice (nth 4 choice) "dismissed")
             (plist-get request :title))))

(cl-defmethod eglot-handle-notification
  ((server agent-lsp-server) (_method (eql '$/cancelRequest)) &key id &allow-other-keys)
  "SERVER withdrew its request ID: it waits no longer."
  (let ((request (cl-find-if (lambda (r) (and (eq (plist-get r :server) server)
                                              (equal (plist-get r :id) id)))
                             agent-lsp--permission-requests)))
    (when request
      (agent-lsp--permission-settle request "withdrawn: the agent stopped waiting")
      (message "agent-lsp: the permission request was withdrawn: %s"
               (plist-get request :title)))))

(defun agent-lsp--permission-forget-dead (&rest _)
  "The requests of servers that stopped wait no longer (nobody withdraws them)."
  (dolist (request agent-lsp--permission-requests)
    (unless (jsonrpc-running-p (plist-get request :server))
      (agent-lsp--permission-settle request "withdrawn: the server stopped"))))

(add-hook 'agent-lsp--finish-functions #'agent-lsp--permission-forget-dead)

;;; The request buffer

(defvar-local agent-lsp--permission-shown nil
  "The request `*agent-lsp-permission*' shows, which its keys answer.")

(defvar agent-lsp-permission-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map "y" #'agent-lsp-permission-allow-once)
    (define-key map "a" #'agent-lsp-permission-allow-always)
    (define-key map "n" #'agent-lsp-permission-reject)
    (define-key map "r" #'agent-lsp-permission-reject-always)
    (define-key map "d" #'agent-lsp-permission-dismiss)
    (define-key map "g" #'agent-lsp-permissions)
    map)
  "Keys of `*agent-lsp-permission*'; q (`quit-window') leaves unanswered.")

(define-derived-mode agent-lsp-permission-mode special-mode "agent-lsp-permission"
  "The permission request `agent-lsp-permissions' shows.
\\{agent-lsp-permission-mode-map}")

(defun agent-lsp--permission-render (&optional show-next)
  "Show in `*agent-lsp-permission*' what its request became.
With SHOW-NEXT, show the oldest waiting request instead."
  (let ((buffer (get-buffer agent-lsp--permission-buffer)))
    (when (or show-next buffer)
      (with-current-buffer (or buffer (get-buffer-create agent-lsp--permission-buffer))
        (unless (derived-mode-p 'agent-lsp-permission-mode) (agent-lsp-permission-mode))
        (when show-next
          (setq agent-lsp--permission-shown (car agent-lsp--permission-requests)))
        (let* ((inhibit-read-only t)
               (request agent-lsp--permission-shown)
               (waiting (memq request agent-lsp--permission-requests))
               (others (length (remq request agent-lsp--permission-requests))))
          (erase-buffer)
          (cond
           ((null request) (insert "No permission request is waiting.\n"))
           ((not waiting)
            (insert (format "Done: %s\n" (plist-get request :title))))
           (t
            (insert (plist-get request :prompt) "\n\n")
            (dolist (choice (plist-get request :choices))
              (insert (format "  %c  " (nth 0 choice)))
              (let ((kind (nth 3 choice)))
                (insert-text-button (nth 1 choice)
                                    'action (lambda (_) (agent-lsp--permission-answer
                                                         request kind))
                                    'follow-link t))
              (insert "\n"))
            (insert "  d  dismiss (decline without an answer)\n\n"
                    "q or C-g leaves it unanswered: it keeps waiting.\n")))
          (when (> others 0)
            (insert (format "\n%d other request%s waiting: g shows the %s.\n" others
                            (if (= others 1) "" "s")
                            (if waiting "oldest" "next"))))
          (goto-char (point-min)))))))

(defun agent-lsp-permissions ()
  "Show the oldest waiting permission request in `*agent-lsp-permission*'.
There y allows once, a always allows (what the request's line
\"Always\" allows: says), n rejects, r always
rejects it, d dismisses it; q or C-g leaves it waiting."
  (interactive)
  (agent-lsp--permission-render t)
  (pop-to-buffer agent-lsp--permission-buffer))

(defun agent-lsp--permission-answer-shown (kind)
  "Answer the request this buffer shows with KIND."
  (let ((request agent-lsp--permission-shown))
    (unless (and request (memq request agent-lsp--permission-requests))
      (user-error "No request shown here waits (g shows the oldest waiting)"))
    (agent-lsp--permission-answer request kind)))

(defun agent-lsp-permission-allow-once ()
  "Allow the request shown, this once."
  (interactive)
  (agent-lsp--permission-answer-shown "allow_once"))

(defun agent-lsp-permission-allow-always ()
  "Allow the request shown for the rest of the conversation (as its scope says)."
  (interactive)
  (agent-lsp--permission-answer-shown "allow_always"))

(defun agent-lsp-permission-reject ()
  "Reject the request shown."
  (interactive)
  (agent-lsp--permission-answer-shown "reject_once"))

(defun agent-lsp-permission-reject-always ()
  "Reject the request shown for the rest of the conversation (as its scope says)."
  (interactive)
  (agent-lsp--permission-answer-shown "reject_always"))

(defun agent-lsp-permission-dismiss ()
  "Decline the request shown without an answer.
The agent is told the request was dismissed."
  (interactive)
  (agent-lsp--permission-answer-shown nil))

;;; Grants: the "always" answers

(defun agent-lsp-grants ()
  "List the conversation's \"always\" permission answers; revoke the one you pick.
Each is bound to one exact call; once revoked, that call is asked about again.
The list is asked for without waiting and offered when it comes (unless you
went on to something else meanwhile); \[keyboard-quit] revokes nothing."
  (interactive)
  (pcase-let ((`(,server ,session) (agent-lsp--session-server)))
    (agent-lsp--call
     server agent-lsp-method-grants (list :sessionId session)
     (agent-lsp--if-still-waiting
      "the list of grants"
      (lambda (result)
        (let ((grants (append (plist-get result :grants) nil))
              (choices nil))
          (if (null grants)
              (message "agent-lsp: no permission grants in this conversation")
          (dolist (grant grants)
            (let ((label (agent-lsp-format-grant grant)))
              (when (assoc label choices)     ; two calls with one title: tell them apart
                (setq label (format "%s [%s]" label (plist-get grant :grantId))))
              (push (cons label grant) choices)))
          (let* ((picked (completing-read "Revoke a permission grant: " (reverse choices)
                                          nil t))
                 (grant (cdr (assoc picked choices))))
            (when grant
              (agent-lsp--call
               server agent-lsp-method-revoke-grant (list :sessionId session
                                               :grantId (plist-get grant :grantId))
               (lambda (result)
                 (message (if (eq (plist-get result :revoked) t)
                              "agent-lsp: revoked: %s"
                            "agent-lsp: already gone: %s")
                          picked))))))))))))

(defun agent-lsp-format-grant (grant)
  "One line for GRANT (a plist of `agent/grants'): the answer, the tool, the call."
  (format "%s  %s: %s" (plist-get grant :decision) (plist-get grant :toolName)
          (plist-get grant :title)))

(provide 'agent-lsp-permissions)
;;; agent-lsp-permissions.el ends here
