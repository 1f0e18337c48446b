-- ralph-lsp in Neovim's built-in LSP client (0.7 and newer).
--
-- Put this file on your runtimepath as lua/ralph.lua (or anywhere on package.path) and call:
--
--   require("ralph").setup({
--     cmd = { "ralph-lsp" },                 -- or { "/path/to/python", "-m", "ralph_lsp" }
--     settings = { agent = "claude" },       -- the `ralph.*` settings, as in VS Code
--   })
--
-- It starts the server for every `openspec/changes/<name>/tasks.md`, keeps the code lenses fresh
-- (the server asks for a refresh when the agent edits the file, which Neovim need not reload),
-- shows the agent's output in a split (`:RalphOutput`), and adds the commands
-- `:RalphRun`, `:RalphStop`, `:RalphGuide {text}` and `:RalphStatus` for the change of the
-- current tasks.md. `<leader>rl` (or `:lua vim.lsp.codelens.run()`) runs the lens on the line.

local M = {}

local OUTPUT_NAME = "ralph://output"

local function output_buffer()
  local buf = vim.fn.bufnr(OUTPUT_NAME)
  if buf == -1 then
    buf = vim.api.nvim_create_buf(false, true)
    vim.api.nvim_buf_set_name(buf, OUTPUT_NAME)
    vim.api.nvim_buf_set_option(buf, "bufhidden", "hide")
    vim.api.nvim_buf_set_option(buf, "filetype", "log")
  end
  return buf
end

--- Appends the server's log lines (the agent's output, the run's events) to the output buffer.
local function append_output(message)
  local buf = output_buffer()
  local lines = vim.split(message, "\n", { plain = true })
  local count = vim.api.nvim_buf_line_count(buf)
  local first = vim.api.nvim_buf_get_lines(buf, 0, 1, false)[1]
  if count == 1 and first == "" then
    vim.api.nvim_buf_set_lines(buf, 0, 1, false, lines)
  else
    vim.api.nvim_buf_set_lines(buf, count, count, false, lines)
  end
  for _, win in ipairs(vim.fn.win_findbuf(buf)) do
    vim.api.nvim_win_set_cursor(win, { vim.api.nvim_buf_line_count(buf), 0 })
  end
end

--- Opens the output in a split below (once).
function M.show_output()
  local buf = output_buffer()
  if #vim.fn.win_findbuf(buf) == 0 then
    local current = vim.api.nvim_get_current_win()
    vim.cmd("botright 12split")
    vim.api.nvim_win_set_buf(0, buf)
    vim.api.nvim_set_current_win(current)
  end
end

--- The change of a tasks.md path: { change = name, root = file URI of the OpenSpec root }.
local function change_of(path)
  local change_dir = vim.fn.fnamemodify(path, ":h")
  local name = vim.fn.fnamemodify(change_dir, ":t")
  local root = vim.fn.fnamemodify(change_dir, ":h:h:h")
  return { change = name, root = vim.uri_from_fname(root) }
end

local function current_change()
  local path = vim.api.nvim_buf_get_name(0)
  if not path:match("/openspec/changes/[^/]+/tasks%.md$") then
    vim.notify("ralph: open a change's tasks.md first", vim.log.levels.WARN)
    return nil
  end
  return change_of(path)
end

local function ralph_client(bufnr)
  for _, client in pairs(vim.lsp.buf_get_clients(bufnr or 0)) do
    if client.name == "ralph" then
      return client
    end
  end
  return nil
end

--- Runs a `ralph.*` server command with one object argument; `done(err, result)` is optional.
function M.command(name, argument, done)
  local client = ralph_client(0)
  if client == nil then
    vim.notify("ralph: the server is not attached to this buffer", vim.log.levels.WARN)
    return
  end
  client.request("workspace/executeCommand", { command = name, arguments = { argument } },
    function(err, result)
      if err then
        vim.notify("ralph: " .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
      end
      if done then
        done(err, result)
      end
    end, 0)
end

local function handlers()
  return {
    -- The agent's output and the run's events: into the output buffer, not only the LSP log.
    ["window/logMessage"] = function(_, result)
      if result and result.message then
        append_output(result.message)
      end
      return vim.NIL
    end,
    -- The server asks for fresh lenses whenever a tasks.md or a run changes.
    ["workspace/codeLens/refresh"] = function()
      vim.schedule(function()
        for _, buf in ipairs(vim.api.nvim_list_bufs()) do
          if vim.api.nvim_buf_is_loaded(buf) and ralph_client(buf) then
            vim.api.nvim_buf_call(buf, vim.lsp.codelens.refresh)
          end
        end
      end)
      return vim.NIL
    end,
    ["ralph/runStatus"] = function(_, status)
      if status and status.state ~= "running" then
        vim.notify(string.format("ralph: %s %s: %s", status.change, status.state,
          status.reason or ""), status.state == "succeeded" and vim.log.levels.INFO
          or vim.log.levels.WARN)
      end
      return vim.NIL
    end,
  }
end

local function capabilities()
  local caps = vim.lsp.protocol.make_client_capabilities()
  caps.workspace = caps.workspace or {}
  caps.workspace.codeLens = { refreshSupport = true }
  return caps
end

local function start(opts, bufnr)
  local path = vim.api.nvim_buf_get_name(bufnr)
  local root = vim.fn.fnamemodify(path, ":h:h:h:h")
  local config = {
    name = "ralph",
    cmd = opts.cmd,
    cmd_env = opts.cmd_env,
    root_dir = root,
    workspace_folders = { { uri = vim.uri_from_fname(root), name = root } },
    init_options = opts.settings,
    settings = { ralph = opts.settings },
    capabilities = capabilities(),
    handlers = handlers(),
    on_attach = function(_, buf)
      vim.api.nvim_buf_call(buf, vim.lsp.codelens.refresh)
    end,
  }
  if vim.lsp.start then -- Neovim 0.8+: reuses a client with the same name and root
    vim.lsp.start(config, { bufnr = bufnr })
    return
  end
  M._clients = M._clients or {}
  local id = M._clients[root]
  if id == nil or vim.lsp.get_client_by_id(id) == nil then
    id = vim.lsp.start_client(config)
    M._clients[root] = id
  end
  if id then
    vim.lsp.buf_attach_client(bufnr, id)
  end
end

function M.setup(opts)
  opts = opts or {}
  opts.cmd = opts.cmd or { "ralph-lsp" }
  opts.settings = opts.settings or {}
  local group = vim.api.nvim_create_augroup("ralph_lsp", { clear = true })
  vim.api.nvim_create_autocmd({ "BufReadPost", "BufNewFile" }, {
    group = group,
    pattern = "*/openspec/changes/*/tasks.md",
    callback = function(args)
      if not args.file:match("/archive/") then
        start(opts, args.buf)
      end
    end,
  })
  vim.api.nvim_create_autocmd({ "BufEnter", "InsertLeave", "BufWritePost" }, {
    group = group,
    pattern = "*/openspec/changes/*/tasks.md",
    callback = function()
      if ralph_client(0) then
        vim.lsp.codelens.refresh()
      end
    end,
  })
  vim.api.nvim_create_user_command("RalphRun", function()
    local c = current_change()
    if c then
      M.show_output()
      M.command("ralph.run", c)
    end
  end, { desc = "Ralph: run the change of this tasks.md" })
  vim.api.nvim_create_user_command("RalphStop", function()
    local c = current_change()
    if c then
      M.command("ralph.stop", c)
    end
  end, { desc = "Ralph: stop the run of this change" })
  vim.api.nvim_create_user_command("RalphGuide", function(cmd)
    local c = current_change()
    if c then
      c.text = cmd.args
      M.command("ralph.guide", c)
    end
  end, { nargs = "+", desc = "Ralph: guidance for the next iteration" })
  vim.api.nvim_create_user_command("RalphStatus", function()
    M.command("ralph.status", {}, function(_, result)
      if result then
        for _, run in ipairs(result.runs or {}) do
          print(string.format("%s: %s · iteration %d · %d/%d tasks · %s", run.change, run.state,
            run.iteration, run.completed, run.total, run.reason or ""))
        end
      end
    end)
  end, { desc = "Ralph: the runs and their state" })
  vim.api.nvim_create_user_command("RalphOutput", M.show_output, { desc = "Ralph: the output" })
  vim.keymap.set("n", "<leader>rl", vim.lsp.codelens.run, { desc = "Ralph: run the lens here" })
end

return M
