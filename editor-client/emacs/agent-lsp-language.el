;;; agent-lsp-language.el --- The editor's language servers answer for agent-lsp  -*- lexical-binding: t; -*-

;;; Commentary:

;; The agent's language tools (diagnostics after a write, definition,
;; references, symbols, hover, rename) answered by the language servers eglot
;; already runs for the user, instead of servers agent-lsp would start itself.
;; The client says it can (`experimental.agent.languageFeatures' at
;; initialize), and the server asks:
;;
;; - `agent/languageDiagnostics' {uris, waitMs}: the last diagnostics each
;;   file's eglot server published (kept here as they arrive, in the LSP shape
;;   and the encoding eglot speaks to its servers).  A file not visited is
;;   visited without being shown (`find-file-noselect'), so eglot manages it
;;   when a server of its project handles its mode; a visited, unmodified
;;   buffer whose file changed on disk (the agent's write) is reverted.  With
;;   waitMs > 0 the reply waits, up to waitMs, for a publish after the request
;;   arrived (or one already made for the buffer's current text); a file with
;;   none, or no server (said at once), is `answered: false'.
;; - `agent/languageRequest' {method, params}: the request sent with
;;   `jsonrpc-async-request' to the eglot server of the file's buffer (every
;;   eglot server but agent-lsp's for `workspace/symbol'); the first non-null
;;   result, else null, and the server says no language server of the editor
;;   answered.
;;
;; Both replies are sent when they are ready, never blocking Emacs: the
;; requests are taken out of `jsonrpc-connection-receive' (as permission
;; requests are) and answered with `jsonrpc-connection-send'.
;;
;; Positions: eglot 1.9 (Emacs 28) speaks UTF-16 to every server, agent-lsp's
;; included; a later eglot negotiates an encoding per server, and a position or
;; range is converted between a language server's and agent-lsp's when they
;; differ.

;;; Code:

(require 'cl-lib)
(require 'eglot)
(require 'jsonrpc)
(require 'subr-x)
(require 'agent-lsp-core)
(require 'agent-lsp-protocol)

(defcustom agent-lsp-language-request-timeout 10
  "Seconds a request forwarded to one of the editor's language servers waits."
  :type 'number
  :group 'agent-lsp)

(defvar agent-lsp--published (make-hash-table :test #'equal)
  "File (true name) -> (COUNT DIAGNOSTICS TICK ENCODING): the last
publishDiagnostics of a language server other than agent-lsp for that file,
how many it sent so far, the buffer's `buffer-chars-modified-tick' when it
arrived, and the position encoding of that server.")

(defvar agent-lsp--diagnostic-waits nil
  "The `agent/languageDiagnostics' requests waiting for a publish.")

(cl-defmethod eglot-client-capabilities :around ((_server agent-lsp-server))
  "Add: this client answers the agent's language requests."
  (let* ((capabilities (cl-call-next-method))
         (experimental (copy-sequence (plist-get capabilities :experimental)))
         (agent (copy-sequence (plist-get experimental :agent))))
    (plist-put capabilities :experimental
               (plist-put experimental :agent (plist-put agent :languageFeatures t)))))

(defun agent-lsp--language-file (uri)
  "The true file name of URI."
  (file-truename (eglot--uri-to-path uri)))

(defun agent-lsp--language-server (buffer)
  "The eglot server (not agent-lsp's) managing BUFFER, or nil."
  (when (buffer-live-p buffer)
    (with-current-buffer buffer
      (let ((server (ignore-errors (eglot-current-server))))
        (and server (not (cl-typep server 'agent-lsp-server))
             (jsonrpc-running-p server)
             server)))))

(defun agent-lsp--language-buffer (file)
  "The buffer visiting FILE, visited now (not shown) if none does.
An unmodified buffer whose file changed on disk is reverted first.
The file may be one the agent wrote: its file-local variables and the
folder's .dir-locals.el are not applied (an `eval:' there would run
outside the sandbox, or ask the user to let it)."
  (let ((buffer (find-buffer-visiting file))
        (enable-local-variables nil)
        (enable-dir-local-variables nil)
        (enable-local-eval nil)
        (inhibit-message t))
    (cond ((null buffer)
           ;; A regular file only (a FIFO put in its place would hang Emacs), opened as it is
           ;; (no decompressor or decryption a file name handler would run, no size prompt).
           (when (file-regular-p file)
             (let ((file-name-handler-alist nil)
                   (large-file-warning-threshold nil))
               (ignore-errors (find-file-noselect file)))))
          (t
           (with-current-buffer buffer
             (unless (or (buffer-modified-p) (verify-visited-file-modtime buffer)
                         (not (file-exists-p file)))
               (ignore-errors (revert-buffer t t t))))
           buffer))))

(cl-defmethod eglot-handle-notification :after
  (server (_method (eql textDocument/publishDiagnostics)) &key uri diagnostics
          &allow-other-keys)
  "Keep what SERVER published for URI (DIAGNOSTICS), if not agent-lsp."
  (unless (cl-typep server 'agent-lsp-server)
    (let* ((file (agent-lsp--language-file uri))
           (buffer (find-buffer-visiting file))
           (old (gethash file agent-lsp--published)))
      (puthash file (list (1+ (or (car old) 0)) diagnostics
                          (and buffer (buffer-chars-modified-tick buffer))
                          (agent-lsp--language-encoding server))
               agent-lsp--published)
      (dolist (request agent-lsp--diagnostic-waits)
        (when (cl-every #'agent-lsp--language-fresh (plist-get request :files))
          (agent-lsp--language-answer request))))))

(defun agent-lsp--language-fresh (file)
  "Whether the diagnostics of FILE (a plist of a waiting request) are current.
A file no eglot server manages has nothing to wait for."
  (or (plist-get file :current)
      (not (agent-lsp--language-server (plist-get file :buffer)))
      (> (or (car (gethash (plist-get file :file) agent-lsp--published)) 0)
         (plist-get file :count))))

(defun agent-lsp--language-diagnostics (server id params)
  "Answer SERVER's `agent/languageDiagnostics' ID with PARAMS, now or once fresh."
  (let* ((wait (or (plist-get params :waitMs) 0))
         (started (float-time))
         (files
          (mapcar
           (lambda (uri)
             (let* ((file (agent-lsp--language-file uri))
                    (before (find-buffer-visiting file))
                    (tick (and before (buffer-chars-modified-tick before)))
                    (entry (gethash file agent-lsp--published))
                    (count (or (car entry) 0))
                    (buffer (agent-lsp--language-buffer file)))
               (list :uri uri :file file :count count :buffer buffer
                     ;; Published for the text as it is now (before this request).
                     :current (and tick (buffer-live-p buffer)
                                   (eql tick (buffer-chars-modified-tick buffer))
                                   (eql tick (nth 2 entry))))))
           (append (plist-get params :uris) nil)))
         (request (list :server server :id id :files files :wait (> wait 0))))
    (if (or (<= wait 0) (cl-every #'agent-lsp--language-fresh files))
        (agent-lsp--language-answer request)
      ;; The wait counts from the request's arrival: visiting the files is part of it.
      (plist-put request :timer
                 (run-at-time (max 0 (- (/ wait 1000.0) (- (float-time) started))) nil
                              #'agent-lsp--language-answer request))
      (push request agent-lsp--diagnostic-waits))))

(defun agent-lsp--language-answer (request)
  "Send the reply of REQUEST (a plist), once."
  (unless (plist-get request :done)
    (plist-put request :done t)
    (setq agent-lsp--diagnostic-waits (delq request agent-lsp--diagnostic-waits))
    (when-let ((timer (plist-get request :timer)))
      (cancel-timer timer))
    (let ((server (plist-get request :server)))
      (when (jsonrpc-running-p server)
        (jsonrpc-connection-send
         server :id (plist-get request :id)
         :result
         (list :files
               (vconcat
                (mapcar
                 (lambda (file)
                   (let* ((entry (gethash (plist-get file :file) agent-lsp--published))
                          (diagnostics (copy-tree (or (nth 1 entry) []) t))
                          (handled (or (agent-lsp--language-server (plist-get file :buffer))
                                       (> (length diagnostics) 0)))
                          (answered (and handled
                                         (or (not (plist-get request :wait))
                                             (agent-lsp--language-fresh file)))))
                     (when (nth 3 entry)
                       (agent-lsp--language-convert diagnostics (plist-get file :uri)
                                                    (nth 3 entry)
                                                    (agent-lsp--language-encoding server)))
                     (list :uri (plist-get file :uri)
                           :diagnostics (vconcat diagnostics)
                           :answered (if answered t :json-false))))
                 (plist-get request :files)))))))))

;;; Positions between encodings

(defun agent-lsp--language-encoding (server)
  "The position encoding SERVER negotiated (\"utf-16\" unless it said another)."
  (or (ignore-errors (plist-get (eglot--capabilities server) :positionEncoding)) "utf-16"))

(defun agent-lsp--language-line (uri line)
  "Line LINE (0-based) of the document URI.
From its buffer if one visits it, else from the file."
  (let* ((file (agent-lsp--language-file uri))
         (buffer (find-buffer-visiting file)))
    (with-temp-buffer
      (if buffer
          (insert-buffer-substring buffer)
        ;; A regular file only (a FIFO would hang Emacs), read as bytes on disk.
        (when (file-regular-p file)
          (let ((file-name-handler-alist nil))
            (ignore-errors (insert-file-contents file)))))
      (goto-char (point-min))
      (if (zerop (forward-line line))
          (buffer-substring-no-properties (point) (line-end-position))
        ""))))

(defun agent-lsp--language-units (text encoding)
  "The length of TEXT in ENCODING's code units."
  (pcase encoding
    ("utf-8" (length (encode-coding-string text 'utf-8 t)))
    ("utf-32" (length text))
    (_ (+ (length text) (cl-count-if (lambda (c) (> c #xFFFF)) text)))))

(defun agent-lsp--language-column (text column from to)
  "COLUMN of TEXT counted in encoding FROM, counted in encoding TO."
  (let ((chars 0))
    (while (and (< chars (length text))
                (<= (agent-lsp--language-units (substring text 0 (1+ chars)) from) column))
      (setq chars (1+ chars)))
    (agent-lsp--language-units (substring text 0 chars) to)))

(defun agent-lsp--language-convert (value uri from to)
  "Convert, in place, every position in VALUE (parsed JSON) of document URI
from encoding FROM to TO; a uri, targetUri or textDocument inside names the
document of what it holds, and a workspace edit's changes are by uri."
  (unless (equal from to)
    (cond
     ((vectorp value)
      (dotimes (i (length value))
        (agent-lsp--language-convert (aref value i) uri from to)))
     ((and (consp value) (keywordp (car value)))
      (if (and (numberp (plist-get value :line)) (numberp (plist-get value :character)))
          (when uri
            (plist-put value :character
                       (agent-lsp--language-column
                        (agent-lsp--language-line uri (plist-get value :line))
                        (plist-get value :character) from to)))
        (let ((here (or (and (stringp (plist-get value :uri)) (plist-get value :uri))
                        (and (stringp (plist-get value :targetUri)) (plist-get value :targetUri))
                        (plist-get (plist-get value :textDocument) :uri)
                        uri)))
          (cl-loop for (key child) on value by #'cddr
                   do (if (eq key :changes)
                          (cl-loop for (change-uri edits) on child by #'cddr
                                   do (agent-lsp--language-convert
                                       edits (substring (symbol-name change-uri) 1) from to))
                        (agent-lsp--language-convert child here from to)))))))))

(defun agent-lsp--language-servers ()
  "Every running eglot server but agent-lsp's."
  (let (found)
    (maphash (lambda (_project servers)
               (dolist (server servers)
                 (when (and (not (cl-typep server 'agent-lsp-server))
                            (jsonrpc-running-p server))
                   (cl-pushnew server found))))
             eglot--servers-by-project)
    (nreverse found)))

(defun agent-lsp--language-request (server id params)
  "Forward SERVER's `agent/languageRequest' ID (PARAMS) to the editor's servers."
  (let* ((method (plist-get params :method))
         (lsp-params (plist-get params :params))
         (uri (plist-get (plist-get lsp-params :textDocument) :uri))
         (targets (if uri
                      (when-let ((target (agent-lsp--language-server
                                          (agent-lsp--language-buffer
                                           (agent-lsp--language-file uri)))))
                        (list target))
                    (agent-lsp--language-servers))))
    (agent-lsp--language-forward server id (intern (concat ":" method)) lsp-params
                                 targets nil uri)))

(defun agent-lsp--language-forward (server id method params targets empty uri)
  "Send METHOD with PARAMS (of document URI) to the first of TARGETS; reply to
SERVER's ID with its non-null result, else try the next (EMPTY: an empty list
met so far).  Positions are converted when a target's encoding is not SERVER's."
  (let ((ours (agent-lsp--language-encoding server))
        (reply (lambda (result)
                 (when (jsonrpc-running-p server)
                   (jsonrpc-connection-send server :id id :result (list :result result))))))
    (if (null targets)
        (funcall reply empty)
      (let* ((theirs (agent-lsp--language-encoding (car targets)))
             (sent (copy-tree params t))
             (next (lambda (&optional empty-now)
                     (agent-lsp--language-forward server id method params (cdr targets)
                                                  (or empty empty-now) uri))))
        (agent-lsp--language-convert sent uri ours theirs)
        (jsonrpc-async-request
         (car targets) method sent
         :success-fn (lambda (result)
                       (cond ((null result) (funcall next))
                             ((and (vectorp result) (zerop (length result)))
                              (funcall next result))
                             (t (agent-lsp--language-convert result uri theirs ours)
                                (funcall reply result))))
         :error-fn (lambda (_error) (funcall next))
         :timeout-fn (lambda () (funcall next))
         :timeout agent-lsp-language-request-timeout)))))

(defun agent-lsp--language-receive (receive connection message)
  "Around `jsonrpc-connection-receive' (RECEIVE): CONNECTION's language request
MESSAGE is answered here, when its answer is ready; the rest goes to RECEIVE."
  (let* ((method (plist-get message :method))
         (id (plist-get message :id))
         (name (and id method (cl-typep connection 'agent-lsp-server)
                    (format ":%s" method))))
    (cond ((equal name (symbol-name agent-lsp-method-language-diagnostics))
           (agent-lsp--language-log connection message)
           (agent-lsp--language-guard connection id #'agent-lsp--language-diagnostics
                                      (plist-get message :params)))
          ((equal name (symbol-name agent-lsp-method-language-request))
           (agent-lsp--language-log connection message)
           (agent-lsp--language-guard connection id #'agent-lsp--language-request
                                      (plist-get message :params)))
          (t (funcall receive connection message)))))

(defun agent-lsp--language-log (connection message)
  "Log MESSAGE in CONNECTION's events buffer, as jsonrpc would."
  (when (fboundp 'jsonrpc--log-event)
    (ignore-errors (jsonrpc--log-event connection message 'server))))

(defun agent-lsp--language-guard (connection id handler params)
  "Run HANDLER with CONNECTION, ID and PARAMS; an error is replied as one."
  (condition-case err
      (funcall handler connection id params)
    (error
     (when (jsonrpc-running-p connection)
       (jsonrpc-connection-send connection :id id
                                :error (list :code -32603
                                             :message (error-message-string err)))))))

(advice-add 'jsonrpc-connection-receive :around #'agent-lsp--language-receive)

(provide 'agent-lsp-language)
;;; agent-lsp-language.el ends here
