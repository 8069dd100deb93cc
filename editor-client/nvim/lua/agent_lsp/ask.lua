-- Asking the agent and steering the conversation: agent/ask (with the selection as
-- context), cancelling it, a new conversation (the old one is kept), compacting it (agent/compact),
-- and the built-in /commands a prompt may be (commands.lua tells them apart).
local buffers = require('agent_lsp.buffers')
local checkpoints = require('agent_lsp.checkpoints')
local client = require('agent_lsp.client')
local commands = require('agent_lsp.commands')
local context = require('agent_lsp.context')
local format = require('agent_lsp.format')
local mcp = require('agent_lsp.mcp')
local transcript = require('agent_lsp.transcript')
local methods = require('agent_lsp.protocol_generated').methods

local M = {}

local api = vim.api
local uv = vim.uv or vim.loop
local call, notify = client.call, client.notify
local append, set_lines, text_lines = buffers.append, buffers.set_lines, buffers.text_lines
local conv, finish, set_status = transcript.conv, transcript.finish, transcript.set_status
local conversation_buf = transcript.conversation_buf

local CANCEL_WAIT_MS = 10000

local asks = 0 -- counter for workDoneTokens

-- Send the ask: the conversation shows the prompt (and what was selected), then the answer.
local function ask_with(prompt, sel)
  if conv.request then
    notify('an ask is already running (:AgentCancel stops it)', vim.log.levels.WARN)
    return
  end
  local root = transcript.root_for(0)
  if conv.root ~= root then
    transcript.start_conversation(root)
  end
  local buf = conversation_buf()
  local you = vim.list_extend({ '## You', '' }, text_lines(prompt))
  if sel then
    vim.list_extend(you, { '', context.note(sel) })
  end
  append(buf, vim.list_extend(you, { '', '## Agent', '' }))
  asks = asks + 1
  local req = { root = root, token = 'agent-lsp-nvim-' .. asks, buf = buf, session_id = conv.session_id }
  req.status_line = api.nvim_buf_line_count(buf)
  conv.request = req
  append(buf, { '_working: starting the server_' })
  buffers.show(buf, false)
  local started = client.with_client(root, function(c)
    if conv.request ~= req then
      return -- cancelled before the server was ready
    end
    local function send_ask()
      if conv.request ~= req then
        return -- cancelled meanwhile
      end
      local params = { prompt = prompt, sessionId = conv.session_id, workDoneToken = req.token }
      params.context = context.param(sel, c)
      local ok, id = call(c, 'request', methods.ask, params, function(err, result)
        transcript.on_answer(req, err, result)
      end)
      if not ok then
        finish(req, { '**Error**: the agent-lsp server is not running.' })
        return
      end
      req.client_id, req.id = c.id, id
      set_status(req, 'working: waiting for the model')
    end
    -- First, whether a folder's own MCP server (new, or changed since it was approved)
    -- waits for approval: said once in the conversation, as VS Code says it.
    local listed = call(c, 'request', methods.mcp_servers, vim.empty_dict(), function(err, result)
      if not err and type(result) == 'table' and conv.request == req then
        local notes = mcp.awaiting_notes(root, result.servers, ':AgentMcp approves it')
        if #notes > 0 then
          transcript.insert_above_status(req, notes)
        end
      end
      send_ask()
    end)
    if not listed then
      send_ask()
    end
  end)
  if not started then
    finish(req, { '**Error**: ' .. tostring(client.start_error or 'could not start the agent-lsp server') })
  end
end

-- A built-in command (`/compact`, `/new`, `/checkpoints`, `/undo [ID]`) runs its action;
-- anything else is sent (a prompt file's `/NAME args` too: the server expands it).
local function send(prompt, sel)
  local name, args = commands.builtin(prompt)
  if not name then
    return ask_with(prompt, sel)
  end
  if name == 'undo' then
    return checkpoints.rewind(args ~= '' and args or nil)
  end
  if args ~= '' then
    return notify('/' .. name .. ' takes no arguments', vim.log.levels.WARN)
  end
  if name == 'compact' then
    M.compact()
  elseif name == 'new' then
    M.new()
  else
    checkpoints.checkpoints()
  end
end

--- Send `prompt` as `agent/ask`; no prompt asks for one with vim.ui.input (`/` completes
--- the commands). `range` ({ line1, line2 } of `:'<,'>AgentAsk`) sends that selection.
function M.ask(prompt, range)
  local sel = range and context.selection(range.line1, range.line2)
  if prompt == nil or prompt:match('^%s*$') then
    vim.ui.input({ prompt = 'Ask the agent: ', completion = commands.INPUT_COMPLETION }, function(input)
      if input and not input:match('^%s*$') then
        send(input, sel)
      end
    end)
    return
  end
  send(prompt, sel)
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
  local c = client.by_id(req.client_id)
  if not (req.id and c) then
    finish(req, { '_(cancelled)_' })
    return
  end
  set_status(req, 'cancelling…')
  call(c, 'cancel_request', req.id)
  -- Neovim hides the server's RequestCancelled reply from handlers; the reply
  -- does remove the request from client.requests, which is what we wait for.
  local deadline = uv.now() + CANCEL_WAIT_MS
  local function wait()
    if conv.request ~= req then
      return
    end
    local running = client.by_id(req.client_id)
    if not running or running.requests[req.id] == nil then
      finish(req, { '_(cancelled)_' })
    elseif uv.now() > deadline then
      finish(req, { '_(cancelled; the server did not confirm)_' })
    else
      vim.defer_fn(wait, 20)
    end
  end
  wait()
end

--- Start a new conversation (the running ask, if any, is cancelled). The old one stays on
--- the server, in :AgentHistory; :AgentDelete deletes one.
function M.new()
  local req = conv.request
  if req then
    M.cancel()
    finish(req, { '_(cancelled)_' })
  end
  local root = transcript.root_for(0)
  transcript.start_conversation(root)
  append(transcript.trace_buf(), { '-- new conversation --' })
  buffers.show(conversation_buf(), false)
end

--- Compact the conversation now (agent/compact): old tool outputs become notes, older
--- turns the model's summary. The result is a line in the conversation and the trace.
function M.compact()
  if conv.request then
    notify('an ask is running; compact after it', vim.log.levels.WARN)
    return
  end
  local c = client.by_id(conv.root and client.id_of(conv.root))
  if not (c and conv.session_id) then
    notify('no conversation to compact yet')
    return
  end
  local session = conv.session_id
  append(conversation_buf(), { '_compacting the conversation…_' })
  local line = api.nvim_buf_line_count(conversation_buf()) - 1
  call(c, 'request', methods.compact, { sessionId = session }, function(err, result)
    local text
    if err then
      text = string.format('**Error** (%s): %s', tostring(err.code), tostring(err.message))
    else
      local summary = format.compaction_summary(result)
      text = '_(' .. summary .. ')_'
      append(transcript.trace_buf(), { os.date('%H:%M:%S') .. ' ⇣ ' .. summary })
    end
    local buf = conversation_buf()
    if api.nvim_buf_get_lines(buf, line, line + 1, false)[1] == '_compacting the conversation…_' then
      set_lines(buf, line, line + 1, { text, '' })
    else
      append(buf, { text, '' })
    end
  end)
end

return M
