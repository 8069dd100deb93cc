-- What the model is told of the project (agent/instructions) in the scratch buffer
-- agent-lsp://instructions: the instruction files in force (AGENTS.md and its kin, the
-- subfolders' given to the conversation so far), the skills, and the warnings. Enter on a
-- line opens its file.
--
-- The names, descriptions and warnings are the project's text (a repository writes its
-- skills), so all of it is escaped. The lines are those of the Emacs client
-- (agent-lsp-instructions.el); tests/support/editor_scenarios/project.py holds both to them.
local buffers = require('agent_lsp.buffers')
local client = require('agent_lsp.client')
local format = require('agent_lsp.format')
local transcript = require('agent_lsp.transcript')
local methods = require('agent_lsp.protocol_generated').methods

local M = {}

M.BUFFER = 'agent-lsp://instructions'

local call, report = client.call, client.report
local escape = format.escape_control
local api = vim.api

-- What the buffer shows: its folder, and the file of each line that names one.
local shown = { root = nil, targets = {} }

local function str(value)
  return type(value) == 'string' and value or ''
end

local function list(value)
  return type(value) == 'table' and value or {}
end

-- `path` relative to `root` when under it.
local function relative(path, root)
  local prefix = root:gsub('/+$', '') .. '/'
  return path:sub(1, #prefix) == prefix and path:sub(#prefix + 1) or path
end

--- The lines of an agent/instructions `result` of folder `root`, and the file each line
--- names: { [line (1-based)] = path }.
function M.lines(result, root)
  result = type(result) == 'table' and result or {}
  local lines, targets = {}, {}
  local files, skills, warnings = list(result.instructions), list(result.skills), list(result.warnings)
  if #files == 0 then
    table.insert(lines, "Instruction files: none (an AGENTS.md at the folder's root,"
      .. ' or a file the instructionFiles setting names)')
  else
    table.insert(lines, 'Instruction files, in the order the model reads them:')
    for _, file in ipairs(files) do
      local notes = { escape(str(file.source)), format.thousands(tonumber(file.bytes) or 0) .. ' bytes' }
      if file.cut == true then
        table.insert(notes, 'cut')
      end
      table.insert(lines, string.format('- %s (%s)', escape(str(file.name)), table.concat(notes, ', ')))
      targets[#lines] = str(file.path)
    end
  end
  table.insert(lines, '')
  if #skills == 0 then
    table.insert(lines, 'Skills: none (a folder with a SKILL.md in .agents/skills/ or .claude/skills/)')
  else
    table.insert(lines, 'Skills, each read by the model when it applies:')
    for _, skill in ipairs(skills) do
      local path = str(skill.path)
      table.insert(lines, string.format(
        '- %s: %s (%s)',
        escape(str(skill.name)),
        escape(str(skill.description)),
        escape(relative(path, root))
      ))
      targets[#lines] = path
    end
  end
  if #warnings > 0 then
    vim.list_extend(lines, { '', 'Warnings:' })
    for _, warning in ipairs(warnings) do
      table.insert(lines, '- ' .. escape(str(warning)))
    end
  end
  return lines, targets
end

local function render(root, result)
  local head = { '# agent-lsp instructions: ' .. root, '' }
  local lines, targets = M.lines(result, root)
  shown.root, shown.targets = root, {}
  for line, path in pairs(targets) do
    shown.targets[line + #head] = path
  end
  -- The first file's line, after the heading and the list's title (vim.list_extend grows
  -- `head` itself: its length is read before).
  local first = #head + 2
  lines = vim.list_extend(head, lines)
  vim.list_extend(lines, { '', '_Enter: open the file on this line · r: list again_' })
  buffers.view(M.BUFFER, 'markdown', lines)
  local win = vim.fn.bufwinid(buffers.get(M.BUFFER))
  if win ~= -1 then
    api.nvim_win_set_cursor(win, { math.min(first, #lines), 0 })
  end
end

local function show(root)
  local conv = transcript.conv
  local params = { workspaceFolder = vim.uri_from_fname(root) }
  if conv.root == root and conv.session_id then
    params = { sessionId = conv.session_id } -- and the subfolders' files it was given
  end
  client.with_client(root, function(c)
    call(c, 'request', methods.instructions, params, function(err, result)
      if err then
        return report(methods.instructions, err)
      end
      render(root, result)
    end)
  end)
end

--- Open the file the cursor's line names (Enter), in the window used before this one.
function M.open_at_cursor()
  local path = shown.targets[api.nvim_win_get_cursor(0)[1]]
  if not path or path == '' then
    return client.notify('no file on this line', vim.log.levels.WARN)
  end
  local previous = vim.fn.win_getid(vim.fn.winnr('#'))
  if previous ~= 0 and previous ~= api.nvim_get_current_win() then
    api.nvim_set_current_win(previous)
  end
  vim.cmd('edit ' .. vim.fn.fnameescape(path))
end

--- :AgentInstructions: the current conversation's (else the project's) instructions and skills.
function M.instructions()
  local root = transcript.root_for(0)
  if api.nvim_get_current_buf() == buffers.get(M.BUFFER) and shown.root then
    root = shown.root
  end
  local buf = buffers.scratch(M.BUFFER, 'markdown')
  vim.keymap.set('n', '<CR>', M.open_at_cursor, { buffer = buf, desc = 'agent-lsp: open this file' })
  vim.keymap.set('n', 'r', function()
    if shown.root then
      show(shown.root)
    end
  end, { buffer = buf, desc = 'agent-lsp: list the instructions again' })
  show(root)
end

return M
