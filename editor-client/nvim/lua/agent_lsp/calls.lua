-- The tool calls shown in the conversation: a line per call (its mark, name and summary,
-- as in the trace), then, folded, its arguments and the tail of its output:
--   - ✓ bash ls -la (12 ms)
--     ┆ arguments: {"command":"ls -la"}      (an edit: its diff, format.edit_lines)
--     ┆ output, last 10 of 200 lines (o: all of it):
--     ┆ ...
-- and opening a call's whole output (agent/toolOutput) in `agent-lsp://tool-output`.
-- Where each call's lines are is kept here; transcript.lua inserts them (it owns the
-- conversation's layout) and says when lines above others grew.
local buffers = require('agent_lsp.buffers')
local client = require('agent_lsp.client')
local format = require('agent_lsp.format')
local methods = require('agent_lsp.protocol_generated').methods

local M = {}

local api = vim.api

M.OUTPUT = 'agent-lsp://tool-output' -- agent/toolOutput
M.DETAIL = '  ┆ ' -- the prefix of a call's folded lines (the fold expression looks for it)
M.TAIL_LINES = 10
M.ARGUMENT_CHARS = 300
-- Folds a call's lines, its details under its line: one line per call until opened (zo).
-- Window-local, set where the conversation shows.
M.FOLDEXPR = [[getline(v:lnum)=~#'^  ┆'?1:(getline(v:lnum+1)=~#'^  ┆'?'>1':0)]]

local MARKS = { started = '→', waiting = '⏸', completed = '✓', failed = '✗' }

-- buf -> list of { row (0-based), count, call_id, session, root, failed }
local shown = {}

--- The lines of a call: `call` holds an agent/toolActivity's fields (`status`, `output`,
--- `title`, `durationText`) or a history entry's (`ok`, `output`, `title`).
function M.lines(call)
  local status = call.status or (call.ok == false and 'failed' or 'completed')
  local head = string.format('- %s %s', MARKS[status] or '?', format.call_title(call))
  if status == 'waiting' then
    head = head .. ' (waiting for permission)'
  elseif type(call.durationText) == 'string' then
    head = head .. ' (' .. format.took(call) .. ')'
  end
  local lines = { head }
  if status ~= 'completed' and status ~= 'failed' then
    return lines
  end
  local arguments = type(call.arguments) == 'string' and call.arguments or ''
  -- An edit that was made shows as a diff (format.edit_lines); other calls their arguments.
  local edit = status == 'completed' and format.edit_lines(call.name, arguments) or {}
  for _, line in ipairs(edit) do
    table.insert(lines, M.DETAIL .. line)
  end
  if #edit == 0 then
    table.insert(lines, M.DETAIL .. 'arguments: ' .. format.one_line(arguments, M.ARGUMENT_CHARS))
  end
  local output = type(call.output) == 'string' and call.output:gsub('%s+$', '') or ''
  if output == '' then
    table.insert(lines, M.DETAIL .. '(no output; o: open it)')
    return lines
  end
  local out = vim.split(output:gsub('\r\n', '\n'), '\n', { plain = true })
  local first = math.max(1, #out - M.TAIL_LINES + 1)
  local what = first == 1 and string.format('output, %d line%s', #out, #out == 1 and '' or 's')
    or string.format('output, last %d of %d lines', #out - first + 1, #out)
  table.insert(lines, M.DETAIL .. what .. ' (o: all of it):')
  for i = first, #out do
    table.insert(lines, M.DETAIL .. format.escape_control(out[i]))
  end
  return lines
end

--- The call `call_id` shown in `buf`, if it is.
function M.find(buf, call_id)
  for _, entry in ipairs(shown[buf] or {}) do
    if entry.call_id == call_id then
      return entry
    end
  end
  return nil
end

--- Note that `buf`'s lines from `row` on moved by `delta` (lines inserted or removed above).
function M.shift(buf, row, delta)
  for _, entry in ipairs(shown[buf] or {}) do
    if entry.row >= row then
      entry.row = entry.row + delta
    end
  end
end

--- Note a call shown at `row` of `buf` on `count` lines.
function M.track(buf, row, count, call_id, session, root, failed)
  shown[buf] = shown[buf] or {}
  local entry = { row = row, count = count, call_id = call_id, session = session, root = root, failed = failed }
  table.insert(shown[buf], entry)
  M.highlight(buf, entry)
  return entry
end

--- Forget every call shown in `buf` (its lines were replaced).
function M.forget(buf)
  shown[buf] = nil
  pcall(api.nvim_buf_clear_namespace, buf, M.NS, 0, -1)
end

M.NS = api.nvim_create_namespace('agent_lsp_calls')

--- A failed call's line stands out (AgentLspToolFailed).
function M.highlight(buf, entry)
  if entry.failed then
    api.nvim_buf_add_highlight(buf, M.NS, 'AgentLspToolFailed', entry.row, 0, -1)
  end
end

--- The call shown on the cursor's line (its line or a detail line) of the current window.
function M.at_cursor()
  local buf = api.nvim_get_current_buf()
  local row = api.nvim_win_get_cursor(0)[1] - 1
  for _, entry in ipairs(shown[buf] or {}) do
    if row >= entry.row and row < entry.row + entry.count then
      return entry
    end
  end
  return nil
end

--- Open the whole output of the call `entry` (agent/toolOutput) in `agent-lsp://tool-output`.
function M.open(entry)
  client.with_client(entry.root, function(c)
    local params = { sessionId = entry.session, callId = entry.call_id }
    client.call(c, 'request', methods.tool_output, params, function(err, result)
      if err then
        return client.report(methods.tool_output, err)
      end
      local lines = { M.lines({ name = result.name, arguments = result.arguments, ok = result.ok, title = result.title })[1], '' }
      local output = type(result.output) == 'string' and result.output or ''
      vim.list_extend(lines, buffers.text_lines(format.escape_control(output, true)))
      if result.truncated == true then
        vim.list_extend(lines, { '', "(cut: the server's copy of this output was cut)" })
      end
      buffers.view(M.OUTPUT, 'agentlspoutput', lines)
    end)
  end)
end

--- `o` in the conversation: open the output of the call under the cursor.
function M.open_at_cursor()
  local entry = M.at_cursor()
  if not entry then
    return client.notify('no tool call on this line', vim.log.levels.WARN)
  end
  M.open(entry)
end

return M
