-- The editor context sent with an ask: the selection of `:'<,'>AgentAsk`, as agent/ask's
-- `context` (activeDocument.selection) in the position encoding the server negotiated.
local M = {}

local api = vim.api

-- Code units of `text` (UTF-8) in a position encoding.
local function units(text, encoding)
  if encoding == 'utf-8' then
    return #text
  end
  local count = 0
  for char in text:gmatch('[%z\1-\127\194-\244][\128-\191]*') do
    count = count + ((encoding == 'utf-16' and #char == 4) and 2 or 1)
  end
  return count
end

--- The lines `line1`..`line2` of the current buffer as a selection: the characters
--- of the last visual selection when it was charwise over those lines, else the
--- whole lines. Byte columns; nil for a buffer that is not a file.
function M.selection(line1, line2)
  local buf = api.nvim_get_current_buf()
  if api.nvim_buf_get_name(buf) == '' or vim.bo[buf].buftype ~= '' then
    return nil
  end
  local function line_text(row)
    return api.nvim_buf_get_lines(buf, row - 1, row, false)[1] or ''
  end
  local first, last = api.nvim_buf_get_mark(buf, '<'), api.nvim_buf_get_mark(buf, '>')
  if vim.fn.visualmode() == 'v' and first[1] == line1 and last[1] == line2 then
    local text = line_text(line2)
    local col = math.min(last[2], #text)
    local char = text:sub(col + 1):match('^[%z\1-\127\194-\244][\128-\191]*') or ''
    return { buf = buf, start = { line1, first[2] }, ['end'] = { line2, col + #char } }
  end
  return { buf = buf, start = { line1, 0 }, ['end'] = { line2, #line_text(line2) } }
end

--- `context` for agent/ask: the selection's positions in the client's encoding.
function M.param(sel, client)
  if not (sel and api.nvim_buf_is_valid(sel.buf)) then
    return nil
  end
  local encoding = client.offset_encoding or 'utf-16'
  local function position(pos)
    local text = api.nvim_buf_get_lines(sel.buf, pos[1] - 1, pos[1], false)[1] or ''
    return { line = pos[1] - 1, character = units(text:sub(1, pos[2]), encoding) }
  end
  return {
    activeDocument = {
      uri = vim.uri_from_bufnr(sel.buf),
      selection = { start = position(sel.start), ['end'] = position(sel['end']) },
    },
  }
end

--- The note under the prompt in the conversation: `_(selection: src/app.py, lines 3-9)_`.
function M.note(sel)
  local name = vim.fn.fnamemodify(api.nvim_buf_get_name(sel.buf), ':~:.')
  local span = sel.start[1] == sel['end'][1] and ('line ' .. sel.start[1])
    or string.format('lines %d-%d', sel.start[1], sel['end'][1])
  return string.format('_(selection: %s, %s)_', name, span)
end

return M
