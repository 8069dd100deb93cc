-- The model endpoint: checking that it works (agent/checkConnection) and choosing the
-- model from its list (agent/listModels).
local buffers = require('agent_lsp.buffers')
local client = require('agent_lsp.client')
local format = require('agent_lsp.format')
local transcript = require('agent_lsp.transcript')
local methods = require('agent_lsp.protocol_generated').methods

local M = {}

local call, notify = client.call, client.notify

--- Check the model endpoint (agent/checkConnection): what works and what to fix.
function M.check()
  local root = transcript.root_for(0)
  client.with_client(root, function(c)
    call(c, 'request', methods.check_connection, vim.empty_dict(), function(err, result)
      if err then
        notify(methods.check_connection .. ' failed: ' .. format.error_text(err), vim.log.levels.ERROR)
        return
      end
      local lines = vim.list_extend({ '# agent-lsp connection check', '' }, format.check_lines(result))
      buffers.view(buffers.CHECK, 'markdown', lines)
      if result.ok then
        notify('the model endpoint works')
      else
        notify('the model endpoint does not work yet; see ' .. buffers.CHECK, vim.log.levels.WARN)
      end
    end)
  end)
end

--- Choose the model from the endpoint's list (agent/listModels); sets settings.model.
function M.models()
  local root = transcript.root_for(0)
  client.with_client(root, function(c)
    call(c, 'request', methods.list_models, vim.empty_dict(), function(err, result)
      if err then
        -- The pointer first: a long message is cut to fit the message area.
        notify('no model list (:AgentCheck says why): ' .. format.error_text(err), vim.log.levels.ERROR)
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
        local settings = vim.deepcopy(client.config.settings or {})
        settings.model = choice
        client.configure({ settings = settings })
        notify('model ' .. choice .. ' for this session (keep it: settings.model, or `agent-lsp config set model`)')
      end)
    end)
  end)
end

return M
