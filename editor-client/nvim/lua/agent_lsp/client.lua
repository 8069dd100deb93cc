-- The agent-lsp server per project root: the configuration, finding a buffer's project root,
-- starting the server with the built-in LSP client, attaching the project's buffers, running
-- requests once it is initialized, and forwarding new settings to running servers.
local permissions = require('agent_lsp.permissions')
local language = require('agent_lsp.language')
local methods = require('agent_lsp.protocol_generated').methods

local M = {}

local defaults = {
  -- Server command line (argv). Any `agent-lsp` launcher works, e.g.
  -- { 'uv', 'run', '--directory', '/path/to/agent-lsp', 'agent-lsp', '--stdio' }.
  cmd = { 'agent-lsp', '--stdio' },
  -- Extra environment for the server process (nil: inherit Neovim's).
  cmd_env = nil,
  -- The `agentLsp` settings section (model, baseUrl, maxTurns, enabledTools, confirmEdits, ...),
  -- sent as initializationOptions and answered to workspace/configuration.
  -- Never the API key: the server reads it from the user configuration file
  -- (~/.config/agent-lsp/config.toml, `agent-lsp config set-key`) or its environment.
  settings = {},
  -- A project root is the nearest folder upwards holding one of these, else the
  -- current directory; `root_dir = function(bufnr) return path end` overrides it.
  root_markers = { '.git', '.hg', '.svn' },
  root_dir = nil,
  -- The one window the conversation, the trace and the lists share (each view replaces the
  -- buffer shown in it): position 'right', 'left', 'bottom', 'top' or 'float'; width and
  -- height in columns/lines, or below 1 a fraction of the editor's.
  window = { position = 'right', width = 0.4, height = 0.35 },
  -- An Ex command that opens that window instead (e.g. 'botright vsplit'); nil: `window`.
  open_cmd = nil,
}

-- Changed in place only (configure below), never replaced: `require('agent_lsp').config` is
-- this same table.
M.config = vim.deepcopy(defaults)

local api = vim.api
local uv = vim.uv or vim.loop

-- Client methods are called `client:request()` from 0.11 on (the dot form warns there).
local COLON_METHODS = vim.fn.has('nvim-0.11') == 1

function M.call(client, method, ...)
  if COLON_METHODS then
    return client[method](client, ...)
  end
  return client[method](...)
end

local call = M.call

--- A note in the message area: one line that fits it (the first line, cut with "…"), so it
--- never stops Neovim with "Press ENTER"; whole texts go to a buffer (the conversation, the
--- check) instead.
function M.notify(message, level)
  local text = 'agent-lsp: ' .. tostring(message)
  local line = text:match('^[^\n]*')
  local room = math.max((tonumber(vim.v.echospace) or 80) - 1, 30)
  if line ~= text or vim.fn.strdisplaywidth(line) > room then
    line = vim.fn.strcharpart(line, 0, room - 1)
    while vim.fn.strdisplaywidth(line) > room - 1 do
      line = vim.fn.strcharpart(line, 0, vim.fn.strchars(line) - 1)
    end
    line = line .. '…'
  end
  vim.notify(line, level or vim.log.levels.INFO)
end

local notify = M.notify

--- Say that request `method` failed with `err`.
function M.report(method, err)
  notify(method .. ' failed: ' .. require('agent_lsp.format').error_text(err), vim.log.levels.ERROR)
end

-- State ---------------------------------------------------------------------

local clients = {} -- root -> client id
local on_ready = {} -- client id -> callbacks waiting for `initialized`

-- What the conversation shows of the server's notifications, and what it does when a server
-- exits: given by init.lua (set_handlers), because the modules that show them need this one.
local shown = { handlers = {}, on_exit = function() end }

--- `handlers` (method -> LSP handler) for every server started from now on, and
--- `on_exit(root, code, signal)` called after a server for `root` exited (`signal` 0: it
--- exited by itself with `code`).
function M.set_handlers(handlers, on_exit)
  shown.handlers, shown.on_exit = handlers, on_exit
end

-- Paths ---------------------------------------------------------------------

function M.normalize(path)
  local full = vim.fn.fnamemodify(path, ':p'):gsub('/+$', '')
  return full == '' and '/' or full
end

local normalize = M.normalize

local function is_under(path, root)
  return root == '/' or path == root or path:sub(1, #root + 1) == root .. '/'
end

--- The project root of `bufnr` by the configuration: `root_dir`, else the nearest folder
--- upwards holding a root marker, else the current directory. (The conversation's own
--- buffers act in its root: transcript.root_for.)
function M.project_root(bufnr)
  if M.config.root_dir then
    local dir = M.config.root_dir(bufnr)
    if dir then
      return normalize(dir)
    end
  end
  local cwd = normalize(vim.fn.getcwd())
  local name = api.nvim_buf_get_name(bufnr)
  local start = cwd
  if name ~= '' and vim.bo[bufnr].buftype == '' then
    start = normalize(vim.fn.fnamemodify(name, ':p:h'))
  end
  local dir = start
  while true do
    for _, marker in ipairs(M.config.root_markers or {}) do
      if uv.fs_stat(dir .. '/' .. marker) then
        return dir
      end
    end
    local parent = vim.fn.fnamemodify(dir, ':h')
    if parent == dir then
      break
    end
    dir = parent
  end
  return is_under(start, cwd) and cwd or start
end

-- Clients ---------------------------------------------------------------------

--- The client `id`, unless it is absent or stopped.
function M.by_id(id)
  local client = id and vim.lsp.get_client_by_id(id)
  if client and call(client, 'is_stopped') then
    return nil
  end
  return client
end

local client_by_id = M.by_id

--- The id of the client started for `root`, running or not (nil: none started).
function M.id_of(root)
  return clients[root]
end

--- Attach `bufnr` to the server of every root it is under (a loaded file buffer only, one
--- shown or opened by the user).
function M.maybe_attach(bufnr)
  if not api.nvim_buf_is_loaded(bufnr) or vim.bo[bufnr].buftype ~= '' then
    return
  end
  -- Loaded unseen for the editor's language servers (language.lua): not open for the agent,
  -- whose edits then go to the file, not to a buffer nobody sees (BufWinEnter attaches it).
  if language.unseen[bufnr] then
    return
  end
  local name = api.nvim_buf_get_name(bufnr)
  if name == '' then
    return
  end
  local path = normalize(name)
  for root, id in pairs(clients) do
    if is_under(path, root) and client_by_id(id) then
      vim.lsp.buf_attach_client(bufnr, id)
    end
  end
end

local function section()
  local settings = M.config.settings or {}
  return next(settings) and settings or vim.empty_dict()
end

local function on_exit(root, client_id, code, signal)
  if clients[root] == client_id then
    clients[root] = nil
  end
  on_ready[client_id] = nil
  shown.on_exit(root, code, signal)
end

vim.api.nvim_create_autocmd('VimLeavePre', {
  callback = function()
    M.leaving = true
  end,
})

--- Why the server cannot start, in a line, or nil: its command is not installed.
function M.start_problem()
  local cmd = M.config.cmd or {}
  if type(cmd) == 'table' and type(cmd[1]) == 'string' and vim.fn.executable(cmd[1]) == 1 then
    return nil
  end
  local name = type(cmd) == 'table' and tostring(cmd[1]) or tostring(cmd)
  return string.format(
    "`%s` is not installed (not on PATH). Install the server with `uv tool install /path/to/agent-lsp`, or point the `cmd` option at it: require('agent_lsp').setup({ cmd = { 'uv', 'run', '--directory', '/path/to/agent-lsp', 'agent-lsp', '--stdio' } }) (:help agent-lsp-setup).",
    name
  )
end

local function start_client(root)
  local problem = M.start_problem()
  if problem then
    M.start_error = problem
    notify('install agent-lsp or set `cmd` (:help agent-lsp-setup)', vim.log.levels.ERROR)
    return nil
  end
  local handlers = vim.tbl_extend('force', shown.handlers, language.handlers(), {
    [methods.request_permission] = permissions.handler,
    ['$/cancelRequest'] = permissions.on_cancel,
  })
  local config = {
    name = 'agent-lsp',
    cmd = M.config.cmd,
    cmd_env = M.config.cmd_env,
    root_dir = root,
    workspace_folders = { { uri = vim.uri_from_fname(root), name = root } },
    init_options = section(),
    settings = { agentLsp = section() },
    capabilities = vim.tbl_deep_extend(
      'force',
      vim.lsp.protocol.make_client_capabilities(),
      permissions.CAPABILITY,
      language.CAPABILITY
    ),
    handlers = handlers,
    on_init = function(client)
      local id = client.id
      -- Requests sent before `initialized` are lost, so asks wait for this; run
      -- them once the client is registered as active.
      vim.schedule(function()
        local waiting = on_ready[id] or {}
        on_ready[id] = nil
        local ready = client_by_id(id)
        for _, callback in ipairs(waiting) do
          if ready then
            callback(ready)
          end
        end
      end)
    end,
    on_exit = function(code, signal, client_id)
      vim.schedule(function()
        -- Neovim is quitting (it stops its LSP clients): nothing to tell, and its buffers
        -- can no longer be written ("Failed to insert line" in a scheduled callback).
        if M.leaving or vim.v.exiting ~= vim.NIL then
          return
        end
        on_exit(root, client_id, code, signal)
      end)
    end,
  }
  local ok, id
  if vim.fn.has('nvim-0.11') == 1 then
    -- start_client() is deprecated from 0.11; start() without attaching is the same.
    ok, id = pcall(vim.lsp.start, config, {
      attach = false,
      reuse_client = function()
        return false
      end,
    })
  else
    ok, id = pcall(vim.lsp.start_client, config)
  end
  if not ok or not id then
    M.start_error = 'could not start ' .. table.concat(M.config.cmd, ' ') .. (ok and ' (see :LspLog)' or ': ' .. tostring(id))
    notify(M.start_error, vim.log.levels.ERROR)
    return nil
  end
  clients[root] = id
  for _, buf in ipairs(api.nvim_list_bufs()) do
    M.maybe_attach(buf)
  end
  return id
end

--- Run `callback(client)` once the server for `root` is initialized (starting it if needed).
function M.with_client(root, callback)
  local id = clients[root]
  local client = client_by_id(id)
  if not client then
    id = start_client(root)
    if not id then
      return false
    end
    client = client_by_id(id)
  end
  if client and client.initialized and not on_ready[id] then
    callback(client)
  else
    on_ready[id] = on_ready[id] or {}
    table.insert(on_ready[id], callback)
  end
  return true
end

--- Set keys of `defaults` above; new settings reach running servers.
function M.configure(opts)
  for key, value in pairs(opts or {}) do
    M.config[key] = value
  end
  if opts and opts.settings then
    for _, id in pairs(clients) do
      local client = client_by_id(id)
      if client then
        -- Where workspace/configuration answers come from: config (0.7) or the client (0.9+).
        client.config.settings = { agentLsp = section() }
        client.settings = client.config.settings
        call(client, 'notify', 'workspace/didChangeConfiguration', { settings = { agentLsp = section() } })
      end
    end
  end
end

return M
