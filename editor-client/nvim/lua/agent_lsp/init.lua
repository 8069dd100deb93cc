-- agent-lsp for Neovim: a thin client for the agent-lsp language server.
--
-- The server does all the agent work; this module starts it per project root with
-- the built-in LSP client, attaches the project's buffers (so the server sees
-- unsaved text), sends `agent/ask` (with the selection of `:'<,'>AgentAsk`), and
-- shows the conversation -- the answer as it streams -- and the tool trace in
-- scratch buffers. Works on Neovim 0.7.2 and later.
local format = require('agent_lsp.format')
local permissions = require('agent_lsp.permissions')

local M = {}

local defaults = {
  -- Server command line (argv). Any `agent-lsp` launcher works, e.g.
  -- { 'uv', 'run', '--directory', '/path/to/agent-lsp', 'agent-lsp', '--stdio' }.
  cmd = { 'agent-lsp', '--stdio' },
  -- Extra environment for the server process (nil: inherit Neovim's).
  cmd_env = nil,
  -- The `agentLsp` settings section (model, baseUrl, maxTurns, enabledTools, confirmEdits, ...),
  -- sent as initializationOptions and answered to workspace/configuration.
  -- Never the API key: the server reads it from the user configuration file
  -- (~/.config/agent-lsp/config.toml, `agent-lsp config set-key`) or its environment.
  settings = {},
  -- A project root is the nearest folder upwards holding one of these, else the
  -- current directory; `root_dir = function(bufnr) return path end` overrides it.
  root_markers = { '.git', '.hg', '.svn' },
  root_dir = nil,
  -- Ex command that opens a window for the conversation (and trace, tools).
  open_cmd = 'botright vsplit',
}

M.config = vim.deepcopy(defaults)

local api = vim.api
local uv = vim.uv or vim.loop
local CONVERSATION = 'agent-lsp://conversation'
local TRACE = 'agent-lsp://trace'
local TOOLS = 'agent-lsp://tools'
local CHECKPOINTS = 'agent-lsp://checkpoints'
local DIFF = 'agent-lsp://diff'
local CHECK = 'agent-lsp://check'
local SANDBOX = 'agent-lsp://sandbox'
local CANCEL_WAIT_MS = 10000

-- Client methods are called `client:request()` from 0.11 on (the dot form warns there).
local COLON_METHODS = vim.fn.has('nvim-0.11') == 1

local function call(client, method, ...)
  if COLON_METHODS then
    return client[method](client, ...)
  end
  return client[method](...)
end

local function notify(message, level)
  vim.notify('agent-lsp: ' .. message, level or vim.log.levels.INFO)
end

-- State ---------------------------------------------------------------------

local clients = {} -- root -> client id
local on_ready = {} -- client id -> callbacks waiting for `initialized`
local buffers = {} -- scratch buffer name -> bufnr
local asks = 0 -- counter for workDoneTokens

-- One conversation at a time: the project root it acts in, its server session,
-- and the ask in flight (`request`).
local conv = { root = nil, session_id = nil, request = nil }

-- Paths ---------------------------------------------------------------------

local function normalize(path)
  local full = vim.fn.fnamemodify(path, ':p'):gsub('/+$', '')
  return full == '' and '/' or full
end

local function is_under(path, root)
  return root == '/' or path == root or path:sub(1, #root + 1) == root .. '/'
end

local function is_ours(bufnr)
  for _, buf in pairs(buffers) do
    if buf == bufnr then
      return true
    end
  end
  return false
end

--- The project root for a buffer (default: the current one).
function M.root_for(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and api.nvim_get_current_buf() or bufnr
  if conv.root and is_ours(bufnr) then
    return conv.root
  end
  if M.config.root_dir then
    local dir = M.config.root_dir(bufnr)
    if dir then
      return normalize(dir)
    end
  end
  local cwd = normalize(vim.fn.getcwd())
  local name = api.nvim_buf_get_name(bufnr)
  local start = cwd
  if name ~= '' and vim.bo[bufnr].buftype == '' then
    start = normalize(vim.fn.fnamemodify(name, ':p:h'))
  end
  local dir = start
  while true do
    for _, marker in ipairs(M.config.root_markers or {}) do
      if uv.fs_stat(dir .. '/' .. marker) then
        return dir
      end
    end
    local parent = vim.fn.fnamemodify(dir, ':h')
    if parent == dir then
      break
    end
    dir = parent
  end
  return is_under(start, cwd) and cwd or start
end

-- Scratch buffers -----------------------------------------------------------

local function scratch(name, filetype)
  local buf = buffers[name]
  if buf and api.nvim_buf_is_valid(buf) then
    return buf
  end
  buf = api.nvim_create_buf(false, true)
  api.nvim_buf_set_name(buf, name)
  vim.bo[buf].buftype = 'nofile'
  vim.bo[buf].bufhidden = 'hide'
  vim.bo[buf].swapfile = false
  vim.bo[buf].filetype = filetype
  vim.bo[buf].modifiable = false
  buffers[name] = buf
  return buf
end

local function windows_of(buf)
  local found = {}
  for _, win in ipairs(api.nvim_list_wins()) do
    if api.nvim_win_get_buf(win) == buf then
      table.insert(found, win)
    end
  end
  return found
end

local function scroll_to_end(buf)
  local last = api.nvim_buf_line_count(buf)
  for _, win in ipairs(windows_of(buf)) do
    api.nvim_win_set_cursor(win, { last, 0 })
  end
end

-- Replace lines [first, last) (0-based, -1 = end); an empty buffer is replaced whole.
local function set_lines(buf, first, last, lines)
  vim.bo[buf].modifiable = true
  if api.nvim_buf_line_count(buf) == 1 and api.nvim_buf_get_lines(buf, 0, 1, false)[1] == '' then
    first, last = 0, -1
  end
  api.nvim_buf_set_lines(buf, first, last, false, lines)
  vim.bo[buf].modifiable = false
  scroll_to_end(buf)
end

local function append(buf, lines)
  set_lines(buf, -1, -1, lines)
end

local function text_lines(text)
  local lines = vim.split((tostring(text or '')):gsub('\r\n', '\n'), '\n', { plain = true })
  return lines
end

--- Show a buffer in a window of the current tab page (opened with `open_cmd`).
local function show(buf, focus)
  local win
  for _, w in ipairs(api.nvim_tabpage_list_wins(0)) do
    if api.nvim_win_get_buf(w) == buf then
      win = w
      break
    end
  end
  local previous = api.nvim_get_current_win()
  if not win then
    vim.cmd(M.config.open_cmd)
    win = api.nvim_get_current_win()
    api.nvim_win_set_buf(win, buf)
    vim.wo[win].wrap = true
    vim.wo[win].linebreak = true
  end
  api.nvim_win_set_cursor(win, { api.nvim_buf_line_count(buf), 0 })
  api.nvim_set_current_win(focus and win or previous)
end

local function conversation_buf()
  return scratch(CONVERSATION, 'markdown')
end

local function trace_buf()
  return scratch(TRACE, 'agentlsptrace')
end

-- Clients ---------------------------------------------------------------------

local function client_by_id(id)
  local client = id and vim.lsp.get_client_by_id(id)
  if client and call(client, 'is_stopped') then
    return nil
  end
  return client
end

local function maybe_attach(bufnr)
  if not api.nvim_buf_is_loaded(bufnr) or vim.bo[bufnr].buftype ~= '' then
    return
  end
  local name = api.nvim_buf_get_name(bufnr)
  if name == '' then
    return
  end
  local path = normalize(name)
  for root, id in pairs(clients) do
    if is_under(path, root) and client_by_id(id) then
      vim.lsp.buf_attach_client(bufnr, id)
    end
  end
end

local function section()
  local settings = M.config.settings or {}
  return next(settings) and settings or vim.empty_dict()
end

-- The ask's status line, unless the user wiped the conversation buffer meanwhile.
local function status_line(req)
  local buf = buffers[CONVERSATION]
  if req.status_line and buf == req.buf and buf and api.nvim_buf_is_valid(buf) then
    if req.status_line < api.nvim_buf_line_count(buf) then
      return req.status_line
    end
  end
  return nil
end

local function set_status(req, text)
  local line = conv.request == req and status_line(req)
  if line then
    set_lines(req.buf, line, line + 1, { '_' .. text .. '_' })
  end
end

--- End the ask `req`: its status line becomes `lines`.
local function finish(req, lines)
  if conv.request ~= req then
    return
  end
  conv.request = nil
  local line = status_line(req)
  if req.segment and lines[1] ~= '' then
    table.insert(lines, 1, '') -- after the streamed text
  end
  table.insert(lines, '')
  if line then
    set_lines(req.buf, line, -1, lines)
  else
    append(conversation_buf(), lines)
  end
end

local function on_activity(_, params)
  if type(params) == 'table' then
    append(trace_buf(), { format.activity_line(params) })
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
  if not segment or segment.turn ~= params.turn or segment.channel ~= params.channel then
    if segment then
      set_lines(req.buf, line, line, { '' }) -- a blank line between segments
      line = line + 1
      req.status_line = line
    end
    segment = { turn = params.turn, channel = params.channel, text = '', start = line, shown = 0 }
    req.segment = segment
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
      set_status(req, 'working: ' .. value.message)
    end
  end
end

local function on_exit(root, client_id, code)
  if clients[root] == client_id then
    clients[root] = nil
  end
  on_ready[client_id] = nil
  local req = conv.request
  if req and req.root == root then
    finish(req, { string.format('**Error**: the agent-lsp server exited (code %s).', code) })
  end
  if conv.root == root and conv.session_id then
    conv.session_id = nil
    append(conversation_buf(), { '_The server stopped; the next ask starts a new conversation._', '' })
  end
end

local function start_client(root)
  local config = {
    name = 'agent-lsp',
    cmd = M.config.cmd,
    cmd_env = M.config.cmd_env,
    root_dir = root,
    workspace_folders = { { uri = vim.uri_from_fname(root), name = root } },
    init_options = section(),
    settings = { agentLsp = section() },
    capabilities = vim.tbl_deep_extend('force', vim.lsp.protocol.make_client_capabilities(), permissions.CAPABILITY),
    handlers = {
      ['agent/toolActivity'] = on_activity,
      ['agent/compaction'] = on_compaction,
      ['agent/answerDelta'] = on_delta,
      ['$/progress'] = on_progress,
      ['agent/requestPermission'] = permissions.handler,
      ['$/cancelRequest'] = permissions.on_cancel,
    },
    on_init = function(client)
      local id = client.id
      -- Requests sent before `initialized` are lost, so asks wait for this; run
      -- them once the client is registered as active.
      vim.schedule(function()
        local waiting = on_ready[id] or {}
        on_ready[id] = nil
        local ready = client_by_id(id)
        for _, callback in ipairs(waiting) do
          if ready then
            callback(ready)
          end
        end
      end)
    end,
    on_exit = function(code, _, client_id)
      vim.schedule(function()
        on_exit(root, client_id, code)
      end)
    end,
  }
  local ok, id
  if vim.fn.has('nvim-0.11') == 1 then
    -- start_client() is deprecated from 0.11; start() without attaching is the same.
    ok, id = pcall(vim.lsp.start, config, {
      attach = false,
      reuse_client = function()
        return false
      end,
    })
  else
    ok, id = pcall(vim.lsp.start_client, config)
  end
  if not ok or not id then
    notify('could not start ' .. table.concat(M.config.cmd, ' ') .. ': ' .. tostring(id), vim.log.levels.ERROR)
    return nil
  end
  clients[root] = id
  for _, buf in ipairs(api.nvim_list_bufs()) do
    maybe_attach(buf)
  end
  return id
end

--- Run `callback(client)` once the server for `root` is initialized (starting it if needed).
local function with_client(root, callback)
  local id = clients[root]
  local client = client_by_id(id)
  if not client then
    id = start_client(root)
    if not id then
      return false
    end
    client = client_by_id(id)
  end
  if client and client.initialized and not on_ready[id] then
    callback(client)
  else
    on_ready[id] = on_ready[id] or {}
    table.insert(on_ready[id], callback)
  end
  return true
end

-- Commands ------------------------------------------------------------------

local function start_conversation(root)
  local buf = conversation_buf()
  local empty = api.nvim_buf_line_count(buf) == 1 and api.nvim_buf_get_lines(buf, 0, 1, false)[1] == ''
  local header = { '# agent-lsp: ' .. root, '' }
  append(buf, empty and header or vim.list_extend({ '---', '' }, header))
  conv.root = root
  conv.session_id = nil
end

local function on_answer(req, err, result)
  if conv.request ~= req then
    return
  end
  if err then
    if err.code == -32800 then
      finish(req, { '_(cancelled)_' })
      return
    end
    local lines = text_lines(string.format('**Error** (%s): %s', tostring(err.code), tostring(err.message)))
    local data = type(err.data) == 'table' and err.data or {}
    if err.code == -32602 and data.field == 'sessionId' then
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
    if last and status_line(req) then
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
  local stop = format.stop_note(result.stopReason)
  if stop then
    table.insert(notes, stop)
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

-- Editor context -------------------------------------------------------------

-- Code units of `text` (UTF-8) in a position encoding.
local function units(text, encoding)
  if encoding == 'utf-8' then
    return #text
  end
  local count = 0
  for char in text:gmatch('[%z\1-\127\194-\244][\128-\191]*') do
    count = count + ((encoding == 'utf-16' and #char == 4) and 2 or 1)
  end
  return count
end

--- The lines `line1`..`line2` of the current buffer as a selection: the characters
--- of the last visual selection when it was charwise over those lines, else the
--- whole lines. Byte columns; nil for a buffer that is not a file.
local function selection(line1, line2)
  local buf = api.nvim_get_current_buf()
  if api.nvim_buf_get_name(buf) == '' or vim.bo[buf].buftype ~= '' then
    return nil
  end
  local function line_text(row)
    return api.nvim_buf_get_lines(buf, row - 1, row, false)[1] or ''
  end
  local first, last = api.nvim_buf_get_mark(buf, '<'), api.nvim_buf_get_mark(buf, '>')
  if vim.fn.visualmode() == 'v' and first[1] == line1 and last[1] == line2 then
    local text = line_text(line2)
    local col = math.min(last[2], #text)
    local char = text:sub(col + 1):match('^[%z\1-\127\194-\244][\128-\191]*') or ''
    return { buf = buf, start = { line1, first[2] }, ['end'] = { line2, col + #char } }
  end
  return { buf = buf, start = { line1, 0 }, ['end'] = { line2, #line_text(line2) } }
end

--- `context` for agent/ask: the selection's positions in the client's encoding.
local function context_param(sel, client)
  if not (sel and api.nvim_buf_is_valid(sel.buf)) then
    return nil
  end
  local encoding = client.offset_encoding or 'utf-16'
  local function position(pos)
    local text = api.nvim_buf_get_lines(sel.buf, pos[1] - 1, pos[1], false)[1] or ''
    return { line = pos[1] - 1, character = units(text:sub(1, pos[2]), encoding) }
  end
  return {
    activeDocument = {
      uri = vim.uri_from_bufnr(sel.buf),
      selection = { start = position(sel.start), ['end'] = position(sel['end']) },
    },
  }
end

-- Send the ask: the conversation shows the prompt (and what was selected), then the answer.
local function ask_with(prompt, sel)
  if conv.request then
    notify('an ask is already running (:AgentCancel stops it)', vim.log.levels.WARN)
    return
  end
  local root = M.root_for(0)
  if conv.root ~= root then
    start_conversation(root)
  end
  local buf = conversation_buf()
  local you = vim.list_extend({ '## You', '' }, text_lines(prompt))
  if sel then
    local name = vim.fn.fnamemodify(api.nvim_buf_get_name(sel.buf), ':~:.')
    local span = sel.start[1] == sel['end'][1] and ('line ' .. sel.start[1])
      or string.format('lines %d-%d', sel.start[1], sel['end'][1])
    vim.list_extend(you, { '', string.format('_(selection: %s, %s)_', name, span) })
  end
  append(buf, vim.list_extend(you, { '', '## Agent', '' }))
  asks = asks + 1
  local req = { root = root, token = 'agent-lsp-nvim-' .. asks, buf = buf, session_id = conv.session_id }
  req.status_line = api.nvim_buf_line_count(buf)
  conv.request = req
  append(buf, { '_working: starting the server_' })
  show(buf, false)
  local started = with_client(root, function(client)
    if conv.request ~= req then
      return -- cancelled before the server was ready
    end
    local params = { prompt = prompt, sessionId = conv.session_id, workDoneToken = req.token }
    params.context = context_param(sel, client)
    local ok, id = call(client, 'request', 'agent/ask', params, function(err, result)
      on_answer(req, err, result)
    end)
    if not ok then
      finish(req, { '**Error**: the agent-lsp server is not running.' })
      return
    end
    req.client_id, req.id = client.id, id
    set_status(req, 'working: waiting for the model')
  end)
  if not started then
    finish(req, { '**Error**: could not start the agent-lsp server (see :messages).' })
  end
end

--- Send `prompt` as `agent/ask`; no prompt asks for one with vim.ui.input.
--- `range` ({ line1, line2 } of `:'<,'>AgentAsk`) sends that selection as context.
function M.ask(prompt, range)
  local sel = range and selection(range.line1, range.line2)
  if prompt == nil or prompt:match('^%s*$') then
    vim.ui.input({ prompt = 'Ask the agent: ' }, function(input)
      if input and not input:match('^%s*$') then
        ask_with(input, sel)
      end
    end)
    return
  end
  ask_with(prompt, sel)
end

--- Cancel the running ask with $/cancelRequest.
function M.cancel()
  local req = conv.request
  if not req then
    notify('no ask is running')
    return
  end
  if req.cancelling then
    return
  end
  req.cancelling = true
  local client = client_by_id(req.client_id)
  if not (req.id and client) then
    finish(req, { '_(cancelled)_' })
    return
  end
  set_status(req, 'cancelling…')
  call(client, 'cancel_request', req.id)
  -- Neovim hides the server's RequestCancelled reply from handlers; the reply
  -- does remove the request from client.requests, which is what we wait for.
  local deadline = uv.now() + CANCEL_WAIT_MS
  local function wait()
    if conv.request ~= req then
      return
    end
    local c = client_by_id(req.client_id)
    if not c or c.requests[req.id] == nil then
      finish(req, { '_(cancelled)_' })
    elseif uv.now() > deadline then
      finish(req, { '_(cancelled; the server did not confirm)_' })
    else
      vim.defer_fn(wait, 20)
    end
  end
  wait()
end

--- Start a new conversation (the running ask, if any, is cancelled).
function M.new()
  local req = conv.request
  if req then
    M.cancel()
    finish(req, { '_(cancelled)_' })
  end
  local client = client_by_id(conv.root and clients[conv.root])
  if client and conv.session_id then
    call(client, 'request', 'agent/endSession', { sessionId = conv.session_id }, function() end)
  end
  local root = M.root_for(0)
  start_conversation(root)
  append(trace_buf(), { '-- new conversation --' })
  show(conversation_buf(), false)
end

--- Compact the conversation now (agent/compact): old tool outputs become notes, older
--- turns the model's summary. The result is a line in the conversation and the trace.
function M.compact()
  if conv.request then
    notify('an ask is running; compact after it', vim.log.levels.WARN)
    return
  end
  local client = client_by_id(conv.root and clients[conv.root])
  if not (client and conv.session_id) then
    notify('no conversation to compact yet')
    return
  end
  local session = conv.session_id
  append(conversation_buf(), { '_compacting the conversation…_' })
  local line = api.nvim_buf_line_count(conversation_buf()) - 1
  call(client, 'request', 'agent/compact', { sessionId = session }, function(err, result)
    local text
    if err then
      text = string.format('**Error** (%s): %s', tostring(err.code), tostring(err.message))
    else
      local summary = format.compaction_summary(result)
      text = '_(' .. summary .. ')_'
      append(trace_buf(), { os.date('%H:%M:%S') .. ' ⇣ ' .. summary })
    end
    local buf = conversation_buf()
    if api.nvim_buf_get_lines(buf, line, line + 1, false)[1] == '_compacting the conversation…_' then
      set_lines(buf, line, line + 1, { text, '' })
    else
      append(buf, { text, '' })
    end
  end)
end

--- Open the trace buffer (one line per tool call start and end).
function M.trace()
  show(trace_buf(), true)
end

--- List the tools the agent can call.
function M.tools()
  local root = M.root_for(0)
  with_client(root, function(client)
    call(client, 'request', 'agent/listTools', vim.empty_dict(), function(err, result)
      if err then
        notify('agent/listTools failed: ' .. tostring(err.message), vim.log.levels.ERROR)
        return
      end
      local lines = { '# agent-lsp tools: ' .. root, '' }
      for _, tool in ipairs(result.tools or {}) do
        local hints = type(tool.annotations) == 'table' and tool.annotations or {}
        local description = text_lines(type(tool.description) == 'string' and tool.description or '')[1]
        local line = '- **' .. tool.name .. '**'
        if hints.readOnlyHint == true then
          line = line .. ' (read-only)'
        elseif hints.destructiveHint == true then
          line = line .. ' (destructive)'
        end
        table.insert(lines, line .. ': ' .. description)
      end
      local buf = scratch(TOOLS, 'markdown')
      set_lines(buf, 0, -1, lines)
      show(buf, true)
    end)
  end)
end

--- Check the model endpoint (agent/checkConnection): what works and what to fix.
function M.check()
  local root = M.root_for(0)
  with_client(root, function(client)
    call(client, 'request', 'agent/checkConnection', vim.empty_dict(), function(err, result)
      if err then
        notify('agent/checkConnection failed: ' .. tostring(err.message), vim.log.levels.ERROR)
        return
      end
      local buf = scratch(CHECK, 'markdown')
      set_lines(buf, 0, -1, vim.list_extend({ '# agent-lsp connection check', '' }, format.check_lines(result)))
      show(buf, true)
      if result.ok then
        notify('the model endpoint works')
      else
        notify('the model endpoint does not work yet; see ' .. CHECK, vim.log.levels.WARN)
      end
    end)
  end)
end

--- Choose the model from the endpoint's list (agent/listModels); sets settings.model.
function M.models()
  local root = M.root_for(0)
  with_client(root, function(client)
    call(client, 'request', 'agent/listModels', vim.empty_dict(), function(err, result)
      if err then
        notify('agent/listModels failed: ' .. tostring(err.message) .. ' (:AgentCheck says why)', vim.log.levels.ERROR)
        return
      end
      local ids = {}
      for _, model in ipairs(result.models or {}) do
        table.insert(ids, model.id)
      end
      if #ids == 0 then
        notify('the endpoint lists no models; set settings.model by name', vim.log.levels.WARN)
        return
      end
      vim.ui.select(ids, {
        prompt = 'Model for agent-lsp:',
        format_item = function(id)
          return id == result.current and id .. ' (current)' or id
        end,
      }, function(choice)
        if not choice then
          return
        end
        local settings = vim.deepcopy(M.config.settings or {})
        settings.model = choice
        M.setup({ settings = settings })
        notify('model ' .. choice .. ' for this session (keep it: settings.model, or `agent-lsp config set model`)')
      end)
    end)
  end)
end

-- Checkpoints -----------------------------------------------------------------

--- Run `callback(client, session_id)` for the current conversation (a warning when
--- there is none yet).
local function with_session(callback)
  if not (conv.root and conv.session_id) then
    notify('no conversation yet: ask something first', vim.log.levels.WARN)
    return
  end
  local session = conv.session_id
  with_client(conv.root, function(client)
    callback(client, session)
  end)
end

--- Run `callback(client, session_id, checkpoint_id)` for the conversation's checkpoint
--- `id` (default: its latest ask).
local function with_checkpoint(id, callback)
  with_session(function(client, session)
    if id and id ~= '' then
      callback(client, session, id)
      return
    end
    call(client, 'request', 'agent/checkpoints', { sessionId = session }, function(err, result)
      if err then
        notify('agent/checkpoints failed: ' .. tostring(err.message), vim.log.levels.ERROR)
        return
      end
      local list = result.checkpoints or {}
      if #list == 0 then
        notify('no checkpoints in this conversation')
        return
      end
      callback(client, session, list[#list].id)
    end)
  end)
end

local function report(method, err)
  notify(method .. ' failed: ' .. tostring(err.message), vim.log.levels.ERROR)
end

--- List the conversation's asks and the files each one changed.
function M.checkpoints()
  with_session(function(client, session)
    call(client, 'request', 'agent/checkpoints', { sessionId = session }, function(err, result)
      if err then
        return report('agent/checkpoints', err)
      end
      local lines = format.checkpoint_lines(result.checkpoints)
      local buf = scratch(CHECKPOINTS, 'agentlspcheckpoints')
      set_lines(buf, 0, -1, #lines > 0 and lines or { 'no checkpoints in this conversation' })
      show(buf, true)
    end)
  end)
end

--- Show what ask `id` (default: the latest) changed, as a unified diff.
function M.diff(id)
  with_checkpoint(id, function(client, session, checkpoint)
    local params = { sessionId = session, checkpointId = checkpoint }
    call(client, 'request', 'agent/diff', params, function(err, result)
      if err then
        return report('agent/diff', err)
      end
      local lines = format.diff_lines(result.files)
      local buf = scratch(DIFF, 'diff')
      set_lines(buf, 0, -1, #lines > 0 and lines or { '(ask ' .. checkpoint .. ' changed no files)' })
      show(buf, true)
    end)
  end)
end

--- Undo ask `id` (default: the latest) and every later one: a dry run first says what
--- will be restored and what is kept because it changed since; `force` skips asking.
function M.rewind(id, force)
  if conv.request then
    notify('an ask is running (:AgentCancel stops it)', vim.log.levels.WARN)
    return
  end
  with_checkpoint(id, function(client, session, checkpoint)
    local function run()
      local params = { sessionId = session, checkpointId = checkpoint }
      call(client, 'request', 'agent/rewind', params, function(err, result)
        if err then
          return report('agent/rewind', err)
        end
        local lines = { '_Undone: ask ' .. checkpoint .. ' and later (the agent forgot them)._', '' }
        for _, line in ipairs(format.rewind_lines(result, checkpoint)) do
          table.insert(lines, '- ' .. line)
        end
        table.insert(lines, '')
        append(conversation_buf(), lines)
        pcall(vim.cmd, 'checktime')
        notify(string.format('undid ask %s: %d restored, %d kept', checkpoint, #result.restored, #result.conflicts))
      end)
    end
    if force then
      return run()
    end
    local params = { sessionId = session, checkpointId = checkpoint, dryRun = true }
    call(client, 'request', 'agent/rewind', params, function(err, result)
      if err then
        return report('agent/rewind', err)
      end
      local summary = table.concat(format.rewind_lines(result, checkpoint), '\n')
      local prompt = 'Undo ask ' .. checkpoint .. ' and later?\n' .. summary
      vim.ui.select({ 'Undo', 'Cancel' }, { prompt = prompt }, function(choice)
        if choice == 'Undo' then
          run()
        end
      end)
    end)
  end)
end

-- Grants ----------------------------------------------------------------------

--- The conversation's "always" answers (agent/grants), in vim.ui.select: the picked one
--- is revoked (agent/revokeGrant), so that exact call is asked about again.
function M.grants()
  with_session(function(client, session)
    call(client, 'request', 'agent/grants', { sessionId = session }, function(err, result)
      if err then
        return report('agent/grants', err)
      end
      local grants = result.grants or {}
      if #grants == 0 then
        notify('no permission grants in this conversation')
        return
      end
      vim.ui.select(grants, {
        prompt = 'Revoke a permission grant:',
        kind = 'agent_lsp_grant',
        format_item = permissions.grant_label,
      }, function(grant)
        if not grant then
          return
        end
        local params = { sessionId = session, grantId = grant.grantId }
        call(client, 'request', 'agent/revokeGrant', params, function(revoke_err, revoked)
          if revoke_err then
            return report('agent/revokeGrant', revoke_err)
          end
          if revoked.revoked then
            notify('revoked: ' .. permissions.grant_label(grant))
          else
            notify('that grant was already gone')
          end
        end)
      end)
    end)
  end)
end

-- The bash sandbox ------------------------------------------------------------

--- What confines the agent's bash commands in this project (agent/sandboxStatus): the
--- layers in force, the network, where they may write, the limits, and, where this system
--- gives only a weaker form, why and what then does not hold. A warning unless it is full.
function M.sandbox()
  local root = M.root_for(0)
  with_client(root, function(client)
    call(client, 'request', 'agent/sandboxStatus', vim.empty_dict(), function(err, result)
      if err then
        return report('agent/sandboxStatus', err)
      end
      local view = format.sandbox_view(result)
      local lines = vim.list_extend({ '# agent-lsp sandbox: ' .. root, '', view.summary, '' }, view.lines)
      local buf = scratch(SANDBOX, 'markdown')
      set_lines(buf, 0, -1, lines)
      show(buf, true)
      notify(view.summary, view.kind == 'full' and vim.log.levels.INFO or vim.log.levels.WARN)
    end)
  end)
end

--- The conversation state (for statuslines and tests).
function M.status()
  local req = conv.request
  return {
    root = conv.root,
    session_id = conv.session_id,
    running = req ~= nil,
    request_id = req and req.id,
    client_id = req and req.client_id or (conv.root and clients[conv.root]),
    conversation_buf = buffers[CONVERSATION],
    trace_buf = buffers[TRACE],
    tools_buf = buffers[TOOLS],
    checkpoints_buf = buffers[CHECKPOINTS],
    diff_buf = buffers[DIFF],
    check_buf = buffers[CHECK],
    sandbox_buf = buffers[SANDBOX],
  }
end

--- The id of the running client for a project root (default: the current buffer's), if any.
function M.client_id(root)
  local id = clients[root or M.root_for(0)]
  return client_by_id(id) and id or nil
end

--- Configure (any time): keys of `defaults` above. New settings reach running servers.
function M.setup(opts)
  for key, value in pairs(opts or {}) do
    M.config[key] = value
  end
  if opts and opts.settings then
    for _, id in pairs(clients) do
      local client = client_by_id(id)
      if client then
        -- Where workspace/configuration answers come from: config (0.7) or the client (0.9+).
        client.config.settings = { agentLsp = section() }
        client.settings = client.config.settings
        call(client, 'notify', 'workspace/didChangeConfiguration', { settings = { agentLsp = section() } })
      end
    end
  end
end

local group = api.nvim_create_augroup('agent_lsp', { clear = true })
api.nvim_create_autocmd({ 'BufReadPost', 'BufNewFile', 'BufFilePost' }, {
  group = group,
  callback = function(args)
    maybe_attach(args.buf)
  end,
})

return M
