-- What the agent can do here: the tools it can call (agent/listTools) and what confines its
-- bash commands (agent/sandboxStatus).
local buffers = require('agent_lsp.buffers')
local client = require('agent_lsp.client')
local format = require('agent_lsp.format')
local transcript = require('agent_lsp.transcript')
local methods = require('agent_lsp.protocol_generated').methods

local M = {}

local call, notify, report = client.call, client.notify, client.report

--- List the tools the agent can call.
function M.tools()
  local root = transcript.root_for(0)
  client.with_client(root, function(c)
    call(c, 'request', methods.list_tools, vim.empty_dict(), function(err, result)
      if err then
        notify(methods.list_tools .. ' failed: ' .. tostring(err.message), vim.log.levels.ERROR)
        return
      end
      local lines = { '# agent-lsp tools: ' .. root, '' }
      for _, tool in ipairs(result.tools or {}) do
        local hints = type(tool.annotations) == 'table' and tool.annotations or {}
        -- An MCP server's tool: its name and description are that server's text.
        local description = buffers.text_lines(type(tool.description) == 'string' and tool.description or '')[1]
        local notes = {}
        if hints.readOnlyHint == true then
          table.insert(notes, 'read-only')
        elseif hints.destructiveHint == true then
          table.insert(notes, 'destructive')
        end
        local source = type(tool.source) == 'table' and tool.source or {}
        if source.kind == 'mcp' and type(source.server) == 'string' then
          table.insert(notes, 'MCP server ' .. format.escape_control(source.server))
        end
        -- A language tool: who answers it here (the editor's language servers, or those
        -- agent-lsp starts itself).
        if type(hints.languageSource) == 'string' then
          table.insert(notes, format.escape_control(hints.languageSource))
        end
        local line = '- **' .. format.escape_control(tostring(tool.name)) .. '**'
        if #notes > 0 then
          line = line .. ' (' .. table.concat(notes, ', ') .. ')'
        end
        table.insert(lines, line .. ': ' .. format.escape_control(description))
      end
      buffers.view(buffers.TOOLS, 'markdown', lines)
    end)
  end)
end

--- What confines the agent's bash commands in this project (agent/sandboxStatus): the
--- layers in force, the network, where they may write, the limits, and, where this system
--- gives only a weaker form, why and what then does not hold. A warning unless it is full.
function M.sandbox()
  local root = transcript.root_for(0)
  client.with_client(root, function(c)
    -- With the conversation: its folder's sandbox and the "always" answers that widen it.
    local conv = transcript.conv
    local params = (conv.root == root and conv.session_id) and { sessionId = conv.session_id } or vim.empty_dict()
    call(c, 'request', methods.sandbox_status, params, function(err, result)
      if err then
        return report(methods.sandbox_status, err)
      end
      local view = format.sandbox_view(result)
      local lines = vim.list_extend({ '# agent-lsp sandbox: ' .. root, '', view.summary, '' }, view.lines)
      buffers.view(buffers.SANDBOX, 'markdown', lines)
      notify(view.summary, view.kind == 'full' and vim.log.levels.INFO or vim.log.levels.WARN)
    end)
  end)
end

return M
