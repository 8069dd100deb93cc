-- The /commands a prompt may start with: completing them (agent/listCommands, cached per
-- folder) for `:AgentAsk /<Tab>` and the prompt of vim.ui.input, and telling a built-in
-- command (a client action that ask.lua runs) from a prompt to send. A prompt file's
-- `/NAME args` is sent as typed: the server expands it. So is an unknown /word.
local client = require('agent_lsp.client')
local transcript = require('agent_lsp.transcript')
local methods = require('agent_lsp.protocol_generated').methods

local M = {}

-- The built-in commands: the client's own actions, never sent to the model.
M.BUILTINS = { 'compact', 'new', 'checkpoints', 'undo' }
-- A folder's list is fetched again when older than this.
M.STALE_MS = 10000
-- How long a completion waits for the list: the first (which may start the server), later.
M.FIRST_WAIT_MS = 8000
M.REFRESH_WAIT_MS = 1500

local call = client.call
local uv = vim.uv or vim.loop

local cache = {} -- root -> { commands = list or nil, at = ms, pending = { callbacks } or nil }

local function now()
  return uv.hrtime() / 1e6
end

--- The built-in command `prompt` names, and the text after it, or nil for a prompt to send.
function M.builtin(prompt)
  local name, rest = tostring(prompt or ''):match('^%s*/(%S+)(.*)$')
  if name and vim.tbl_contains(M.BUILTINS, name) then
    return name, vim.trim(rest)
  end
  return nil
end

--- Fetch `root`'s commands (agent/listCommands); `done()` once the cache has them (or not).
function M.fetch(root, done)
  local entry = cache[root] or {}
  cache[root] = entry
  if entry.pending then
    table.insert(entry.pending, done)
    return
  end
  entry.pending = { done }
  local function finish()
    local waiting = entry.pending or {}
    entry.pending = nil
    for _, callback in ipairs(waiting) do
      callback()
    end
  end
  local started = client.with_client(root, function(c)
    local params = { workspaceFolder = vim.uri_from_fname(root) }
    local ok = call(c, 'request', methods.list_commands, params, function(err, result)
      if not err and type(result) == 'table' and type(result.commands) == 'table' then
        entry.commands, entry.at = result.commands, now()
      end
      finish()
    end)
    if not ok then
      finish()
    end
  end)
  if not started then
    finish()
  end
end

--- `root`'s commands (agent/listCommands' `commands`), fetched again when stale; the wait is
--- bounded, and skipped while an ask runs (its answer must not wait on a completion): then
--- the cached list, else the built-ins, and the fetch goes on for the next completion.
function M.commands(root)
  local entry = cache[root]
  if not (entry and entry.commands and now() - entry.at < M.STALE_MS) then
    local done = false
    M.fetch(root, function()
      done = true
    end)
    if not transcript.conv.request then
      local known = entry and entry.commands
      vim.wait(known and M.REFRESH_WAIT_MS or M.FIRST_WAIT_MS, function()
        return done
      end, 10)
    end
    entry = cache[root]
  end
  if entry and entry.commands then
    return entry.commands
  end
  return vim.tbl_map(function(name)
    return { name = name, source = 'builtin' }
  end, M.BUILTINS)
end

--- The `/name`s of `root`'s commands that start with `lead` (a `/word`).
function M.names(root, lead)
  local found = {}
  for _, command in ipairs(M.commands(root)) do
    local name = type(command.name) == 'string' and '/' .. command.name
    if name and vim.startswith(name, lead) then
      table.insert(found, name)
    end
  end
  return found
end

--- The completion of `:AgentAsk` (customlist): a `/word` typed as its first argument.
function M.complete(arglead, cmdline, cursorpos)
  local typed = cmdline:sub(1, cursorpos or #cmdline)
  local args = typed:match('^[^%a]*%a%w*!?%s+(.*)$')
  if args ~= arglead or arglead:sub(1, 1) ~= '/' then
    return {}
  end
  return M.names(transcript.root_for(0), arglead)
end

--- The completion of the prompt vim.ui.input reads: a `/word` that is all of it so far.
function M.complete_prompt(_, line, cursorpos)
  local typed = line:sub(1, cursorpos or #line)
  local lead = typed:match('^%s*(/%S*)$')
  if not lead then
    return {}
  end
  local indent = typed:match('^%s*')
  return vim.tbl_map(function(name)
    return indent .. name
  end, M.names(transcript.root_for(0), lead))
end

-- vim.ui.input's `completion` names a Vim function ("customlist,{func}"), not a Lua one.
vim.cmd([[
function! AgentLspCompletePrompt(lead, line, pos) abort
  return luaeval("require('agent_lsp.commands').complete_prompt(_A[1], _A[2], _A[3])", [a:lead, a:line, a:pos])
endfunction
]])
M.INPUT_COMPLETION = 'customlist,AgentLspCompletePrompt'

return M
