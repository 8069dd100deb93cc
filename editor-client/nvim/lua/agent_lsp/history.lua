-- Reopening a saved conversation (:AgentHistory): the folder's conversations
-- (agent/sessions) in vim.ui.select, the picked one's transcript (agent/sessionHistory)
-- redrawn in the conversation buffer, its tool calls as the live ones show; later asks,
-- :AgentCheckpoints, :AgentDiff and :AgentRewind then act on it. The server keeps
-- conversations on disk, so this works after Neovim or the server restarted.
-- :AgentDelete (or the picker's last entry) deletes one for good (agent/endSession), once
-- confirmed.
local buffers = require('agent_lsp.buffers')
local calls = require('agent_lsp.calls')
local client = require('agent_lsp.client')
local format = require('agent_lsp.format')
local transcript = require('agent_lsp.transcript')
local methods = require('agent_lsp.protocol_generated').methods

local M = {}

local api = vim.api
local call, notify, report = client.call, client.notify, client.report
local text_lines = buffers.text_lines
local conv = transcript.conv

--- The picker's line for one agent/sessions entry; an interrupted one (its last ask never
--- finished: its server stopped mid-ask) is marked.
function M.item(session)
  local turns = tonumber(session.turns) or 0
  local line = string.format(
    '%s  %s  (%d ask%s)',
    os.date('%Y-%m-%d %H:%M', tonumber(session.updated) or 0),
    format.one_line(tostring(session.title or '')),
    turns,
    turns == 1 and '' or 's'
  )
  if session.state == 'interrupted' then
    line = line .. '  [interrupted: its last ask never finished]'
  elseif session.state == 'running' then
    line = line .. '  [running]'
  end
  return line
end

-- The conversation buffer's lines for agent/sessionHistory's `entries`, and the tool calls
-- among them ({ offset, count, call }: where each call's lines are).
local function transcript_lines(entries)
  local lines, shown_calls = {}, {}
  local last_role
  for _, entry in ipairs(entries or {}) do
    local content = type(entry.content) == 'string' and entry.content or ''
    if entry.role == 'user' then
      vim.list_extend(lines, { '## You', '' })
      vim.list_extend(lines, text_lines(content))
      table.insert(lines, '')
    elseif entry.role == 'assistant' then
      if last_role ~= 'assistant' then
        vim.list_extend(lines, { '## Agent', '' })
      end
      if not content:match('^%s*$') then
        vim.list_extend(lines, text_lines((content:gsub('%s+$', ''))))
        table.insert(lines, '')
      end
      local made = type(entry.toolCalls) == 'table' and entry.toolCalls or {}
      for _, tool_call in ipairs(made) do
        local call_lines = calls.lines(tool_call)
        table.insert(shown_calls, { offset = #lines, count = #call_lines, call = tool_call })
        vim.list_extend(lines, call_lines)
      end
      if #made > 0 then
        table.insert(lines, '')
      end
    end
    last_role = entry.role
  end
  return lines, shown_calls
end

-- Redraw the conversation `session` (an agent/sessions entry) of `root` from `result`.
local function redraw(root, session, result)
  transcript.start_conversation(root)
  conv.session_id = session.sessionId
  local buf = transcript.conversation_buf()
  local lines, shown_calls = transcript_lines(result.entries)
  local title = format.one_line(tostring(session.title or ''))
  table.insert(lines, 1, '_Reopened: ' .. title .. ' (later asks continue it)._')
  table.insert(lines, 2, '')
  if session.state == 'interrupted' then
    vim.list_extend(lines, {
      '_Its last ask never finished (its server stopped): :AgentCheckpoints lists what it changed, :AgentRewind undoes it._',
      '',
    })
  end
  local base = api.nvim_buf_line_count(buf)
  buffers.append(buf, lines)
  for _, shown in ipairs(shown_calls) do
    local tool_call = shown.call
    calls.track(buf, base + 2 + shown.offset, shown.count, tool_call.id, session.sessionId, root, tool_call.ok == false)
  end
  buffers.show(buf, true)
end

--- Reopen the conversation `session` (an agent/sessions entry) of `root`.
function M.reopen(root, session)
  if conv.request then
    return notify('an ask is running (:AgentCancel stops it)', vim.log.levels.WARN)
  end
  client.with_client(root, function(c)
    call(c, 'request', methods.session_history, { sessionId = session.sessionId }, function(err, result)
      if err then
        return report(methods.session_history, err)
      end
      redraw(root, session, result)
    end)
  end)
end

-- The last entry of :AgentHistory's list: choosing it offers the list again to delete one.
local DELETE_ENTRY = { delete_entry = true }
M.DELETE_LABEL = '(delete one of these conversations…)'

-- Pick one of the saved conversations of the current buffer's project (`prompt` above the
-- list; the current one is marked), then `on_choice(root, c, session)`; `on_delete`: the
-- list ends with DELETE_ENTRY, which calls it.
local function pick(prompt, on_choice, on_delete)
  local root = transcript.root_for(0)
  client.with_client(root, function(c)
    local params = { workspaceFolder = vim.uri_from_fname(root) }
    call(c, 'request', methods.sessions, params, function(err, result)
      if err then
        return report(methods.sessions, err)
      end
      local list = type(result) == 'table' and result.sessions or {}
      if #list == 0 then
        return notify('no saved conversations here')
      end
      local function item(session)
        if session == DELETE_ENTRY then
          return M.DELETE_LABEL
        end
        local current = session.sessionId == conv.session_id and conv.root == root
        return M.item(session) .. (current and '  [current]' or '')
      end
      local options = { prompt = prompt, kind = 'agent_lsp_session', format_item = item }
      local shown = list
      if on_delete then
        shown = vim.list_extend(vim.list_slice(list), { DELETE_ENTRY })
      end
      vim.ui.select(shown, options, function(choice)
        if choice == DELETE_ENTRY then
          on_delete()
        elseif choice then
          on_choice(root, c, choice)
        end
      end)
    end)
  end)
end

--- :AgentHistory: pick one of the project's saved conversations and reopen it; the list's
--- last entry offers it again to delete one (as :AgentDelete does).
function M.history()
  pick('Reopen a conversation:', function(root, _, session)
    M.reopen(root, session)
  end, function()
    M.delete_picked()
  end)
end

--- Delete the conversation `session` (an agent/sessions entry) of `root` once the user
--- confirms: its saved files and its checkpoints (agent/endSession). The current one
--- deleted, the next ask starts a new conversation.
function M.delete(root, c, session)
  local current = session.sessionId == conv.session_id and conv.root == root
  if current and conv.request then
    return notify('an ask is running in it (:AgentCancel stops it)', vim.log.levels.WARN)
  end
  local title = format.one_line(tostring(session.title or ''))
  local prompt = string.format(
    'Delete the conversation "%s" for good (its saved files and its checkpoints: its asks can no longer be undone)?',
    title
  )
  vim.ui.select({ 'Delete', 'Keep' }, { prompt = prompt }, function(choice)
    if choice ~= 'Delete' then
      return
    end
    call(c, 'request', methods.end_session, { sessionId = session.sessionId }, function(err)
      if err then
        return report(methods.end_session, err)
      end
      if conv.session_id == session.sessionId and conv.root == root then
        transcript.start_conversation(root)
        buffers.append(transcript.trace_buf(), { '-- conversation deleted; a new one --' })
      end
      notify('deleted the conversation "' .. title .. '"')
    end)
  end)
end

--- :AgentDelete: pick one of the project's saved conversations and delete it, confirmed.
function M.delete_picked()
  pick('Delete a conversation:', M.delete)
end

return M
