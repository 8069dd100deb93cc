-- The client's scratch buffers (read-only to the user, rewritten by the client) and the
-- windows that show them.
local client = require('agent_lsp.client')

local M = {}

local api = vim.api

-- The buffers by name, and what each one shows.
M.CONVERSATION = 'agent-lsp://conversation' -- the asks (agent/ask) and their streamed answers
M.TRACE = 'agent-lsp://trace' -- a line per agent/toolActivity and agent/compaction
M.TOOLS = 'agent-lsp://tools' -- agent/listTools
M.CHECKPOINTS = 'agent-lsp://checkpoints' -- agent/checkpoints
M.DIFF = 'agent-lsp://diff' -- agent/diff
M.CHECK = 'agent-lsp://check' -- agent/checkConnection
M.SANDBOX = 'agent-lsp://sandbox' -- agent/sandboxStatus

local buffers = {} -- scratch buffer name -> bufnr

--- The buffer made for `name`, if any (it may have been wiped since).
function M.get(name)
  return buffers[name]
end

--- Whether `bufnr` is one of the scratch buffers.
function M.is_ours(bufnr)
  for _, buf in pairs(buffers) do
    if buf == bufnr then
      return true
    end
  end
  return false
end

--- The scratch buffer `name`, made (with `filetype`) if it is not there. `vars`: buffer
--- variables set before the filetype, and global ones set only while it is (what its syntax
--- reads: Neovim 0.7's markdown syntax reads only g:markdown_fenced_languages).
function M.scratch(name, filetype, vars)
  local buf = buffers[name]
  if buf and api.nvim_buf_is_valid(buf) then
    return buf
  end
  buf = api.nvim_create_buf(false, true)
  api.nvim_buf_set_name(buf, name)
  vim.bo[buf].buftype = 'nofile'
  vim.bo[buf].bufhidden = 'hide'
  vim.bo[buf].swapfile = false
  local saved = {}
  for key, value in pairs(vars or {}) do
    vim.b[buf][key] = value
    saved[key] = vim.g[key] or vim.NIL
    vim.g[key] = value
  end
  vim.bo[buf].filetype = filetype
  for key, value in pairs(saved) do
    vim.g[key] = value ~= vim.NIL and value or nil
  end
  vim.bo[buf].modifiable = false
  buffers[name] = buf
  vim.keymap.set('n', 'q', function()
    M.close(buf)
  end, { buffer = buf, nowait = true, desc = 'agent-lsp: close this window' })
  return buf
end

--- Close the current window, which shows `buf` (`q`); the last window of the tab page
--- shows another buffer instead (the alternate one, else a new empty one).
function M.close(buf)
  local win = api.nvim_get_current_win()
  local normal = vim.tbl_filter(function(w)
    return api.nvim_win_get_config(w).relative == ''
  end, api.nvim_tabpage_list_wins(0))
  if api.nvim_win_get_config(win).relative ~= '' or #normal > 1 then
    api.nvim_win_close(win, false)
    return
  end
  local alternate = vim.fn.bufnr('#')
  if alternate > 0 and alternate ~= buf and vim.fn.buflisted(alternate) == 1 then
    api.nvim_win_set_buf(win, alternate)
  else
    vim.cmd('enew')
  end
end

local function windows_of(buf)
  local found = {}
  for _, win in ipairs(api.nvim_list_wins()) do
    if api.nvim_win_get_buf(win) == buf then
      table.insert(found, win)
    end
  end
  return found
end

-- The windows showing `buf` whose cursor is on its last line: they follow what is added.
-- A cursor the user moved elsewhere (`gg` while an answer streams) stays where it is.
local function following(buf)
  local last = api.nvim_buf_line_count(buf)
  local found = {}
  for _, win in ipairs(windows_of(buf)) do
    if api.nvim_win_get_cursor(win)[1] >= last then
      table.insert(found, win)
    end
  end
  return found
end

--- Replace lines [first, last) (0-based, -1 = end); an empty buffer is replaced whole.
--- Windows whose cursor was on the last line move to the new last line.
function M.set_lines(buf, first, last, lines)
  local follow = following(buf)
  vim.bo[buf].modifiable = true
  if api.nvim_buf_line_count(buf) == 1 and api.nvim_buf_get_lines(buf, 0, 1, false)[1] == '' then
    first, last = 0, -1
  end
  api.nvim_buf_set_lines(buf, first, last, false, lines)
  vim.bo[buf].modifiable = false
  local count = api.nvim_buf_line_count(buf)
  for _, win in ipairs(follow) do
    api.nvim_win_set_cursor(win, { count, 0 })
  end
end

function M.append(buf, lines)
  M.set_lines(buf, -1, -1, lines)
end

--- The lines of `text` (CRLF or LF).
function M.text_lines(text)
  local lines = vim.split((tostring(text or '')):gsub('\r\n', '\n'), '\n', { plain = true })
  return lines
end

-- The window every view shares (the conversation, the trace, the lists): a view replaces the
-- buffer shown in it rather than opening one more split.
local sidebar

local SPLITS = { right = 'botright vsplit', left = 'topleft vsplit', bottom = 'botright split', top = 'topleft split' }

-- A size: columns/lines when >= 1, else that fraction of `total`.
local function size(value, total, default)
  value = tonumber(value) or default
  if value < 1 then
    value = math.floor(total * value)
  end
  return math.max(1, math.min(math.floor(value), total - 2))
end

-- Open the sidebar for `buf` as the `window` option says (`open_cmd`, when set, instead).
local function open_window(buf)
  local opts = client.config.window or {}
  local position = opts.position or 'right'
  if client.config.open_cmd then
    vim.cmd(client.config.open_cmd)
  elseif position == 'float' then
    local width = size(opts.width, vim.o.columns, 0.8)
    local height = size(opts.height, vim.o.lines - vim.o.cmdheight, 0.8)
    return api.nvim_open_win(buf, false, {
      relative = 'editor',
      width = width,
      height = height,
      row = math.floor((vim.o.lines - height) / 2) - 1,
      col = math.floor((vim.o.columns - width) / 2),
      border = 'rounded',
    })
  else
    vim.cmd(SPLITS[position] or SPLITS.right)
  end
  local win = api.nvim_get_current_win()
  api.nvim_win_set_buf(win, buf)
  if client.config.open_cmd then
    return win
  end
  if position == 'top' or position == 'bottom' then
    api.nvim_win_set_height(win, size(opts.height, vim.o.lines - vim.o.cmdheight, 0.35))
    vim.wo[win].winfixheight = true
  else
    api.nvim_win_set_width(win, size(opts.width, vim.o.columns, 0.4))
    vim.wo[win].winfixwidth = true
  end
  return win
end

--- The sidebar window, if it is open in the current tab page and still shows one of the
--- agent's buffers (a file opened in it since is left alone).
function M.sidebar()
  if not (sidebar and api.nvim_win_is_valid(sidebar)) then
    return nil
  end
  if api.nvim_win_get_tabpage(sidebar) ~= api.nvim_get_current_tabpage() then
    return nil
  end
  return M.is_ours(api.nvim_win_get_buf(sidebar)) and sidebar or nil
end

--- Show a buffer: in a window of the current tab page that shows it already, else in the
--- sidebar (opened as the `window` option says if it is not there); focused or not.
function M.show(buf, focus)
  local win
  for _, w in ipairs(api.nvim_tabpage_list_wins(0)) do
    if api.nvim_win_get_buf(w) == buf then
      win = w
      break
    end
  end
  local previous = api.nvim_get_current_win()
  if not win then
    win = M.sidebar()
    if win then
      api.nvim_win_set_buf(win, buf)
    else
      win = open_window(buf)
      sidebar = win
    end
    vim.wo[win].wrap = true
    vim.wo[win].linebreak = true
  end
  api.nvim_win_set_cursor(win, { api.nvim_buf_line_count(buf), 0 })
  api.nvim_set_current_win(focus and win or previous)
end

--- Fill the scratch buffer `name` with `lines` and show it, focused.
function M.view(name, filetype, lines)
  local buf = M.scratch(name, filetype)
  M.set_lines(buf, 0, -1, lines)
  M.show(buf, true)
  api.nvim_win_set_cursor(0, { 1, 0 }) -- a list is read from its top
end

return M
