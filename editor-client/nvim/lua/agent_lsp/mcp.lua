-- The folder's MCP servers (agent/mcpServers) in the scratch buffer agent-lsp://mcp, and
-- approving a folder's own server there (agent/approveMcpServer; the server then asks
-- through agent/requestPermission, which permissions.lua answers).
--
-- Every field shown is the server's or a definition's text (a repository's .vscode/mcp.json
-- names the command, an MCP server's stderr is the error), so all of it is escaped.
-- The lines are those of the Emacs client (agent-lsp-mcp.el); the scenario
-- tests/support/editor_scenarios/mcp.py holds both to them.
local buffers = require('agent_lsp.buffers')
local client = require('agent_lsp.client')
local escape = require('agent_lsp.format').escape_control
local transcript = require('agent_lsp.transcript')
local methods = require('agent_lsp.protocol_generated').methods

local M = {}

M.BUFFER = 'agent-lsp://mcp'
-- While a server is starting the view lists them again, so its `ready` (or `failed`) shows
-- without a key press; a bound, so a server stuck starting does not poll for ever.
M.REFRESH_MS = 1000
M.REFRESHES = 60

local call, notify, report = client.call, client.notify, client.report
local api = vim.api

-- What the buffer shows: its folder, where each server's lines begin, and a generation
-- that a newer listing bumps so that an older listing's timer stops.
local shown = { root = nil, starts = {}, generation = 0 }

-- A JSON string field, else '' (an absent field, or null: vim.NIL).
local function str(value)
  return type(value) == 'string' and value or ''
end

--- The lines of one server of agent/mcpServers: its name, state and where it comes from,
--- then its command or URL, its tools, its error (every line) and its warnings, escaped.
function M.server_lines(server)
  local about = { escape(str(server.origin)) }
  if str(server.transport) ~= '' then
    table.insert(about, escape(server.transport))
  end
  if server.trusted == true then
    table.insert(about, 'trusted')
  end
  local state = str(server.state)
  local lines = {
    string.format('%s: %s (%s)', escape(str(server.name)), escape(state), table.concat(about, ', ')),
  }
  if str(server.target) ~= '' then
    local label = ({ stdio = 'command', http = 'url' })[server.transport] or 'target'
    table.insert(lines, '    ' .. label .. ': ' .. escape(server.target))
  end
  if state == 'awaiting-approval' then
    table.insert(lines, '    not started: a approves it (agent-lsp asks you first)')
  elseif state == 'rejected' then
    table.insert(lines, "    not started: you rejected it (don't ask again); a approves it after all")
  elseif state == 'stopped' then
    table.insert(lines, '    stopped by the user: an ask does not start it until the agent-lsp server restarts')
  end
  local tools = type(server.tools) == 'table' and server.tools or {}
  if #tools > 0 then
    table.insert(lines, '    tools: ' .. escape(table.concat(vim.tbl_map(str, tools), ', ')))
  end
  local error_text = str(server.error):gsub('\r\n', '\n'):gsub('%s+$', '')
  if error_text ~= '' then
    for i, line in ipairs(vim.split(error_text, '\n', { plain = true })) do
      table.insert(lines, (i == 1 and '    error: ' or '      ') .. escape(line))
    end
  end
  for _, warning in ipairs(type(server.warnings) == 'table' and server.warnings or {}) do
    table.insert(lines, '    warning: ' .. escape(str(warning)))
  end
  return lines
end

-- The folder's own servers said to wait for approval, once each as defined (root, name and
-- target): a new or changed definition is said again.
local announced = {}

--- The conversation's note for each server of `servers` (agent/mcpServers) that waits for
--- approval and was not said yet for `root` as it is defined now: a folder's own server
--- that is new, or changed since it was approved, is otherwise left out of asks silently.
function M.awaiting_notes(root, servers, hint)
  local lines = {}
  for _, server in ipairs(type(servers) == 'table' and servers or {}) do
    local key = table.concat({ root, str(server.name), str(server.target) }, '\0')
    if str(server.state) == 'awaiting-approval' and not announced[key] then
      announced[key] = true
      table.insert(lines, string.format(
        "_MCP server %s of this folder is new or changed and waits for your approval (%s): its tools are not in this ask; %s_",
        escape(str(server.name)), escape(str(server.target)), hint))
      table.insert(lines, '')
    end
  end
  return lines
end

--- The view's lines of an agent/mcpServers result's `servers`, a blank line between two
--- servers, and where each server begins: { { line = N (1-based), name =, state = } }.
function M.lines(servers)
  servers = type(servers) == 'table' and servers or {}
  if #servers == 0 then
    return {
      'No MCP servers for this folder. Define them in the user file'
        .. ' (~/.config/agent-lsp/config.toml, [mcp_servers.NAME]), the mcpServers setting,'
        .. " or the folder's .vscode/mcp.json or .mcp.json.",
    },
      {}
  end
  local lines, starts = {}, {}
  for i, server in ipairs(servers) do
    if i > 1 then
      table.insert(lines, '')
    end
    table.insert(starts, { line = #lines + 1, name = str(server.name), state = str(server.state) })
    vim.list_extend(lines, M.server_lines(server))
  end
  return lines, starts
end

-- The windows showing `buf` and their cursors, to put back after the lines are replaced
-- (set_lines scrolls to the end, which a refresh must not do under the user's cursor).
local function cursors(buf)
  local saved = {}
  for _, win in ipairs(api.nvim_list_wins()) do
    if api.nvim_win_get_buf(win) == buf then
      saved[win] = api.nvim_win_get_cursor(win)
    end
  end
  return saved
end

local function render(root, servers, first)
  local head = { '# agent-lsp MCP servers: ' .. root, '' }
  local lines, starts = M.lines(servers)
  for _, start in ipairs(starts) do
    start.line = start.line + #head
  end
  lines = vim.list_extend(head, lines)
  vim.list_extend(lines, { '', '_a: approve the server under the cursor · r: list again_' })
  shown.root, shown.starts = root, starts
  if first then
    buffers.view(M.BUFFER, 'markdown', lines)
    api.nvim_win_set_cursor(0, { starts[1] and starts[1].line or 1, 0 })
    return
  end
  local buf = buffers.scratch(M.BUFFER, 'markdown')
  local saved = cursors(buf)
  buffers.set_lines(buf, 0, -1, lines)
  for win, cursor in pairs(saved) do
    pcall(api.nvim_win_set_cursor, win, { math.min(cursor[1], #lines), cursor[2] })
  end
end

local function starting(servers)
  for _, server in ipairs(servers or {}) do
    if server.state == 'starting' then
      return true
    end
  end
  return false
end

-- List the servers of `root` and show them; again every REFRESH_MS while one is starting
-- (`tries` counts those refreshes), unless a newer listing began or the buffer is gone.
local function list(root, first, tries)
  shown.generation = shown.generation + 1
  local generation = shown.generation
  client.with_client(root, function(c)
    call(c, 'request', methods.mcp_servers, vim.empty_dict(), function(err, result)
      if err then
        return report(methods.mcp_servers, err)
      end
      if generation ~= shown.generation then
        return -- a newer listing is under way
      end
      local servers = result.servers or {}
      render(root, servers, first)
      if starting(servers) and tries < M.REFRESHES then
        vim.defer_fn(function()
          local buf = buffers.get(M.BUFFER)
          if generation == shown.generation and buf and api.nvim_buf_is_valid(buf) then
            list(root, false, tries + 1)
          end
        end, M.REFRESH_MS)
      end
    end)
  end)
end

-- The folder of the current buffer: the one shown in the view, else the project's.
local function current_root()
  if shown.root and api.nvim_get_current_buf() == buffers.get(M.BUFFER) then
    return shown.root
  end
  return transcript.root_for(0)
end

--- List the servers shown again (the `r` key).
function M.refresh()
  if shown.root then
    list(shown.root, false, 0)
  end
end

--- Ask the server to start the folder's own server `name` (the user is asked first).
function M.approve(name, root)
  root = root or current_root()
  client.with_client(root, function(c)
    call(c, 'request', methods.approve_mcp_server, { name = name }, function(err, result)
      if err then
        return report(methods.approve_mcp_server, err)
      end
      if result.approved then
        notify('approved MCP server ' .. escape(name) .. ': ' .. escape(str(result.state)))
      else
        notify('MCP server ' .. escape(name) .. ' not approved: ' .. escape(str(result.state)))
      end
      if shown.root == root then
        list(root, false, 0)
      end
    end)
  end)
end

--- The server whose lines hold the cursor (`a`): approve it if it awaits approval (or was
--- rejected for good: the user may still approve it).
function M.approve_at_cursor()
  local row = api.nvim_win_get_cursor(0)[1]
  local at
  for _, start in ipairs(shown.starts) do
    if start.line <= row then
      at = start
    end
  end
  if not at then
    return notify('no MCP server under the cursor', vim.log.levels.WARN)
  end
  if at.state ~= 'awaiting-approval' and at.state ~= 'rejected' then
    return notify(escape(at.name) .. ' is ' .. escape(at.state) .. ': only a server awaiting approval (or rejected) is approved here')
  end
  M.approve(at.name, shown.root)
end

--- :AgentMcp [approve NAME]: show the current project's servers, or approve one.
function M.mcp(args)
  local words = vim.split(vim.trim(args or ''), '%s+')
  if words[1] == 'approve' and words[2] then
    return M.approve(words[2], current_root())
  end
  if words[1] ~= '' then
    return notify('usage: :AgentMcp, or :AgentMcp approve NAME', vim.log.levels.ERROR)
  end
  local buf = buffers.scratch(M.BUFFER, 'markdown')
  vim.keymap.set('n', 'a', M.approve_at_cursor, { buffer = buf, desc = 'agent-lsp: approve this MCP server' })
  vim.keymap.set('n', 'r', M.refresh, { buffer = buf, desc = 'agent-lsp: list the MCP servers again' })
  list(current_root(), true, 0)
end

return M
