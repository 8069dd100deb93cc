-- agent-lsp for Neovim: a thin client for the agent-lsp language server.
--
-- The server does all the agent work; this client starts it per project root with
-- the built-in LSP client, attaches the project's buffers (so the server sees
-- unsaved text), sends `agent/ask` (with the selection of `:'<,'>AgentAsk`), and
-- shows the conversation -- the answer as it streams -- and the tool trace in
-- scratch buffers. Works on Neovim 0.7.2 and later.
--
-- This module is the entry point: setup(), the public API (what plugin/agent_lsp.lua's
-- commands call), and the wiring between the modules that hold the work:
--   client.lua       the configuration, the server per project root, requests, settings
--   buffers.lua      the scratch buffers and their windows
--   transcript.lua   the conversation: its state, streamed answers, status line, trace
--   context.lua      the selection sent with an ask
--   ask.lua          ask (a built-in /command runs its action), cancel, new conversation, compact
--   compose.lua      the chat: the conversation and a prompt buffer below it
--   commands.lua     the /commands: completing them, telling the built-ins apart
--   checkpoints.lua  the checkpoints, an ask's diff, rewinding
--   grants.lua       the "always" permission answers
--   history.lua      reopening a saved conversation, deleting one
--   model.lua        checking the endpoint, choosing the model
--   tools.lua        the tool list, the bash sandbox
--   mcp.lua          the folder's MCP servers, approving a folder's own
--   instructions.lua the instruction files and skills the model is given
--   calls.lua        the tool calls shown in the conversation, a call's whole output
--   permissions.lua  answering the server's permission requests
--   format.lua       the text shown: trace lines, checkpoint lists, diffs, the sandbox view
local ask = require('agent_lsp.ask')
local buffers = require('agent_lsp.buffers')
local checkpoints = require('agent_lsp.checkpoints')
local client = require('agent_lsp.client')
local grants = require('agent_lsp.grants')
local model = require('agent_lsp.model')
local tools = require('agent_lsp.tools')
local transcript = require('agent_lsp.transcript')

local M = {}

-- The configuration: keys of client.lua's `defaults`; changed by setup().
M.config = client.config

-- What the conversation shows of each server, and what it does when one exits (client.lua
-- cannot require transcript.lua, which needs it).
client.set_handlers(transcript.handlers, transcript.on_exit)
-- While a permission prompt is open, the status line says the ask waits for the user (it
-- said "the model is writing": the progress that says so may come after the prompt).
require('agent_lsp.permissions').on_prompt = function(title)
  local req = transcript.conv.request
  if req and not req.cancelling then
    transcript.set_status(req, 'working: waiting for you: ' .. title)
  end
end

M.root_for = transcript.root_for
M.ask = ask.ask
M.cancel = ask.cancel
M.new = ask.new
M.compact = ask.compact
M.trace = transcript.trace
M.tools = tools.tools
M.sandbox = tools.sandbox
M.check = model.check
M.models = model.models
M.checkpoints = checkpoints.checkpoints
M.diff = checkpoints.diff
M.rewind = checkpoints.rewind
M.grants = grants.grants
M.history = require('agent_lsp.history').history
M.delete = require('agent_lsp.history').delete_picked
M.chat = require('agent_lsp.compose').open
M.mcp = require('agent_lsp.mcp').mcp
M.instructions = require('agent_lsp.instructions').instructions
M.complete_ask = require('agent_lsp.commands').complete
M.complete_checkpoint = checkpoints.complete

--- The conversation state (for statuslines and tests).
function M.status()
  local conv = transcript.conv
  local req = conv.request
  return {
    root = conv.root,
    session_id = conv.session_id,
    running = req ~= nil,
    request_id = req and req.id,
    client_id = req and req.client_id or (conv.root and client.id_of(conv.root)),
    conversation_buf = buffers.get(buffers.CONVERSATION),
    trace_buf = buffers.get(buffers.TRACE),
    tools_buf = buffers.get(buffers.TOOLS),
    checkpoints_buf = buffers.get(buffers.CHECKPOINTS),
    diff_buf = buffers.get(buffers.DIFF),
    check_buf = buffers.get(buffers.CHECK),
    sandbox_buf = buffers.get(buffers.SANDBOX),
    prompt_buf = buffers.get(require('agent_lsp.compose').BUFFER),
    instructions_buf = buffers.get(require('agent_lsp.instructions').BUFFER),
  }
end

--- The id of the running client for a project root (default: the current buffer's), if any.
function M.client_id(root)
  local id = client.id_of(root or M.root_for(0))
  return client.by_id(id) and id or nil
end

--- Configure (any time): keys of `defaults` in client.lua. New settings reach running servers.
function M.setup(opts)
  client.configure(opts)
end

local group = vim.api.nvim_create_augroup('agent_lsp', { clear = true })

-- A failed tool call's line (in the conversation and the trace); `default`, so a colour
-- scheme or the user may set it, and again after a colour scheme cleared the highlights.
local function highlights()
  vim.cmd('highlight default link AgentLspToolFailed ErrorMsg')
end
highlights()
vim.api.nvim_create_autocmd('ColorScheme', { group = group, callback = highlights })
vim.api.nvim_create_autocmd({ 'BufReadPost', 'BufNewFile', 'BufFilePost' }, {
  group = group,
  callback = function(args)
    client.maybe_attach(args.buf)
  end,
})
-- A file loaded unseen for the editor's language servers (language.lua) is not open for the
-- agent (its writes go to the file) until it is shown in a window.
vim.api.nvim_create_autocmd('BufWinEnter', {
  group = group,
  callback = function(args)
    local language = require('agent_lsp.language')
    if language.unseen[args.buf] then
      -- bufload() itself enters the buffer in Neovim's hidden autocommand window: a window
      -- that still shows it afterwards is a real one.
      vim.schedule(function()
        if language.unseen[args.buf] and #vim.fn.win_findbuf(args.buf) > 0 then
          language.unseen[args.buf] = nil
          client.maybe_attach(args.buf)
        end
      end)
    end
  end,
})

return M
