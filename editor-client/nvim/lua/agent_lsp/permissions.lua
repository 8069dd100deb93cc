-- agent/requestPermission: the server asks before a call it may not run on its own
-- (a bash escalation, or any change when agentLsp.approval is "always"). The user picks
-- one of the request's options with vim.ui.select; the answer is ACP's shape:
--   { outcome = { outcome = 'selected', optionId = ... } }  or  { outcome = { outcome = 'cancelled' } }
--
-- Neovim answers a server request with the handler's return value. From 0.10 handlers
-- run in a coroutine, so the handler yields until the user picks; on 0.7-0.9 it waits
-- with vim.wait (the default vim.ui.select is synchronous there anyway). When the server
-- withdraws the request ($/cancelRequest: the ask was cancelled, or nobody answered in
-- time), the wait ends with 'cancelled' and a late pick is ignored.
--
-- What the prompt shows is escaped (format.escape_consent): an escape sequence in a
-- command must not hide part of what the user allows. A command is shown line by line.
local format = require('agent_lsp.format')
local escape = format.escape_consent

local M = {}

M.CAPABILITY = { experimental = { agent = { requestPermission = true } } }
-- How long the handler waits at most; the server's own timeout (permissionTimeout) is shorter.
M.WAIT_MS = 60 * 60 * 1000

local pending = nil -- the request on screen: { done = bool, choice = optionId|nil }

-- Called with the request's escaped title as it is shown (init.lua: the conversation's status
-- line says the ask waits for you, whatever progress notification is still to come).
M.on_prompt = nil

local function cancelled()
  return { outcome = { outcome = 'cancelled' } }
end

--- The text vim.ui.select shows above the options.
function M.prompt_text(params)
  local lines = { 'agent-lsp asks: ' .. escape(tostring(params.title or params.toolName or '?')) }
  local command = type(params.arguments) == 'table' and params.arguments.command
  if params.toolName == 'bash' and type(command) == 'string' then
    table.insert(lines, 'Command:')
    for _, line in ipairs(vim.split(escape(command, true), '\n', { plain = true })) do
      table.insert(lines, '    ' .. line)
    end
  end
  -- An edit or a write: what it would change, as a diff.
  local arguments = params.arguments
  if type(arguments) == 'table' then
    arguments = vim.json.encode(arguments)
  end
  for _, line in ipairs(format.edit_lines(params.toolName, arguments)) do
    table.insert(lines, '    ' .. line)
  end
  if type(params.reason) == 'string' and params.reason ~= '' then
    table.insert(lines, 'Reason: ' .. escape(params.reason))
  end
  -- What an "always" answer allows: the server's sentence (alwaysScope), never our own.
  if type(params.alwaysScope) == 'string' and params.alwaysScope ~= '' then
    table.insert(lines, '"Always" allows: ' .. escape(params.alwaysScope))
  end
  return table.concat(lines, '\n')
end

--- One line of :AgentGrants for a grant of agent/grants: the answer, the tool and what
--- the call was (its title names the command or the file).
function M.grant_label(grant)
  return string.format('%s  %s: %s', tostring(grant.decision), tostring(grant.toolName), escape(tostring(grant.title)))
end

--- $/cancelRequest from the server: at most one permission request is on screen at a
--- time (calls that need one run one after another), so that is the one withdrawn.
function M.on_cancel()
  if pending and not pending.done then
    pending.done = true
    pending.withdrawn = true
    vim.notify('agent-lsp: the permission request was withdrawn', vim.log.levels.INFO)
    if pending.resume then
      pending.resume()
    end
  end
end

function M.handler(_, params)
  local options = type(params) == 'table' and type(params.options) == 'table' and params.options or {}
  if #options == 0 then
    return cancelled()
  end
  local state = { done = false }
  pending = state
  local co, is_main = coroutine.running()
  local can_yield = co ~= nil and not is_main and vim.fn.has('nvim-0.10') == 1
  local function finish(choice)
    if state.done then
      return -- withdrawn meanwhile: a late pick changes nothing
    end
    state.done, state.choice = true, choice
    if state.resume then
      state.resume()
    end
  end
  if M.on_prompt then
    M.on_prompt(escape(tostring(params.title or params.toolName or '?')))
  end
  vim.ui.select(options, {
    prompt = M.prompt_text(params),
    kind = 'agent_lsp_permission',
    format_item = function(option)
      return option.name
    end,
  }, function(option)
    finish(option and option.optionId or nil)
  end)
  if not state.done then
    if can_yield then
      -- Resumed by the pick or by a withdrawal (scheduled: never before the yield).
      state.resume = function()
        vim.schedule(function()
          coroutine.resume(co)
        end)
      end
      coroutine.yield()
    else
      vim.wait(M.WAIT_MS, function()
        return state.done
      end, 20)
    end
  end
  if pending == state then
    pending = nil
  end
  if state.withdrawn or not state.choice then
    return cancelled()
  end
  return { outcome = { outcome = 'selected', optionId = state.choice } }
end

return M
