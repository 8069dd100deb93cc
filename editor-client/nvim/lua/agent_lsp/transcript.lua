-- The conversation and what it shows: its state (the project root it acts in, its server
-- session, the ask in flight), the conversation buffer -- each ask's prompt, the answer as it
-- streams, the status line below it while the agent works, the footer -- and the trace.
local buffers = require('agent_lsp.buffers')
local calls = require('agent_lsp.calls')
local client = require('agent_lsp.client')
local format = require('agent_lsp.format')
local methods = require('agent_lsp.protocol_generated').methods
local error_codes = require('agent_lsp.protocol_generated').error_codes

local M = {}

local api = vim.api
local set_lines, append, text_lines = buffers.set_lines, buffers.append, buffers.text_lines

-- One conversation at a time: the project root it acts in, its server session,
-- and the ask in flight (`request`). Changed in place, never replaced: the other
-- modules hold this table.
local conv = { root = nil, session_id = nil, request = nil }
M.conv = conv

-- A window showing the conversation folds each tool call's details under its line.
local function fold_calls(win)
  api.nvim_win_call(win, function()
    vim.opt_local.foldmethod = 'expr'
    vim.opt_local.foldexpr = calls.FOLDEXPR
    vim.opt_local.foldlevel = 0
    vim.opt_local.foldenable = true
  end)
end

-- <CR> in the conversation: a tool call's output, a checkpoint footer's diff.
local function act_at_cursor()
  if calls.at_cursor() then
    return calls.open_at_cursor()
  end
  local id = api.nvim_get_current_line():match('^_%(checkpoint (%S+):')
  if id then
    return require('agent_lsp.checkpoints').diff(id)
  end
  client.notify('nothing to open on this line', vim.log.levels.WARN)
end

-- The languages of the fenced code blocks the conversation highlights (Vim's markdown syntax
-- reads them when the filetype is set; Tree-sitter, where it runs, injects languages itself).
M.FENCED_LANGUAGES = {
  'python', 'lua', 'vim', 'sh', 'bash=sh', 'shell=sh', 'console=sh', 'zsh', 'javascript',
  'js=javascript', 'typescript', 'ts=typescript', 'json', 'yaml', 'toml', 'html', 'css',
  'c', 'cpp', 'rust', 'go', 'java', 'ruby', 'sql', 'make', 'diff',
}

function M.conversation_buf()
  local existing = buffers.get(buffers.CONVERSATION)
  -- With the user's own, if any.
  local languages = vim.deepcopy(M.FENCED_LANGUAGES)
  for _, language in ipairs(vim.g.markdown_fenced_languages or {}) do
    if not vim.tbl_contains(languages, language) then
      table.insert(languages, language)
    end
  end
  local vars = { markdown_fenced_languages = languages }
  local buf = buffers.scratch(buffers.CONVERSATION, 'markdown', vars)
  if buf ~= existing then
    vim.keymap.set('n', 'o', calls.open_at_cursor, { buffer = buf, desc = "agent-lsp: open this tool call's output" })
    vim.keymap.set('n', '<CR>', act_at_cursor, { buffer = buf, desc = 'agent-lsp: open the tool output or diff here' })
    -- The conversation is read-only: typing goes to the chat's prompt.
    vim.keymap.set('n', 'i', function()
      require('agent_lsp.compose').open()
      vim.cmd('startinsert')
    end, { buffer = buf, desc = "agent-lsp: write a prompt (the chat's prompt buffer)" })
    api.nvim_create_autocmd('BufWinEnter', {
      buffer = buf,
      callback = function()
        fold_calls(api.nvim_get_current_win())
      end,
    })
    for _, win in ipairs(api.nvim_list_wins()) do
      if api.nvim_win_get_buf(win) == buf then
        fold_calls(win)
      end
    end
  end
  return buf
end

function M.trace_buf()
  return buffers.scratch(buffers.TRACE, 'agentlsptrace')
end

local conversation_buf, trace_buf = M.conversation_buf, M.trace_buf

--- The project root for a buffer (default: the current one); the conversation's own
--- buffers act in the conversation's root.
function M.root_for(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and api.nvim_get_current_buf() or bufnr
  if conv.root and buffers.is_ours(bufnr) then
    return conv.root
  end
  return client.project_root(bufnr)
end

--- Run `callback(client, session_id)` for the current conversation (a warning when
--- there is none yet).
function M.with_session(callback)
  if not (conv.root and conv.session_id) then
    client.notify('no conversation yet: ask something, or reopen one with :AgentHistory', vim.log.levels.WARN)
    return
  end
  local session = conv.session_id
  client.with_client(conv.root, function(c)
    callback(c, session)
  end)
end

--- Open the conversation buffer at `root`: a header, after a rule if it holds an earlier one.
function M.start_conversation(root)
  local buf = conversation_buf()
  local empty = api.nvim_buf_line_count(buf) == 1 and api.nvim_buf_get_lines(buf, 0, 1, false)[1] == ''
  local header = { '# agent-lsp: ' .. root, '' }
  append(buf, empty and header or vim.list_extend({ '---', '' }, header))
  conv.root = root
  conv.session_id = nil
end

-- The ask's status line, unless the user wiped the conversation buffer meanwhile.
local function status_line(req)
  local buf = buffers.get(buffers.CONVERSATION)
  if req.status_line and buf == req.buf and buf and api.nvim_buf_is_valid(buf) then
    if req.status_line < api.nvim_buf_line_count(buf) then
      return req.status_line
    end
  end
  return nil
end

--- Show `text` on the status line of the ask `req` (while it is the one in flight).
function M.set_status(req, text)
  local line = conv.request == req and status_line(req)
  if line then
    set_lines(req.buf, line, line + 1, { '_' .. text .. '_' })
  end
end

--- End the ask `req`: its status line becomes `lines`.
function M.finish(req, lines)
  if conv.request ~= req then
    return
  end
  conv.request = nil
  local line = status_line(req)
  if (req.segment or req.after_calls) and lines[1] ~= '' then
    table.insert(lines, 1, '') -- after the streamed text
  end
  table.insert(lines, '')
  if line then
    set_lines(req.buf, line, -1, lines)
  else
    append(conversation_buf(), lines)
  end
end

local finish = M.finish

-- Server notifications ------------------------------------------------------------

-- Insert `lines` above the status line of `req`; the row they start at (nil: no status line).
local function insert_above_status(req, lines)
  local line = status_line(req)
  if not line then
    return nil
  end
  set_lines(req.buf, line, line, lines)
  req.status_line = line + #lines
  return line
end
M.insert_above_status = insert_above_status

-- Replace the lines of a call shown already (`entry`, in `buf`) with `lines`; what is below
-- them moves (other calls, and the status line and streamed text of an ask in flight).
local function update_call(buf, entry, lines, failed)
  local delta = #lines - entry.count
  local after = entry.row + entry.count
  set_lines(buf, entry.row, after, lines)
  calls.shift(buf, after, delta)
  entry.count, entry.failed = #lines, failed
  calls.highlight(buf, entry)
  local req = conv.request
  if req and req.buf == buf and req.status_line and req.status_line >= after then
    req.status_line = req.status_line + delta
    if req.segment and req.segment.start >= after then
      req.segment.start = req.segment.start + delta
    end
  end
end

-- A tool call: its line (with its details once it ended) above the status line of the ask
-- in flight, or, when it is shown already, its lines replaced (also after its ask ended:
-- a cancelled ask's call reports its end after the ask's reply).
local function show_call(params)
  if type(params.callId) ~= 'string' then
    return
  end
  local lines = calls.lines(params)
  local failed = params.status == 'failed'
  local shown = buffers.get(buffers.CONVERSATION)
  local entry = shown and api.nvim_buf_is_valid(shown) and calls.find(shown, params.callId)
  if entry and entry.session == params.sessionId then
    return update_call(shown, entry, lines, failed)
  end
  local req = conv.request
  if not req or not status_line(req) then
    return
  end
  if req.session_id and params.sessionId ~= req.session_id then
    return -- another conversation's
  end
  req.session_id = params.sessionId
  local segment = req.segment
  if segment and not segment.closed then
    -- The text streamed so far is done: what streams next starts a new paragraph.
    segment.closed = true
    insert_above_status(req, { '' })
  end
  req.after_calls = true
  local row = insert_above_status(req, lines)
  calls.track(req.buf, row, #lines, params.callId, params.sessionId, req.root, failed)
end

local function on_activity(_, params)
  if type(params) == 'table' then
    append(trace_buf(), { format.activity_line(params) })
    show_call(params)
  end
end

-- agent/askProgress: only the `starting` phase is shown here (the status line follows
-- $/progress): a trace line for each; the second of an ask names the MCP servers it goes
-- without, which also stays in the conversation, above the status line.
local function on_ask_progress(_, params)
  if type(params) ~= 'table' or params.phase ~= 'starting' or type(params.message) ~= 'string' then
    return
  end
  local message = format.escape_control(params.message)
  append(trace_buf(), { os.date('%H:%M:%S') .. ' … ' .. message })
  local req = conv.request
  if req and status_line(req) and (not req.session_id or req.session_id == params.sessionId) then
    req.starting = (req.starting or 0) + 1
    if req.starting > 1 then
      insert_above_status(req, { '_' .. message .. '_', '' })
    end
  end
end

local function on_compaction(_, params)
  if type(params) ~= 'table' then
    return
  end
  append(trace_buf(), { format.compaction_line(params) })
  local req = conv.request
  if req then
    req.compacted = format.compaction_summary(params)
  end
end

-- Streamed text: one segment per (turn, channel), above the status line; reasoning
-- is shown as a Markdown quote ("> "), the answer as it is.
local function render(req, segment)
  local lines = text_lines(segment.text)
  if segment.channel == 'reasoning' then
    for i, line in ipairs(lines) do
      lines[i] = '> ' .. line
    end
  end
  -- Only the last line shown can have grown: replace from it on.
  local keep = math.max(segment.shown - 1, 0)
  set_lines(req.buf, segment.start + keep, req.status_line, { (table.unpack or unpack)(lines, keep + 1) })
  segment.shown = #lines
  req.status_line = segment.start + #lines
end

local function on_delta(_, params)
  local req = conv.request
  if not req or type(params) ~= 'table' or type(params.delta) ~= 'string' then
    return
  end
  if req.session_id and params.sessionId ~= req.session_id then
    return -- another conversation's
  end
  req.session_id = params.sessionId
  local line = status_line(req)
  if not line then
    return
  end
  local segment = req.segment
  if not segment or segment.closed or segment.turn ~= params.turn or segment.channel ~= params.channel then
    if segment or req.after_calls then
      set_lines(req.buf, line, line, { '' }) -- a blank line between segments
      line = line + 1
      req.status_line = line
    end
    segment = { turn = params.turn, channel = params.channel, text = '', start = line, shown = 0 }
    req.segment, req.after_calls = segment, false
  end
  segment.text = segment.text .. params.delta
  render(req, segment)
end

local function on_progress(err, result, ctx, config)
  -- Keep the usual progress handling (LspProgressUpdate / LspProgress, statuslines).
  local default = vim.lsp.handlers['$/progress']
  if default then
    default(err, result, ctx, config)
  end
  local req = conv.request
  local value = type(result) == 'table' and result.value
  if req and type(value) == 'table' and result.token == req.token and value.kind ~= 'end' then
    if type(value.message) == 'string' and not req.cancelling then
      M.set_status(req, 'working: ' .. value.message)
    end
  end
end

--- The LSP handlers of the notifications the conversation and the trace show.
M.handlers = {
  [methods.tool_activity] = on_activity,
  [methods.compaction] = on_compaction,
  [methods.ask_progress] = on_ask_progress,
  [methods.answer_delta] = on_delta,
  ['$/progress'] = on_progress,
}

--- The server for `root` exited (`code`, or killed by `signal`): its ask ends, its session
--- is gone.
function M.on_exit(root, code, signal)
  local req = conv.request
  if req and req.root == root then
    local how = (signal or 0) ~= 0 and string.format('was killed by signal %d', signal)
      or string.format('exited (code %s)', code)
    finish(req, { string.format('**Error**: the agent-lsp server %s.', how) })
  end
  if conv.root == root and conv.session_id then
    conv.session_id = nil
    append(conversation_buf(), { '_The server stopped; the next ask starts a new conversation._', '' })
  end
end

-- The answer ------------------------------------------------------------------------

--- The agent/ask reply (`err` or `result`) for the ask `req`: the answer unless it streamed
--- as it is, then the footer (tool calls, why it stopped, the context used, the checkpoint).
function M.on_answer(req, err, result)
  if conv.request ~= req then
    return
  end
  if err then
    if err.code == error_codes.request_cancelled then
      finish(req, { '_(cancelled)_' })
      return
    end
    local lines = text_lines(string.format('**Error** (%s): %s', tostring(err.code), format.error_text(err)))
    local data = type(err.data) == 'table' and err.data or {}
    if err.code == error_codes.invalid_params and data.field == 'sessionId' then
      conv.session_id = nil
      table.insert(lines, '_The next ask starts a new conversation._')
    end
    finish(req, lines)
    return
  end
  conv.session_id = result.sessionId
  local answer = type(result.answer) == 'string' and result.answer or ''
  local lines = {}
  local segment = req.segment
  local last = segment and segment.channel == 'answer' and segment.turn == result.turns
  if not (last and segment.text == answer) then
    -- Not streamed as it is (an older server; an answer of only whitespace, which the
    -- result gives as ""): the answer itself, in place of what streamed of it.
    if last and not segment.closed and status_line(req) then
      set_lines(req.buf, segment.start, req.status_line, {})
      req.status_line = segment.start
      req.segment = nil
    end
    if answer ~= '' then
      lines = vim.list_extend(text_lines(answer), { '' })
    end
  end
  local calls = type(result.toolCalls) == 'table' and #result.toolCalls or 0
  local notes = { string.format('%d tool call%s', calls, calls == 1 and '' or 's') }
  if type(result.stopNote) == 'string' then
    table.insert(notes, format.escape_control(result.stopNote))
  end
  local usage = type(result.usage) == 'table' and result.usage or {}
  if usage.contextWindow then
    table.insert(notes, string.format(
      'context %s of %s tokens',
      format.thousands(usage.contextTokens),
      format.thousands(usage.contextWindow)
    ))
  end
  if req.compacted then
    table.insert(notes, req.compacted)
  end
  table.insert(lines, '_(' .. table.concat(notes, ', ') .. ')_')
  if type(result.checkpointId) == 'string' then
    table.insert(lines, '_(checkpoint ' .. result.checkpointId .. ': :AgentDiff, :AgentRewind)_')
  end
  finish(req, lines)
  -- The agent may have changed files on disk: reload unmodified buffers ('autoread').
  pcall(vim.cmd, 'checktime')
end

--- Open the trace buffer (one line per tool call start and end).
function M.trace()
  buffers.show(trace_buf(), true)
end

return M
