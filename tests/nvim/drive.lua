-- Drives the documented Neovim setup (contrib/nvim/ralph.lua) headless through a demo run and
-- writes what it saw as JSON to $RALPH_NVIM_OUT. Run by tests/nvim/test_neovim.py.
local out = os.getenv("RALPH_NVIM_OUT")
local seen = { lenses = {}, errors = {} }

local function finish()
  vim.fn.writefile({ vim.fn.json_encode(seen) }, out)
  vim.cmd("qa!")
end

local function line0()
  for _, lens in ipairs(vim.lsp.codelens.get(0) or {}) do
    if lens.range.start.line == 0 and lens.command then
      return lens.command.title
    end
  end
  return nil
end

local ok, err = pcall(function()
  package.path = os.getenv("RALPH_NVIM_LUA") .. "/?.lua;" .. package.path
  require("ralph").setup({
    cmd = { os.getenv("RALPH_NVIM_PYTHON"), "-m", "ralph_lsp" },
    cmd_env = { RALPH_DEMO_DELAY = "0.05" },
    settings = { agent = "demo" },
  })
  vim.cmd("edit " .. vim.fn.fnameescape(os.getenv("RALPH_NVIM_TASKS")))
  seen.attached = vim.wait(20000, function() return line0() ~= nil end, 50)
  table.insert(seen.lenses, line0())
  vim.cmd("RalphRun")
  seen.finished = vim.wait(90000, function()
    local title = line0()
    if title and title ~= seen.lenses[#seen.lenses] then
      table.insert(seen.lenses, title)
    end
    return title == "▶ Run change · 8/8 tasks"
  end, 50)
  -- Neovim never reloaded the buffer (no :checktime): it still holds the unchecked boxes.
  seen.buffer_unchecked = #vim.tbl_filter(function(l) return l:find("- [ ]", 1, true) end,
    vim.api.nvim_buf_get_lines(0, 0, -1, false))
  seen.modified = vim.bo.modified
  local output = vim.fn.bufnr("ralph://output")
  vim.wait(10000, function() -- the last log lines come a moment after the final status
    local text = table.concat(vim.api.nvim_buf_get_lines(output, 0, -1, false), "\n")
    return text:find("■ succeeded", 1, true) ~= nil
  end, 50)
  seen.output = output ~= -1 and vim.api.nvim_buf_get_lines(output, 0, -1, false) or {}
  seen.output_shown = output ~= -1 and #vim.fn.win_findbuf(output) > 0
end)
if not ok then
  table.insert(seen.errors, tostring(err))
end
finish()
