-- The editor's own language servers answer for the agent (issue 38). The client advertises
-- `experimental.agent.languageFeatures` at initialize; the server then asks, instead of
-- starting language servers itself:
--
--   agent/languageDiagnostics {uris, waitMs} -> {files = {{uri, diagnostics, answered}}}
--     the problems Neovim knows for each file (vim.diagnostic, every namespace but
--     agent-lsp's own), as LSP diagnostics in the agent-lsp client's position encoding.
--     A file not loaded is loaded (bufadd + bufload, never shown) so its language servers
--     attach and analyse it. With waitMs > 0 it waits, up to waitMs, until the diagnostics
--     of each buffer changed (DiagnosticChanged) for its current text; `answered` is false
--     for a file whose diagnostics did not, or that no language server of Neovim handles
--     (said at once: nothing to wait for).
--   agent/languageRequest {method, params} -> {result}
--     the request (definition, references, documentSymbol, workspace/symbol, hover, rename)
--     run with request_sync on the buffer's language servers other than agent-lsp itself:
--     the first non-null result, else null ("no language server of the editor answered").
--
-- Positions: the agent-lsp client and the language servers both use their negotiated
-- encoding (UTF-16 unless one negotiated another); a position or range is converted
-- between the two when they differ.
local methods = require('agent_lsp.protocol_generated').methods

local M = {}

M.CAPABILITY = { experimental = { agent = { languageFeatures = true } } }
M.DIAGNOSTICS = methods.language_diagnostics
M.REQUEST = methods.language_request
-- How long a forwarded request waits for a language server (ms); the server's own bound
-- is what the model sees.
M.REQUEST_TIMEOUT_MS = 10000
-- How long a file just loaded waits for its language servers to finish starting (ms).
M.ATTACH_WAIT_MS = 5000

local api = vim.api
-- Neovim 0.11 names the encoding in vim.str_utfindex/str_byteindex (the old form warns);
-- vim.islist replaces vim.tbl_islist from 0.10.
local NEW_INDEX = vim.fn.has('nvim-0.11') == 1
local islist = vim.islist or vim.tbl_islist

-- Buffers loaded here and not shown yet: not open for the agent (client.maybe_attach).
M.unseen = {}
-- Client methods are called `client:request()` from 0.11 on (client.lua's M.call; that
-- module requires this one, hence this copy).
local COLON_METHODS = vim.fn.has('nvim-0.11') == 1
local function call(client, method, ...)
  if COLON_METHODS then
    return client[method](client, ...)
  end
  return client[method](...)
end

-- Buffer -> the changedtick its diagnostics were last set for (DiagnosticChanged).
local fresh_tick = {}
-- Buffer -> how many times its diagnostics changed (a wait looks for a change after it began).
local changes = {}

api.nvim_create_autocmd('DiagnosticChanged', {
  callback = function(args)
    local buf = args.buf
    if buf and api.nvim_buf_is_valid(buf) then
      fresh_tick[buf] = api.nvim_buf_get_var(buf, 'changedtick')
      changes[buf] = (changes[buf] or 0) + 1
    end
  end,
})

local function is_nil(value)
  return value == nil or value == vim.NIL
end

--- The language servers of `bufnr` other than agent-lsp (the client `agent_id`).
local function other_clients(bufnr, agent_id)
  local found = {}
  local list
  if vim.lsp.get_clients then
    list = vim.lsp.get_clients({ bufnr = bufnr })
  else
    list = vim.tbl_values(vim.lsp.buf_get_clients(bufnr))
  end
  for _, client in ipairs(list) do
    if client.id ~= agent_id and client.name ~= 'agent-lsp' then
      table.insert(found, client)
    end
  end
  table.sort(found, function(a, b)
    return a.id < b.id
  end)
  return found
end

--- Every running language server other than agent-lsp.
local function all_other_clients(agent_id)
  local list = vim.lsp.get_clients and vim.lsp.get_clients() or vim.lsp.get_active_clients()
  local found = {}
  for _, client in ipairs(list) do
    if client.id ~= agent_id and client.name ~= 'agent-lsp' then
      table.insert(found, client)
    end
  end
  return found
end

local function encoding_of(client)
  return client and client.offset_encoding or 'utf-16'
end

--- The buffer of `uri`, loaded (its language servers attach as when the user opens it, but
--- it is never shown, and agent-lsp does not take it as open: its writes go to the file).
--- A loaded buffer that is unmodified is read again if the file changed on disk (an
--- agent's write).
local function load(uri)
  local bufnr = vim.uri_to_bufnr(uri)
  if not api.nvim_buf_is_loaded(bufnr) then
    vim.bo[bufnr].buflisted = false
    -- A file the agent may have written: its modelines are not obeyed.
    vim.bo[bufnr].modeline = false
    -- Not open for the agent (client.maybe_attach) until it is shown in a window.
    M.unseen[bufnr] = true
    pcall(vim.fn.bufload, bufnr)
    -- bufload reads the file; the autocommands that detect its type and attach servers
    -- (FileType) run for a buffer read this way too, but only when it has a type.
    if vim.bo[bufnr].filetype == '' then
      pcall(api.nvim_buf_call, bufnr, function()
        vim.cmd('filetype detect')
      end)
    end
  elseif not vim.bo[bufnr].modified then
    pcall(vim.cmd, 'checktime ' .. bufnr)
  end
  return bufnr
end

local function line_text(bufnr, row)
  local line = api.nvim_buf_get_lines(bufnr, row, row + 1, false)[1]
  return line or ''
end

--- Byte column `col` of `line` as a character index in `encoding`.
local function from_byte(line, col, encoding)
  col = math.max(0, math.min(col or 0, #line))
  if encoding == 'utf-8' then
    return col
  end
  if NEW_INDEX then
    local ok, index = pcall(vim.str_utfindex, line, encoding, col, false)
    return ok and index or col
  end
  local ok, utf32, utf16 = pcall(vim.str_utfindex, line, col)
  if not ok then
    return col
  end
  return encoding == 'utf-32' and utf32 or utf16
end

--- Character index `character` (in `encoding`) of `line` as a byte column.
local function to_byte(line, character, encoding)
  if encoding == 'utf-8' then
    return math.min(character, #line)
  end
  local ok, byte
  if NEW_INDEX then
    ok, byte = pcall(vim.str_byteindex, line, encoding, character, false)
  else
    ok, byte = pcall(vim.str_byteindex, line, character, encoding == 'utf-16')
  end
  if not ok then
    return #line
  end
  return byte
end

--- A vim.diagnostic item as an LSP Diagnostic in `encoding`.
local function to_lsp(bufnr, item, encoding)
  local end_lnum = item.end_lnum or item.lnum
  local end_col = item.end_col or item.col
  local lsp = item.user_data and item.user_data.lsp or {}
  local diagnostic = {
    range = {
      start = { line = item.lnum, character = from_byte(line_text(bufnr, item.lnum), item.col, encoding) },
      ['end'] = { line = end_lnum, character = from_byte(line_text(bufnr, end_lnum), end_col, encoding) },
    },
    severity = item.severity,
    message = item.message,
  }
  local code = item.code
  if is_nil(code) then
    code = lsp.code
  end
  if not is_nil(code) then
    diagnostic.code = code
  end
  if not is_nil(item.source) then
    diagnostic.source = item.source
  end
  return diagnostic
end

--- The diagnostics of `bufnr` from every namespace but agent-lsp's own.
local function diagnostics_of(bufnr, agent_id, encoding)
  local own = agent_id and vim.lsp.diagnostic.get_namespace(agent_id)
  local found = {}
  for _, item in ipairs(vim.diagnostic.get(bufnr)) do
    if item.namespace ~= own then
      table.insert(found, to_lsp(bufnr, item, encoding))
    end
  end
  return found
end

local function fresh(bufnr, since)
  return (changes[bufnr] or 0) > since and fresh_tick[bufnr] == api.nvim_buf_get_var(bufnr, 'changedtick')
end

--- agent/languageDiagnostics.
function M.on_diagnostics(_, params, ctx)
  local agent_id = ctx and ctx.client_id
  local encoding = encoding_of(agent_id and vim.lsp.get_client_by_id(agent_id))
  local uris = type(params) == 'table' and type(params.uris) == 'table' and params.uris or {}
  local wait = math.max(0, tonumber(params and params.waitMs) or 0)
  local started = (vim.uv or vim.loop).hrtime()
  local files = {}
  for _, uri in ipairs(uris) do
    local before_tick
    local bufnr = vim.uri_to_bufnr(uri)
    if api.nvim_buf_is_loaded(bufnr) then
      before_tick = api.nvim_buf_get_var(bufnr, 'changedtick')
    end
    local file = { uri = uri, changes = changes[bufnr] or 0 }
    file.bufnr = load(uri)
    -- Diagnostics already published for the text as it is now (the change that made this
    -- request reached the server before it) count: the tick did not move since then.
    file.current = before_tick ~= nil
      and before_tick == api.nvim_buf_get_var(file.bufnr, 'changedtick')
      and fresh_tick[file.bufnr] == before_tick
    table.insert(files, file)
  end
  local function handled(file)
    return #other_clients(file.bufnr, agent_id) > 0
  end
  -- A file no language server attached to once loaded (servers attach in FileType, at
  -- once) has nothing to wait for.
  local function done(file)
    return file.current or fresh(file.bufnr, file.changes) or not handled(file)
  end
  -- The wait counts from the request's arrival: loading the files (a cold filetype plugin,
  -- a server attaching) is part of it.
  local left = wait - ((vim.uv or vim.loop).hrtime() - started) / 1e6
  if left > 0 then
    vim.wait(left, function()
      for _, file in ipairs(files) do
        if not done(file) then
          return false
        end
      end
      return true
    end, 10)
  end
  local result = {}
  for _, file in ipairs(files) do
    local diagnostics = diagnostics_of(file.bufnr, agent_id, encoding)
    local answered
    if wait > 0 then
      answered = done(file) and (handled(file) or #diagnostics > 0)
    else
      answered = handled(file) or #diagnostics > 0
    end
    table.insert(result, { uri = file.uri, diagnostics = diagnostics, answered = answered })
  end
  return { files = result }
end

-- Positions between encodings ---------------------------------------------------

local function is_position(value)
  return type(value) == 'table' and type(value.line) == 'number' and type(value.character) == 'number'
end

--- Convert every position in `value` (in place) from encoding `from` to `to`, reading the
--- lines of the document each belongs to (the nearest uri/targetUri/textDocument above it).
local function convert(value, uri, from, to, lines_of)
  if type(value) ~= 'table' or from == to then
    return
  end
  if is_position(value) then
    if uri then
      local line = lines_of(uri, value.line)
      value.character = from_byte(line, to_byte(line, value.character, from), to)
    end
    return
  end
  local here = uri
  if type(value.uri) == 'string' then
    here = value.uri
  elseif type(value.targetUri) == 'string' then
    here = value.targetUri
  elseif type(value.textDocument) == 'table' and type(value.textDocument.uri) == 'string' then
    here = value.textDocument.uri
  end
  for key, child in pairs(value) do
    if key == 'changes' and type(child) == 'table' and not islist(child) then
      for change_uri, edits in pairs(child) do
        convert(edits, change_uri, from, to, lines_of)
      end
    else
      convert(child, here, from, to, lines_of)
    end
  end
end

--- Line `row` of the document `uri`: its buffer's if loaded, else the file's.
local function lines_of(uri, row)
  local bufnr = vim.fn.bufnr(vim.uri_to_fname(uri))
  if bufnr > 0 and api.nvim_buf_is_loaded(bufnr) then
    return line_text(bufnr, row)
  end
  -- A regular file only: a FIFO would hang the editor, a device never end.
  local fname = vim.uri_to_fname(uri)
  local stat = (vim.uv or vim.loop).fs_stat(fname)
  if not stat or stat.type ~= 'file' then
    return ''
  end
  local ok, lines = pcall(vim.fn.readfile, fname, '', row + 1)
  return ok and lines[row + 1] or ''
end

--- Wait (a little) until the buffer's language servers are initialized (servers attach in
--- FileType, at once: a buffer with none has none to wait for).
local function wait_attached(bufnr, agent_id)
  vim.wait(M.ATTACH_WAIT_MS, function()
    local clients = other_clients(bufnr, agent_id)
    for _, client in ipairs(clients) do
      if not client.initialized then
        return false
      end
    end
    return true
  end, 10)
end

local function supports(client, method)
  local ok, yes = pcall(call, client, 'supports_method', method)
  return ok and yes
end

--- agent/languageRequest.
function M.on_request(_, params, ctx)
  local agent_id = ctx and ctx.client_id
  local agent_encoding = encoding_of(agent_id and vim.lsp.get_client_by_id(agent_id))
  local method = type(params) == 'table' and params.method
  local request = type(params) == 'table' and params.params or {}
  if type(method) ~= 'string' then
    return { result = vim.NIL }
  end
  local bufnr, clients
  local uri = type(request.textDocument) == 'table' and request.textDocument.uri
  if type(uri) == 'string' then
    bufnr = load(uri)
    wait_attached(bufnr, agent_id)
    clients = other_clients(bufnr, agent_id)
  else
    clients = all_other_clients(agent_id)
  end
  -- The first non-null result; an empty list only when no server found more.
  local empty = nil
  for _, client in ipairs(clients) do
    if supports(client, method) then
      local encoding = encoding_of(client)
      local sent = vim.deepcopy(request)
      convert(sent, nil, agent_encoding, encoding, lines_of)
      local ok, response = pcall(call, client, 'request_sync', method, sent, M.REQUEST_TIMEOUT_MS, bufnr or 0)
      if ok and response and not response.err and not is_nil(response.result) then
        local result = response.result
        if type(result) == 'table' and islist(result) and #result == 0 then
          empty = empty or result
        else
          convert(result, uri, encoding, agent_encoding, lines_of)
          return { result = result }
        end
      end
    end
  end
  return { result = empty or vim.NIL }
end

--- The handlers to merge into the agent-lsp client's.
function M.handlers()
  return {
    [M.DIAGNOSTICS] = M.on_diagnostics,
    [M.REQUEST] = M.on_request,
  }
end

return M
