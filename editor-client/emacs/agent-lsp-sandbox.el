;;; agent-lsp-sandbox.el --- What confines agent-lsp's bash commands  -*- lexical-binding: t; -*-

;;; Commentary:

;; The bash sandbox: `agent-lsp-sandbox' shows the server's `agent/sandboxStatus',
;; the layers in force and what is weaker than the full sandbox.

;;; Code:

(require 'subr-x)
(require 'agent-lsp-core)
(require 'agent-lsp-trace)
(require 'agent-lsp-transcript)

(defconst agent-lsp--sandbox-buffer "*agent-lsp-sandbox*")

;; In the words of every client (tests/support/sandbox_cases.json): a kind, a
;; one-line summary and the report's lines, from the server's fields only.

(defun agent-lsp--given (value)
  "Non-nil if VALUE is a JSON value other than null, false or \"\"."
  (and value (not (memq value '(:json-false :null :false))) (not (equal value ""))))

(defun agent-lsp-sandbox-kind (status)
  "\"full\", \"weakened\" (a fallback form), \"off\" (the user's choice) or \"none\"
\(the settings ask for a sandbox this system cannot give), for STATUS (a plist of
`agent/sandboxStatus')."
  (cond ((equal (plist-get status :mode) "off") "off")
        ((not (eq (plist-get status :enforced) t)) "none")
        ((or (agent-lsp--given (plist-get status :fallback))
             (> (length (plist-get status :weakened)) 0))
         "weakened")
        (t "full")))

(defun agent-lsp--sandbox-layers (status)
  "The layers line of STATUS: a mark for each layer, in force or not."
  (let* ((layers (plist-get status :layers))
         (ns (eq (plist-get layers :namespaces) t))
         (landlock (eq (plist-get layers :landlock) t))
         (limit (and (agent-lsp--given (plist-get layers :processLimit))
                     (plist-get layers :processLimit)))
         (mark (lambda (on text) (concat (if on "✓ " "✗ ") text))))
    (concat "layers: "
            (string-join
             (list (funcall mark ns (if (and ns (agent-lsp--given (plist-get status :bwrap)))
                                        (format "namespaces (%s)" (plist-get status :bwrap))
                                      "namespaces"))
                   (funcall mark (eq (plist-get layers :networkNamespace) t) "network namespace")
                   (funcall mark landlock (if landlock
                                              (format "Landlock ABI %s" (plist-get status :landlockAbi))
                                            "Landlock"))
                   (funcall mark (eq (plist-get layers :seccomp) t) "seccomp")
                   (funcall mark limit (if limit (format "process limit (%s)" limit) "process limit")))
             " · "))))

(defun agent-lsp--sandbox-network (status)
  "The network line of STATUS."
  (let ((domains (mapconcat #'identity (plist-get status :allowedDomains) ", "))
        (access (plist-get status :networkAccess)))
    (cond ((equal access "none")
           ;; The hosts were asked for, but this system cannot give the proxy its own network.
           (if (string-empty-p domains)
               "network: none (a command asks you first)"
             (format "network: none; allowedDomains (%s) need a network namespace" domains)))
          ((equal access "allowedDomains") (format "network: only %s, through the proxy" domains))
          (t (format "network: %s" access)))))

(defun agent-lsp-sandbox-view (status)
  "What to show for STATUS (a plist of `agent/sandboxStatus').
A plist (:kind KIND :summary LINE :lines LINES), KIND as
`agent-lsp-sandbox-kind' says; the conversation's \"always\" answers that let
bash leave the sandbox (STATUS's grants) come last."
  (let* ((view (agent-lsp--sandbox-kind-view status))
         (grants (append (plist-get status :grants) nil)))
    (if (or (null grants) (equal (plist-get view :kind) "off"))
        view
      (plist-put view :lines
                 (append (plist-get view :lines)
                         (list "" "always allowed in this conversation:")
                         (mapcar (lambda (grant)
                                   (concat "- " (agent-lsp-escape-control
                                                 (format "%s" (plist-get grant :title)))))
                                 grants))))))

(defun agent-lsp--sandbox-kind-view (status)
  "What to show for STATUS by its kind, without its grants."
  (let ((kind (agent-lsp-sandbox-kind status))
        (mode (format "%s" (plist-get status :mode))))
    (pcase kind
      ("off"
       (list :kind kind :summary "sandbox off: bash commands run with your full rights"
             :lines '("mode: off"
                      "bash commands run with your full rights: nothing is hidden or limited")))
      ("none"
       (let ((reason (if (agent-lsp--given (plist-get status :reason))
                         (plist-get status :reason)
                       "this system offers no sandbox")))
         (list :kind kind
               :summary (format "no sandbox: %s; every bash call asks first" reason)
               :lines (list (format "mode: %s, not enforced: %s" mode reason)
                            "every bash call asks for your permission first, and runs with your rights"))))
      (_
       (let* ((roots (append (plist-get status :writableRoots) nil))
              (hidden (append (plist-get status :hiddenPaths) nil))
              (weakened (append (plist-get status :weakened) nil))
              (fallback (and (agent-lsp--given (plist-get status :fallback))
                             (plist-get status :fallback)))
              (limits (plist-get status :limits))
              (lines
               (list (concat "mode: " mode)
                     (agent-lsp--sandbox-layers status)
                     (agent-lsp--sandbox-network status)
                     (if roots
                         (format "writable: %s and each call's private $TMPDIR"
                                 (string-join roots ", "))
                       "writable: only each call's private $TMPDIR")
                     (format "limits: %s processes · files up to %s MB · %s MB of memory per process"
                             (agent-lsp--thousands (plist-get limits :processes))
                             (agent-lsp--thousands (plist-get limits :fileSizeMB))
                             (agent-lsp--thousands (plist-get limits :memoryMB))))))
         (when hidden
           (setq lines (append lines (list (concat "hidden from commands: "
                                                   (string-join hidden ", "))))))
         (when (equal kind "weakened")
           (setq lines (append lines
                               (list "" (concat "weaker than the full sandbox:"
                                                (if fallback (concat " " fallback) "")))
                               (mapcar (lambda (promise) (concat "- " promise)) weakened))))
         (list :kind kind
               :summary (if (equal kind "full")
                            (format "sandbox: %s, every layer in force" mode)
                          (format "sandbox: %s, weaker here: %s" mode
                                  (or fallback (car weakened) "")))
               :lines lines))))))

(defun agent-lsp-sandbox ()
  "Show what confines the agent's bash commands in this project.
The server's `agent/sandboxStatus' in `*agent-lsp-sandbox*': the mode, the
layers in force (namespaces, network namespace, Landlock, seccomp, process
limit), the network, where commands may write, the limits and agent-lsp's files
they may not read.  Where the system refuses namespaces the server uses a
weaker form: the summary then says why (bubblewrap's own message), the last
lines what does not hold in full, and a warning says so too (also when the
sandbox is off or this system has none).  Nothing waits for the server:
the buffer shows when its answer comes."
  (interactive)
  (agent-lsp--with-server #'agent-lsp--sandbox-show))

(defun agent-lsp--sandbox-show (server)
  "Ask SERVER for its sandbox; show it when it answers."
  (agent-lsp--call
   ;; With the conversation: its folder's sandbox and the "always" answers that widen it.
   server agent-lsp-method-sandbox-status (if (and agent-lsp--session-id
                                        (eq server agent-lsp--conversation-server))
                                   (list :sessionId agent-lsp--session-id)
                                 (make-hash-table))
   (lambda (status)
     (let ((view (agent-lsp-sandbox-view status)))
       (with-current-buffer (agent-lsp--get-buffer agent-lsp--sandbox-buffer
                                                   #'agent-lsp-conversation-mode)
         (let ((inhibit-read-only t))
           (erase-buffer)
           (insert "# agent-lsp sandbox: " (agent-lsp--server-root server) "\n\n"
                   (plist-get view :summary) "\n\n"
                   (string-join (plist-get view :lines) "\n") "\n"))
         (goto-char (point-min)))
       (display-buffer agent-lsp--sandbox-buffer)
       (if (equal (plist-get view :kind) "full")
           (message "agent-lsp: %s" (plist-get view :summary))
         (display-warning 'agent-lsp (plist-get view :summary) :warning))))))

(provide 'agent-lsp-sandbox)
;;; agent-lsp-sandbox.el ends here
