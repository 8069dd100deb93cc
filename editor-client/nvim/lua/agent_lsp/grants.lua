-- The conversation's "always" answers to permission requests: listing them (agent/grants)
-- and revoking one (agent/revokeGrant). The requests themselves: permissions.lua.
local client = require('agent_lsp.client')
local permissions = require('agent_lsp.permissions')
local transcript = require('agent_lsp.transcript')
local methods = require('agent_lsp.protocol_generated').methods

local M = {}

local call, notify, report = client.call, client.notify, client.report

--- The conversation's "always" answers (agent/grants), in vim.ui.select: the picked one
--- is revoked (agent/revokeGrant), so that exact call is asked about again.
function M.grants()
  transcript.with_session(function(c, session)
    call(c, 'request', methods.grants, { sessionId = session }, function(err, result)
      if err then
        return report(methods.grants, err)
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
        call(c, 'request', methods.revoke_grant, params, function(revoke_err, revoked)
          if revoke_err then
            return report(methods.revoke_grant, revoke_err)
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

return M
