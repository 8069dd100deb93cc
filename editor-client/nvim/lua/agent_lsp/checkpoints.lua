-- The conversation's checkpoints (one before every ask changes anything): listing them
-- (agent/checkpoints), what an ask changed (agent/diff) and undoing asks (agent/rewind).
local buffers = require('agent_lsp.buffers')
local client = require('agent_lsp.client')
local format = require('agent_lsp.format')
local transcript = require('agent_lsp.transcript')
local methods = require('agent_lsp.protocol_generated').methods

local M = {}

local call, notify, report = client.call, client.notify, client.report
local api = vim.api

-- What the views show: the checkpoint of each line of the list, the checkpoint of the diff.
local shown = { targets = {}, diff = nil }

--- Run `callback(client, session_id, checkpoint_id)` for the conversation's checkpoint
--- `id` (default: its latest ask).
local function with_checkpoint(id, callback)
  transcript.with_session(function(c, session)
    if id and id ~= '' then
      callback(c, session, id)
      return
    end
    call(c, 'request', methods.checkpoints, { sessionId = session }, function(err, result)
      if err then
        notify(methods.checkpoints .. ' failed: ' .. tostring(err.message), vim.log.levels.ERROR)
        return
      end
      local list = result.checkpoints or {}
      if #list == 0 then
        notify('no checkpoints in this conversation')
        return
      end
      callback(c, session, list[#list].id)
    end)
  end)
end

--- List the conversation's asks and the files each one changed.
function M.checkpoints()
  transcript.with_session(function(c, session)
    call(c, 'request', methods.checkpoints, { sessionId = session }, function(err, result)
      if err then
        return report(methods.checkpoints, err)
      end
      local lines, targets = {}, {}
      for _, checkpoint in ipairs(result.checkpoints or {}) do
        for _, line in ipairs(format.checkpoint_lines({ checkpoint })) do
          table.insert(lines, line)
          targets[#lines] = checkpoint.id
        end
      end
      lines = #lines > 0 and lines or { 'no checkpoints in this conversation' }
      shown.targets = targets
      local buf = buffers.scratch(buffers.CHECKPOINTS, 'agentlspcheckpoints')
      vim.keymap.set('n', '<CR>', function()
        M.act_at_cursor('diff')
      end, { buffer = buf, desc = 'agent-lsp: show what this ask changed' })
      vim.keymap.set('n', 'R', function()
        M.act_at_cursor('rewind')
      end, { buffer = buf, desc = 'agent-lsp: undo this ask and every later one' })
      buffers.view(buffers.CHECKPOINTS, 'agentlspcheckpoints', lines)
    end)
  end)
end

--- The completion of :AgentDiff and :AgentRewind: the conversation's checkpoint ids
--- (agent/checkpoints, waited for at most COMPLETE_WAIT_MS), newest first.
M.COMPLETE_WAIT_MS = 2000

function M.complete(arglead)
  local conv = transcript.conv
  local c = client.by_id(conv.root and client.id_of(conv.root))
  if not (c and conv.session_id) then
    return {}
  end
  local ids, done = {}, false
  call(c, 'request', methods.checkpoints, { sessionId = conv.session_id }, function(err, result)
    done = true
    for _, checkpoint in ipairs(not err and type(result) == 'table' and result.checkpoints or {}) do
      table.insert(ids, 1, tostring(checkpoint.id))
    end
  end)
  vim.wait(M.COMPLETE_WAIT_MS, function()
    return done
  end, 10)
  return vim.tbl_filter(function(id)
    return vim.startswith(id, arglead or '')
  end, ids)
end

--- In the checkpoint list: show the diff of the checkpoint under the cursor (`<CR>`), or
--- undo it and every later one (`R`, asking first).
function M.act_at_cursor(action)
  local id = shown.targets[api.nvim_win_get_cursor(0)[1]]
  if not id then
    return notify('no checkpoint on this line', vim.log.levels.WARN)
  end
  if action == 'rewind' then
    M.rewind(id)
  else
    M.diff(id)
  end
end

--- Show what ask `id` (default: the latest) changed, as a unified diff.
function M.diff(id)
  with_checkpoint(id, function(c, session, checkpoint)
    local params = { sessionId = session, checkpointId = checkpoint }
    call(c, 'request', methods.diff, params, function(err, result)
      if err then
        return report(methods.diff, err)
      end
      local lines = format.diff_lines(result.files)
      lines = #lines > 0 and lines or { '(ask ' .. checkpoint .. ' changed no files)' }
      shown.diff = checkpoint
      local buf = buffers.scratch(buffers.DIFF, 'diff')
      vim.keymap.set('n', 'R', function()
        if shown.diff then
          M.rewind(shown.diff)
        end
      end, { buffer = buf, desc = 'agent-lsp: undo this ask and every later one' })
      buffers.view(buffers.DIFF, 'diff', lines)
    end)
  end)
end

--- Undo ask `id` (default: the latest) and every later one: a dry run first says what
--- will be restored and what is kept because it changed since; `force` skips asking.
function M.rewind(id, force)
  if transcript.conv.request then
    notify('an ask is running (:AgentCancel stops it)', vim.log.levels.WARN)
    return
  end
  with_checkpoint(id, function(c, session, checkpoint)
    local function run()
      local params = { sessionId = session, checkpointId = checkpoint }
      call(c, 'request', methods.rewind, params, function(err, result)
        if err then
          return report(methods.rewind, err)
        end
        local lines = { '_Undone: ask ' .. checkpoint .. ' and later (the agent forgot them)._', '' }
        for _, line in ipairs(format.rewind_lines(result, checkpoint)) do
          table.insert(lines, '- ' .. line)
        end
        table.insert(lines, '')
        buffers.append(transcript.conversation_buf(), lines)
        pcall(vim.cmd, 'checktime')
        notify(string.format('undid ask %s: %d restored, %d kept', checkpoint, #result.restored, #result.conflicts))
      end)
    end
    if force then
      return run()
    end
    local params = { sessionId = session, checkpointId = checkpoint, dryRun = true }
    call(c, 'request', methods.rewind, params, function(err, result)
      if err then
        return report(methods.rewind, err)
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

return M
