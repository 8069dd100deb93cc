-- The chat (:AgentChat): the conversation in the agent's window with an editable prompt
-- buffer, `agent-lsp://prompt`, in a window below it. The prompt may be many lines; <C-s>
-- (insert or normal mode) or <CR> (normal mode) sends it as :AgentAsk would (a /command
-- too) and empties it. It is a buffer of its own, not the end of the conversation buffer:
-- the client rewrites the conversation as answers stream, and never touches what is typed.
local ask = require('agent_lsp.ask')
local buffers = require('agent_lsp.buffers')
local client = require('agent_lsp.client')
local transcript = require('agent_lsp.transcript')

local M = {}

local api = vim.api

M.BUFFER = 'agent-lsp://prompt'
M.HEIGHT = 6 -- lines of the prompt window

--- Send the prompt buffer's text and empty it (kept while an ask runs: it cannot be sent yet).
function M.send()
  local buf = buffers.get(M.BUFFER)
  if not (buf and api.nvim_buf_is_valid(buf)) then
    return
  end
  local prompt = vim.trim(table.concat(api.nvim_buf_get_lines(buf, 0, -1, false), '\n'))
  if prompt == '' then
    return client.notify('the prompt is empty', vim.log.levels.WARN)
  end
  if transcript.conv.request then
    return client.notify('an ask is running (:AgentCancel stops it); the prompt is kept', vim.log.levels.WARN)
  end
  api.nvim_buf_set_lines(buf, 0, -1, false, {})
  vim.bo[buf].modified = false
  ask.ask(prompt)
end

local function prompt_buf()
  local existing = buffers.get(M.BUFFER)
  local buf = buffers.scratch(M.BUFFER, 'markdown')
  vim.bo[buf].modifiable = true
  if buf ~= existing then
    vim.keymap.set({ 'n', 'i' }, '<C-s>', M.send, { buffer = buf, desc = 'agent-lsp: send the prompt' })
    vim.keymap.set('n', '<CR>', M.send, { buffer = buf, desc = 'agent-lsp: send the prompt' })
  end
  return buf
end

--- :AgentChat: show the conversation and the prompt below it, the cursor in the prompt.
function M.open()
  local conversation = transcript.conversation_buf()
  buffers.show(conversation, false)
  local buf = prompt_buf()
  local win = vim.fn.bufwinid(buf)
  if win == -1 then
    local above = vim.fn.bufwinid(conversation)
    local floating = above ~= -1 and api.nvim_win_get_config(above).relative ~= ''
    if above ~= -1 and not floating then
      api.nvim_set_current_win(above)
      vim.cmd('belowright ' .. M.HEIGHT .. 'split')
    else
      vim.cmd('botright ' .. M.HEIGHT .. 'split')
    end
    win = api.nvim_get_current_win()
    api.nvim_win_set_buf(win, buf)
    vim.wo[win].winfixheight = true
    vim.wo[win].wrap = true
  end
  api.nvim_set_current_win(win)
end

return M
