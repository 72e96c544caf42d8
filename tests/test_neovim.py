"""Neovim as a second real client: headless nvim starts the server, edits a buffer, hovers
and runs prism.findFunction. Needs `nvim` (Debian: `apt-get install -y neovim`, 0.7.2)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FIXTURE = Path(__file__).parent / "fixtures" / "multilang"
NVIM = shutil.which("nvim")

pytestmark = pytest.mark.skipif(
    NVIM is None, reason="nvim is not installed (Debian: apt-get install -y neovim)")

# Neovim 0.7 has neither vim.lsp.start nor vim.lsp.config: start_client + buf_attach_client.
DRIVER = r"""
local env = vim.env
local function status(client, bufnr)
  local answer = client.request_sync("workspace/executeCommand",
    {command = "prism.status", arguments = {}}, 10000, bufnr)
  return answer and answer.result
end

local function find(client, bufnr, description)
  local answer, err = client.request_sync("workspace/executeCommand",
    {command = "prism.findFunction", arguments = {{description = description, top = 3}}},
    20000, bufnr)
  return (answer and answer.result) or {}, answer and answer.err or err
end

local function main()
  local out = {}
  local id = vim.lsp.start_client({
    name = "prism",
    cmd = {env.PRISM_PYTHON, "-m", "prism_code.lsp"},
    cmd_env = {PYTHONPATH = env.PRISM_REPO, PRISM_CODE_CACHE_DIR = env.PRISM_CACHE},
    root_dir = env.PRISM_WORKSPACE,
    init_options = {cacheDir = env.PRISM_CACHE},
  })
  vim.cmd("edit " .. env.PRISM_WORKSPACE .. "/pkg/core.py")
  local bufnr = vim.api.nvim_get_current_buf()
  vim.lsp.buf_attach_client(bufnr, id)
  local client = vim.lsp.get_client_by_id(id)
  out.initialized = vim.wait(30000, function() return client.initialized end, 50)
  out.indexed = vim.wait(120000, function()
    local s = status(client, bufnr)
    return s ~= nil and s.state == "idle" and s.embeddings.done == s.embeddings.total
  end, 200)
  out.status = status(client, bufnr)

  local hover = client.request_sync("textDocument/hover", {
    textDocument = {uri = vim.uri_from_bufnr(bufnr)},
    position = {line = tonumber(env.PRISM_HOVER_LINE), character = tonumber(env.PRISM_HOVER_COL)},
  }, 20000, bufnr)
  out.hover = hover and hover.result and hover.result.contents.value or vim.NIL
  out.find = find(client, bufnr, "scale a value and round it up")

  -- An unsaved edit: nvim sends didChange, the server must search the buffer's text.
  vim.api.nvim_buf_set_lines(bufnr, -1, -1, false, {
    "", "", "def shelve_everything(inventory):",
    "    '''Move every item of the inventory onto the top shelf.'''",
    "    return sorted(inventory.items)"})
  out.edited = {}
  vim.wait(30000, function()
    out.edited = find(client, bufnr, "move every item of the inventory onto the top shelf")
    return out.edited[1] ~= nil and out.edited[1].name == "shelve_everything"
  end, 300)
  out.disk_lines = #vim.fn.readfile(env.PRISM_WORKSPACE .. "/pkg/core.py")
  return out
end

local ok, result = pcall(main)
if not ok then result = {error = tostring(result)} end
vim.fn.writefile({vim.fn.json_encode(result)}, env.PRISM_OUT)
vim.cmd("qa!")
"""


def test_neovim_hover_find_and_unsaved_edit(tmp_path: Path):
    workspace = tmp_path / "multilang"
    shutil.copytree(FIXTURE, workspace)
    core = (workspace / "pkg" / "core.py").read_text().split("\n")
    row = next(i for i, line in enumerate(core) if "scaled = helper(count)" in line)
    script, out = tmp_path / "drive.lua", tmp_path / "out.json"
    script.write_text(DRIVER)
    env = {**os.environ, "PRISM_PYTHON": sys.executable, "PRISM_REPO": str(REPO),
           "PRISM_WORKSPACE": str(workspace), "PRISM_CACHE": str(tmp_path / "cache"),
           "PRISM_OUT": str(out), "PRISM_HOVER_LINE": str(row),
           "PRISM_HOVER_COL": str(core[row].index("helper") + 2)}
    subprocess.run([NVIM, "--headless", "--clean", "-c", f"luafile {script}"], env=env,
                   cwd=tmp_path, timeout=300, check=True, capture_output=True)
    result = json.loads(out.read_text())
    assert "error" not in result, result.get("error")
    assert result["initialized"] and result["indexed"]
    assert result["status"]["files"] == 20 and result["status"]["functions"] == 48
    assert "def helper(value, scale=DEFAULT_SCALE)" in result["hover"]
    assert "callers: 3" in result["hover"]
    best = result["find"][0]
    assert best["name"] == "helper" and best["uri"] == (workspace / "pkg" / "util.py").as_uri()
    assert best["range"]["start"] == {"line": 8, "character": 0}
    assert result["edited"][0]["name"] == "shelve_everything"
    assert result["disk_lines"] == len(core) - 1  # the edit stayed in the buffer
