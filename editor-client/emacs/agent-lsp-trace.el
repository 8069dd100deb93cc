;;; agent-lsp-trace.el --- Trace lines and escaping for agent-lsp  -*- lexical-binding: t; -*-

;;; Commentary:

;; The one-line texts of the agent-lsp client, in the same layout as the terminal and
;; Neovim clients: the model's text escaped, the trace line of a tool call or a
;; compaction.  The words are the server's (a call's title, durationText and outputHead,
;; a compaction's summary: server.agent.activity); this file adds the layout only.
;; Pure functions: no buffer, no server.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'seq)

(defconst agent-lsp--summary-chars 80 "How long a one-line text may be.")

;; tooling/display.py _INVISIBLE_RANGES: every format character (Cf), U+2028/2029,
;; lone surrogates, the Hangul fillers, the tag characters.
(defconst agent-lsp--invisible
  '(#xad (#x600 . #x605) #x61c #x6dd #x70f (#x890 . #x891) #x8e2 (#x115f . #x1160) #x180e
    (#x200b . #x200f) (#x2028 . #x202e) (#x2060 . #x2064) (#x2066 . #x206f) #x3164
    (#xd800 . #xdfff) #xfeff #xffa0 (#xfff9 . #xfffb) #x110bd #x110cd (#x13430 . #x1343f)
    (#x1bca0 . #x1bca3) (#x1d173 . #x1d17a) (#xe0000 . #xe007f))
  "The characters beyond the controls that `agent-lsp-escape-control' spells out.")

(defconst agent-lsp--consent-only
  '(#x34f (#x17b4 . #x17b5) (#x180b . #x180d) #x180f #x2065
    (#xe000 . #xf8ff) (#xfe00 . #xfe0f) (#xe0100 . #xe01ef) (#xf0000 . #x10ffff))
  "What `agent-lsp-escape-consent' spells out too: private use, variation selectors.")

(defconst agent-lsp--consent-blank-run 3
  "A run of more blanks than this shows as one marker in consent text.")

(defun agent-lsp--char-class (newline consent)
  "A regexp of one character to escape; NEWLINE includes \\n, CONSENT its extra ranges."
  (rx-to-string
   `(any (0 . 8) ,@(if newline '((10 . 31)) '((11 . 31))) 127 (#x80 . #x9f)
         ,@agent-lsp--invisible ,@(and consent agent-lsp--consent-only))
   t))

(defconst agent-lsp--controls (agent-lsp--char-class t nil)
  "What `agent-lsp-escape-control' spells out: controls but tab, invisible, format.")

(defconst agent-lsp--controls-but-newline (agent-lsp--char-class nil nil)
  "`agent-lsp--controls' without the newline.")

(defconst agent-lsp--consent (agent-lsp--char-class t t)
  "What `agent-lsp-escape-consent' spells out.")

(defconst agent-lsp--consent-but-newline (agent-lsp--char-class nil t)
  "`agent-lsp--consent' without the newline.")

(defconst agent-lsp--blank-run
  (rx-to-string `(>= ,(1+ agent-lsp--consent-blank-run)
                     (any " \t" #xa0 #x1680 (#x2000 . #x200a) #x202f #x205f #x2800 #x3000))
                t)
  "A run of blanks that consent text shows as ␣×N.")

(defun agent-lsp--spelled (match)
  "The escaped spelling of the one-character MATCH."
  (let ((char (aref match 0)))
    (pcase char
      (?\e "\\e")
      (?\r "\\r")
      (?\n "⏎")
      (_ (format (cond ((< char #xa0) "\\x%02x") ((<= char #xffff) "\\u%04x") (t "\\u{%x}"))
                 char)))))

(defun agent-lsp-escape-control (text &optional keep-newlines)
  "TEXT (the model's) made safe to show, as the server's tooling/display.py does.
ESC becomes \\e, CR \\r, a newline ⏎ (kept with KEEP-NEWLINES), other C0,
DEL and C1 controls \\xNN, bidi, invisible and format characters \\uXXXX
\(\\u{XXXXX} beyond U+FFFF); tabs stay.  An escape sequence in a command must
not hide part of it.  Escaping twice changes nothing."
  (let ((case-fold-search nil))
    (replace-regexp-in-string
     (if keep-newlines agent-lsp--controls-but-newline agent-lsp--controls)
     #'agent-lsp--spelled text t t)))

(defun agent-lsp-escape-consent (text &optional keep-newlines)
  "TEXT the user is asked to allow, as the server's escape_consent shows it.
`agent-lsp-escape-control', private-use characters and variation selectors
spelled out too, and each run of more than `agent-lsp--consent-blank-run'
blanks shown as ␣×N.  KEEP-NEWLINES as there."
  (let ((case-fold-search nil))
    (replace-regexp-in-string
     agent-lsp--blank-run
     (lambda (run) (format "␣×%d" (length run)))
     (replace-regexp-in-string
      (if keep-newlines agent-lsp--consent-but-newline agent-lsp--consent)
      #'agent-lsp--spelled text t t)
     t t)))

(defun agent-lsp--one-line (text &optional max)
  "TEXT on one line, escaped; cut to MAX chars with `…'.
Line breaks show as \" ⏎ \" (so `git fetch #' then `curl ... | sh' on the
next line does not read as one comment), other whitespace runs as one space."
  (let* ((max (or max agent-lsp--summary-chars))
         (parts (mapcar (lambda (part)
                          (string-trim (replace-regexp-in-string
                                        "[ \t\n\r\f\v]+" " "
                                        (agent-lsp-escape-control part))))
                        (split-string text "\n")))
         (line (string-join (delete "" parts) " ⏎ ")))
    (if (<= (length line) max) line (concat (substring line 0 (1- max)) "…"))))

(defun agent-lsp--parse-json (text)
  "TEXT parsed as JSON (objects as hash tables), or nil."
  (condition-case nil
      (if (fboundp 'json-parse-string)
          (json-parse-string text :object-type 'hash-table :null-object nil)
        (let ((json-object-type 'hash-table)) (json-read-from-string text)))
    (error nil)))

(defun agent-lsp--shown (value)
  "VALUE, a text the server worded, escaped again (idempotent), or \"\"."
  (if (stringp value) (agent-lsp-escape-control value) ""))

(defun agent-lsp-call-title (params)
  "The one line of the call in PARAMS: its `title', as the server words it.
PARAMS: an `agent/toolActivity' notification, a history entry or an
`agent/toolOutput' result; the title names the tool (an MCP tool by its
display name), then what the call acts on."
  (agent-lsp--shown (plist-get params :title)))

(defun agent-lsp-format-activity (params)
  "One trace line for an `agent/toolActivity' notification PARAMS (a plist)."
  (let ((stamp (format-time-string "%H:%M:%S"))
        (title (agent-lsp-call-title params))
        (status (plist-get params :status)))
    (cond
     ((equal status "started") (format "%s → %s" stamp title))
     ((equal status "waiting") (format "%s ⏸ %s (waiting for permission)" stamp title))
     (t
      (let ((line (format "%s %s %s (%s)" stamp (if (equal status "completed") "✓" "✗")
                          title (agent-lsp--shown (plist-get params :durationText))))
            (head (agent-lsp--shown (plist-get params :outputHead))))
        (if (and (equal status "failed") (not (string-empty-p head)))
            (concat line ": " head)
          line))))))

(defun agent-lsp--thousands (n)
  "N with thousands separators, as Python's format(n, \",\")."
  (let ((digits (number-to-string (truncate (if (numberp n) n 0)))))
    (while (string-match "\\([0-9]\\)\\([0-9][0-9][0-9]\\)\\(,\\|$\\)" digits)
      (setq digits (replace-match "\\1,\\2\\3" t nil digits)))
    digits))

(defconst agent-lsp-diff-lines 20 "An edit's diff lines shown.")
(defconst agent-lsp-write-lines 8 "A write's first lines shown.")

(defun agent-lsp--split-lines (text)
  "TEXT's lines (a last newline ends the last line; no text, no lines)."
  (if (string-empty-p text)
      nil
    (let ((lines (split-string text "\n")))
      (if (and (cdr lines) (string-empty-p (car (last lines))))
          (butlast lines)
        lines))))

(defun agent-lsp--line-diff (old new)
  "The replacement of OLD by NEW as unified diff lines: the lines both start
and end with as context, the old middle removed, the new middle added."
  (let* ((a (vconcat (agent-lsp--split-lines old)))
         (b (vconcat (agent-lsp--split-lines new)))
         (start 0) (tail 0) (lines nil))
    (while (and (< start (length a)) (< start (length b))
                (equal (aref a start) (aref b start)))
      (setq start (1+ start)))
    (while (and (< tail (- (length a) start)) (< tail (- (length b) start))
                (equal (aref a (- (length a) 1 tail)) (aref b (- (length b) 1 tail))))
      (setq tail (1+ tail)))
    (cl-flet ((add (mark vector from to)
                (cl-loop for i from from below to
                         do (push (concat mark (agent-lsp-escape-control (aref vector i)))
                                  lines))))
      (add " " a 0 start)
      (add "-" a start (- (length a) tail))
      (add "+" b start (- (length b) tail))
      (add " " a (- (length a) tail) (length a)))
    (nreverse lines)))

(defun agent-lsp--capped (lines max)
  "The first MAX of LINES and, if there are more, a line saying how many."
  (if (<= (length lines) max)
      lines
    (append (seq-take lines max)
            (list (concat "… " (agent-lsp--count-thousands (- (length lines) max) "more line"))))))

(defun agent-lsp--count-thousands (n word)
  "N (with thousands separators) WORD, with an s unless N is 1."
  (format "%s %s%s" (agent-lsp--thousands n) word (if (eql n 1) "" "s")))

(defun agent-lsp-edit-lines (name arguments)
  "What the call of tool NAME with ARGUMENTS (a JSON string) changes, as
every client shows it: edit_file as unified diff lines under \"edit PATH: +A -R\",
write_file as \"write PATH: N lines, B bytes\" and its first lines; any other
call (or ARGUMENTS that do not parse) has none (nil)."
  (let* ((args (and (stringp arguments) (agent-lsp--parse-json arguments)))
         (get (lambda (key) (and (hash-table-p args) (gethash key args))))
         (path (funcall get "path")))
    (when (stringp path)
      (setq path (agent-lsp-escape-control path))
      (cond
       ((and (equal name "edit_file") (stringp (funcall get "old_text"))
             (stringp (funcall get "new_text")))
        (let* ((lines (agent-lsp--line-diff (funcall get "old_text") (funcall get "new_text")))
               (added (cl-count-if (lambda (l) (string-prefix-p "+" l)) lines))
               (removed (cl-count-if (lambda (l) (string-prefix-p "-" l)) lines)))
          (cons (format "edit %s: +%d -%d%s" path added removed
                        (if (eq (funcall get "replace_all") t) " (every occurrence)" ""))
                (agent-lsp--capped lines agent-lsp-diff-lines))))
       ((and (equal name "write_file") (stringp (funcall get "content")))
        (let* ((content (funcall get "content"))
               (lines (mapcar (lambda (l) (concat "+" (agent-lsp-escape-control l)))
                              (agent-lsp--split-lines content))))
          (cons (format "write %s: %s, %s" path
                        (agent-lsp--count-thousands (length lines) "line")
                        (agent-lsp--count-thousands
                         (string-bytes (encode-coding-string content 'utf-8)) "byte"))
                (agent-lsp--capped lines agent-lsp-write-lines))))))))

(defun agent-lsp-compaction-summary (params)
  "What a compaction did, from an `agent/compaction' notification or an
`agent/compact' result PARAMS (a plist): its `summary', as the server words it."
  (agent-lsp--shown (plist-get params :summary)))

(defun agent-lsp-format-compaction (params)
  "One trace line for an `agent/compaction' notification PARAMS (a plist)."
  (format "%s ⇣ %s" (format-time-string "%H:%M:%S") (agent-lsp-compaction-summary params)))

(provide 'agent-lsp-trace)
;;; agent-lsp-trace.el ends here
