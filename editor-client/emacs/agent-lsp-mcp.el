;;; agent-lsp-mcp.el --- The MCP servers of an agent-lsp folder  -*- lexical-binding: t; -*-

;;; Commentary:

;; `agent-lsp-mcp-servers' lists the project's MCP servers (`agent/mcpServers')
;; in `*agent-lsp-mcp*': each one's name, state, origin, transport, command or
;; URL, tools, error and warnings.  There `a' approves the folder's own server at
;; point (`agent/approveMcpServer'; the server then asks through
;; `agent/requestPermission', which agent-lsp-permissions answers) and `g' lists
;; them again; while one is starting, the buffer is listed again every second.
;;
;; Every field shown is a server's or a definition's text (a repository's
;; .vscode/mcp.json names the command, an MCP server's stderr is the error), so
;; all of it is escaped.  The lines are those of the Neovim client (mcp.lua);
;; tests/support/editor_scenarios/mcp.py holds both to them.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'seq)
(require 'agent-lsp-core)
(require 'agent-lsp-trace)

(defconst agent-lsp--mcp-buffer "*agent-lsp-mcp*")
;; While a server is starting the buffer is listed again this often, so its
;; `ready' (or `failed') shows without a key press; a bound, so that a server
;; stuck starting does not poll for ever.
(defconst agent-lsp--mcp-refresh-seconds 1)
(defconst agent-lsp--mcp-refreshes 60)

(defvar-local agent-lsp--mcp-server nil
  "The agent-lsp server whose folder's MCP servers the buffer lists.")
(defvar-local agent-lsp--mcp-generation 0
  "Bumped by each listing, so that an older listing's timer stops.")

(defun agent-lsp--mcp-string (value)
  "VALUE if it is a string, else \"\" (absent, or JSON null)."
  (if (stringp value) value ""))

(defvar agent-lsp--mcp-announced (make-hash-table :test #'equal)
  "The folder's own MCP servers said to wait for approval: (ROOT NAME TARGET).
A new or changed definition is said again.")

(defun agent-lsp--mcp-awaiting-notes (root servers hint)
  "The note for each of SERVERS (`agent/mcpServers') that waits for approval.
Each ends with HINT; one said for ROOT as it is defined now is not said again.
A folder's own server that is new, or changed since it was approved, is
otherwise left out of asks silently."
  (let (lines)
    (seq-doseq (server (or servers []))
      (let ((key (list root (agent-lsp--mcp-string (plist-get server :name))
                       (agent-lsp--mcp-string (plist-get server :target)))))
        (when (and (equal (plist-get server :state) "awaiting-approval")
                   (not (gethash key agent-lsp--mcp-announced)))
          (puthash key t agent-lsp--mcp-announced)
          (push (format "_MCP server %s of this folder is new or changed and waits for your approval (%s): its tools are not in this ask; %s_"
                        (agent-lsp-escape-control (nth 1 key))
                        (agent-lsp-escape-control (nth 2 key))
                        hint)
                lines))))
    (nreverse lines)))

(defun agent-lsp-mcp-server-lines (server)
  "The lines of SERVER (a plist of `agent/mcpServers'), escaped.
Its name, state and where it comes from, then its command or URL, its tools,
its error (every line) and its warnings."
  (let* ((transport (agent-lsp--mcp-string (plist-get server :transport)))
         (state (agent-lsp--mcp-string (plist-get server :state)))
         (target (agent-lsp--mcp-string (plist-get server :target)))
         (tools (mapcar #'agent-lsp--mcp-string (append (plist-get server :tools) nil)))
         (error-text (string-trim-right
                      (replace-regexp-in-string
                       "\r\n" "\n" (agent-lsp--mcp-string (plist-get server :error)))
                      "[ \t\n\r\f\v]+"))
         (about (delq nil (list (agent-lsp-escape-control
                                 (agent-lsp--mcp-string (plist-get server :origin)))
                                (unless (string-empty-p transport)
                                  (agent-lsp-escape-control transport))
                                (when (eq (plist-get server :trusted) t) "trusted"))))
         (lines (list (format "%s: %s (%s)"
                              (agent-lsp-escape-control
                               (agent-lsp--mcp-string (plist-get server :name)))
                              (agent-lsp-escape-control state)
                              (string-join about ", ")))))
    (unless (string-empty-p target)
      (push (format "    %s: %s"
                    (pcase transport ("stdio" "command") ("http" "url") (_ "target"))
                    (agent-lsp-escape-control target))
            lines))
    (pcase state
      ("awaiting-approval"
       (push "    not started: a approves it (agent-lsp asks you first)" lines))
      ("rejected"
       (push "    not started: you rejected it (don't ask again); a approves it after all" lines))
      ("stopped"
       (push "    stopped by the user: an ask does not start it until the agent-lsp server restarts"
             lines)))
    (when tools
      (push (concat "    tools: " (agent-lsp-escape-control (string-join tools ", "))) lines))
    (unless (string-empty-p error-text)
      (let ((first t))
        (dolist (line (split-string error-text "\n"))
          (push (concat (if first "    error: " "      ") (agent-lsp-escape-control line)) lines)
          (setq first nil))))
    (dolist (warning (append (plist-get server :warnings) nil))
      (push (concat "    warning: " (agent-lsp-escape-control (agent-lsp--mcp-string warning)))
            lines))
    (nreverse lines)))

(defun agent-lsp-mcp-lines (servers)
  "The lines of SERVERS (a vector or list of plists), a blank line between two."
  (let ((servers (append servers nil)))
    (if (null servers)
        (list (concat "No MCP servers for this folder. Define them in the user file"
                      " (~/.config/agent-lsp/config.toml, [mcp_servers.NAME]), the mcpServers setting,"
                      " or the folder's .vscode/mcp.json or .mcp.json."))
      (cdr (apply #'append (mapcar (lambda (server)
                                     (cons "" (agent-lsp-mcp-server-lines server)))
                                   servers))))))

(defvar agent-lsp-mcp-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map "a" #'agent-lsp-mcp-approve)
    map)
  "Keymap of `*agent-lsp-mcp*'; `g' (`revert-buffer') lists the servers again.")

(define-derived-mode agent-lsp-mcp-mode special-mode "agent-lsp-mcp"
  "Major mode of `*agent-lsp-mcp*': the folder's MCP servers.
\\<agent-lsp-mcp-mode-map>\\[agent-lsp-mcp-approve] approves the server at point, \\[revert-buffer] lists them again."
  (setq-local revert-buffer-function (lambda (&rest _) (agent-lsp-mcp-refresh)))
  (setq-local truncate-lines nil))

(defun agent-lsp--mcp-render (buffer server servers)
  "Show SERVERS (of agent-lsp SERVER's folder) in BUFFER.
Point, and each window's point, stay on their line: the buffer is rewritten
under the user's cursor while a server starts."
  (with-current-buffer buffer
    (let ((inhibit-read-only t)
          (root (agent-lsp--server-root server))
          (line (line-number-at-pos))
          (windows (mapcar (lambda (w) (cons w (line-number-at-pos (window-point w))))
                           (get-buffer-window-list buffer nil t))))
      (setq agent-lsp--mcp-server server
            default-directory root)
      (erase-buffer)
      (insert "# agent-lsp MCP servers: " root "\n\n")
      (let ((servers (append servers nil)))
        (if (null servers)
            (insert (string-join (agent-lsp-mcp-lines nil) "\n") "\n")
          (dolist (entry servers)
            (unless (eq entry (car servers)) (insert "\n"))
            ;; The server's lines carry it, for `agent-lsp-mcp-approve' at point.
            (insert (propertize (string-join (agent-lsp-mcp-server-lines entry) "\n")
                                'agent-lsp-mcp entry)
                    "\n"))))
      (insert "\na: approve the server at point · g: list again\n")
      (goto-char (point-min))
      (forward-line (1- line))
      (dolist (entry windows)
        (set-window-point (car entry) (save-excursion (goto-char (point-min))
                                                      (forward-line (1- (cdr entry)))
                                                      (point)))))))

(defun agent-lsp--mcp-starting-p (servers)
  "Non-nil if one of SERVERS is starting."
  (cl-some (lambda (s) (equal (plist-get s :state) "starting")) (append servers nil)))

(defun agent-lsp--mcp-show (buffer server servers tries)
  "Show SERVERS in BUFFER; list them again later while one is starting.
TRIES counts those refreshes."
  (agent-lsp--mcp-render buffer server servers)
  (let ((generation (with-current-buffer buffer
                      (cl-incf agent-lsp--mcp-generation))))
    (when (and (agent-lsp--mcp-starting-p servers) (< tries agent-lsp--mcp-refreshes))
      (run-at-time agent-lsp--mcp-refresh-seconds nil
                   #'agent-lsp--mcp-refresh-later buffer generation (1+ tries)))))

(defun agent-lsp--mcp-refresh-later (buffer generation tries)
  "List BUFFER's servers again, asynchronously, if GENERATION is still shown.
TRIES counts the refreshes in a row."
  (when (buffer-live-p buffer)
    (let ((server (buffer-local-value 'agent-lsp--mcp-server buffer)))
      (when (and (= generation (buffer-local-value 'agent-lsp--mcp-generation buffer))
                 server (jsonrpc-running-p server))
        (agent-lsp--async-request
         server agent-lsp-method-mcp-servers (make-hash-table)
         :success-fn (lambda (result)
                       (when (and (buffer-live-p buffer)
                                  (= generation (buffer-local-value
                                                 'agent-lsp--mcp-generation buffer)))
                         (agent-lsp--mcp-show buffer server (plist-get result :servers) tries)))
         :error-fn #'ignore
         :timeout 30)))))

(defun agent-lsp--mcp-buffer (root text)
  "`*agent-lsp-mcp*'; made for ROOT's servers and saying TEXT if new."
  (or (get-buffer agent-lsp--mcp-buffer)
      (with-current-buffer (get-buffer-create agent-lsp--mcp-buffer)
        (agent-lsp-mcp-mode)
        (let ((inhibit-read-only t))
          (insert "# agent-lsp MCP servers: " root "\n\n" text "\n"))
        (current-buffer))))

(defun agent-lsp--mcp-list (server)
  "List SERVER's folder's MCP servers in `*agent-lsp-mcp*'; return the buffer.
Nothing waits: the buffer says it is listing until the answer comes."
  (let ((buffer (agent-lsp--mcp-buffer (agent-lsp--server-root server) "listing…")))
    (agent-lsp--call server agent-lsp-method-mcp-servers (make-hash-table)
                     (lambda (result)
                       (when (buffer-live-p buffer)
                         (agent-lsp--mcp-show buffer server (plist-get result :servers) 0))))
    buffer))

(defun agent-lsp-mcp-servers ()
  "List the MCP servers of the current project's folder.
From the user file's [mcp_servers.NAME], the `:mcpServers' setting and the
folder's own .vscode/mcp.json and .mcp.json (see docs/mcp.md): each one's
name, state (starting, ready, failed, disabled, stopped, awaiting-approval,
rejected), origin,
transport, command or URL, tools, error and warnings.  In the buffer,
\\<agent-lsp-mcp-mode-map>\\[agent-lsp-mcp-approve] approves the folder's own server at point and \\[revert-buffer] lists
them again.  Returns the buffer."
  (interactive)
  (let ((buffer (if (agent-lsp--live-server (agent-lsp--root))
                    (agent-lsp--with-server #'agent-lsp--mcp-list)
                  ;; Shown at once; filled once the server started and answered.
                  (prog1 (agent-lsp--mcp-buffer (agent-lsp--root) "starting the server…")
                    (agent-lsp--with-server #'agent-lsp--mcp-list)))))
    (with-current-buffer buffer
      (goto-char (point-min))
      (forward-line 2))
    (pop-to-buffer buffer)
    buffer))

(defun agent-lsp-mcp-refresh ()
  "List the servers of `*agent-lsp-mcp*' again."
  (interactive)
  (let ((buffer (get-buffer agent-lsp--mcp-buffer)))
    (unless buffer (user-error "No MCP server list yet: M-x agent-lsp-mcp-servers"))
    (let ((server (buffer-local-value 'agent-lsp--mcp-server buffer)))
      (if (and server (jsonrpc-running-p server))
          (agent-lsp--mcp-list server)
        (with-current-buffer buffer (agent-lsp--with-server #'agent-lsp--mcp-list))))))

(defun agent-lsp-mcp-approve (&optional name)
  "Approve the folder's own MCP server NAME (default: the one at point).
The server asks you first (the command line or URL it would run); once you
allow it, that exact definition starts, and a changed one asks again."
  (interactive)
  (let* ((at (unless name (get-text-property (line-beginning-position) 'agent-lsp-mcp)))
         (name (or name (plist-get at :name)
                   (user-error "No MCP server at point")))
         (server (and (derived-mode-p 'agent-lsp-mcp-mode) agent-lsp--mcp-server)))
    (when (and at (not (member (plist-get at :state) '("awaiting-approval" "rejected"))))
      (user-error "%s is %s: only a server awaiting approval (or rejected) is approved here"
                  (agent-lsp-escape-control name)
                  (agent-lsp-escape-control (agent-lsp--mcp-string (plist-get at :state)))))
    (if server
        (agent-lsp--mcp-send-approval server name)
      (agent-lsp--with-server (lambda (server) (agent-lsp--mcp-send-approval server name))))))

(defun agent-lsp--mcp-send-approval (server name)
  "Ask SERVER to approve the folder's MCP server NAME."
  (agent-lsp--async-request
   server agent-lsp-method-approve-mcp-server (list :name name)
   :success-fn (lambda (result)
                 (message (if (eq (plist-get result :approved) t)
                              "agent-lsp: approved MCP server %s: %s"
                            "agent-lsp: MCP server %s not approved: %s")
                          (agent-lsp-escape-control name)
                          (agent-lsp-escape-control
                           (agent-lsp--mcp-string (plist-get result :state))))
                 (let ((buffer (get-buffer agent-lsp--mcp-buffer)))
                   (when (and buffer (eq (buffer-local-value 'agent-lsp--mcp-server buffer)
                                         server))
                     (agent-lsp--mcp-list server))))
   :error-fn (lambda (error)
               (message "agent-lsp: agent/approveMcpServer failed: %s"
                        (plist-get error :message)))
   ;; The user answers the permission request meanwhile: no time limit here (the
   ;; server's permissionTimeout is the limit).
   :timeout nil))

(provide 'agent-lsp-mcp)
;;; agent-lsp-mcp.el ends here
