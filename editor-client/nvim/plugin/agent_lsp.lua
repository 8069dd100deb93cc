-- agent-lsp commands; the module loads on first use. Configure with
-- require('agent_lsp').setup({ cmd = {...}, settings = {...} }).
if vim.g.loaded_agent_lsp then
  return
end
vim.g.loaded_agent_lsp = 1

local function command(name, fn, opts)
  vim.api.nvim_create_user_command(name, fn, opts)
end

command('AgentAsk', function(opts)
  local range = opts.range > 0 and { line1 = opts.line1, line2 = opts.line2 } or nil
  require('agent_lsp').ask(opts.args, range)
end, {
  nargs = '*',
  range = true,
  complete = function(arglead, line, pos)
    return require('agent_lsp').complete_ask(arglead, line, pos)
  end,
  desc = "agent-lsp: ask the agent (no argument: prompt for it; :'<,'> sends the selection; /<Tab>: the commands)",
})
command('AgentChat', function()
  require('agent_lsp').chat()
end, { nargs = 0, desc = 'agent-lsp: the conversation with a prompt buffer below it (<C-s> or <CR> sends)' })
command('AgentCancel', function()
  require('agent_lsp').cancel()
end, { nargs = 0, desc = 'agent-lsp: cancel the running ask' })
command('AgentNew', function()
  require('agent_lsp').new()
end, { nargs = 0, desc = 'agent-lsp: start a new conversation' })
command('AgentHistory', function()
  require('agent_lsp').history()
end, { nargs = 0, desc = "agent-lsp: reopen one of the project's saved conversations" })
command('AgentDelete', function()
  require('agent_lsp').delete()
end, { nargs = 0, desc = "agent-lsp: delete one of the project's saved conversations for good (asks first)" })
command('AgentTools', function()
  require('agent_lsp').tools()
end, { nargs = 0, desc = 'agent-lsp: list the tools the agent can call' })
command('AgentTrace', function()
  require('agent_lsp').trace()
end, { nargs = 0, desc = 'agent-lsp: open the tool trace' })
command('AgentCheck', function()
  require('agent_lsp').check()
end, { nargs = 0, desc = 'agent-lsp: check the model endpoint (key, URL, model)' })
command('AgentModel', function()
  require('agent_lsp').models()
end, { nargs = 0, desc = "agent-lsp: choose the model from the endpoint's list" })
command('AgentCompact', function()
  require('agent_lsp').compact()
end, { nargs = 0, desc = 'agent-lsp: compact the conversation (summarize older turns)' })
command('AgentCheckpoints', function()
  require('agent_lsp').checkpoints()
end, { nargs = 0, desc = "agent-lsp: list the conversation's asks and the files each changed" })
command('AgentDiff', function(opts)
  require('agent_lsp').diff(opts.args)
end, {
  nargs = '?',
  complete = function(arglead)
    return require('agent_lsp').complete_checkpoint(arglead)
  end,
  desc = 'agent-lsp: show what an ask changed (default: the latest)',
})
command('AgentRewind', function(opts)
  require('agent_lsp').rewind(opts.args, opts.bang)
end, {
  nargs = '?',
  bang = true,
  complete = function(arglead)
    return require('agent_lsp').complete_checkpoint(arglead)
  end,
  desc = 'agent-lsp: undo an ask and every later one (! skips the question)',
})
command('AgentGrants', function()
  require('agent_lsp').grants()
end, { nargs = 0, desc = 'agent-lsp: list the conversation\'s "always" permission answers; revoke one' })
command('AgentSandbox', function()
  require('agent_lsp').sandbox()
end, { nargs = 0, desc = "agent-lsp: show what confines the agent's bash commands here, and what is weaker" })
command('AgentInstructions', function()
  require('agent_lsp').instructions()
end, { nargs = 0, desc = 'agent-lsp: list the instruction files and skills the model is given (Enter opens one)' })
command('AgentMcp', function(opts)
  require('agent_lsp').mcp(opts.args)
end, {
  nargs = '*',
  complete = function(_, line)
    return line:match('^%S+%s+%S*$') and { 'approve' } or {}
  end,
  desc = "agent-lsp: list the folder's MCP servers (a approves one); :AgentMcp approve NAME",
})
