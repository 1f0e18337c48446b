import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { describe, it } from "node:test";
import { checkImport, chooseInterpreter, installCommand, resolveSettingPath, venvPython } from "../../src/interpreter";

const files = (...paths: string[]) => (p: string) => paths.includes(p);

describe("chooseInterpreter", () => {
  const base = { folders: ["/ws/a", "/ws/b"], trusted: true, platform: "linux" as const, homeDir: "/home/u" };

  it("uses the setting first", () => {
    const i = chooseInterpreter({ ...base, setting: "/opt/py/bin/python", isFile: files("/ws/a/.venv/bin/python") });
    assert.deepEqual([i.command, i.source], ["/opt/py/bin/python", "setting"]);
    assert.match(i.origin, /ralph\.server\.pythonPath/);
  });

  it("then the first workspace folder that has a .venv", () => {
    const i = chooseInterpreter({ ...base, setting: "  ", isFile: files("/ws/b/.venv/bin/python") });
    assert.deepEqual([i.command, i.source], ["/ws/b/.venv/bin/python", "workspace-venv"]);
  });

  it("then python3 from PATH", () => {
    const i = chooseInterpreter({ ...base, setting: undefined, isFile: files() });
    assert.deepEqual([i.command, i.source], ["python3", "path"]);
  });

  it("never runs a workspace's .venv in an untrusted workspace", () => {
    const i = chooseInterpreter({ ...base, trusted: false, setting: "", isFile: files("/ws/a/.venv/bin/python") });
    assert.deepEqual([i.command, i.source], ["python3", "path"]);
    assert.match(i.origin, /trusted/);
  });

  it("knows Windows layouts", () => {
    assert.equal(venvPython("C:\\ws", "win32"), path.join("C:\\ws", ".venv", "Scripts", "python.exe"));
    const i = chooseInterpreter({ ...base, platform: "win32", setting: "", isFile: files() });
    assert.equal(i.command, "python");
  });
});

describe("resolveSettingPath", () => {
  it("expands ~ and ${workspaceFolder}, resolves relative paths against the first folder", () => {
    assert.equal(resolveSettingPath("~/py/bin/python", ["/ws"], "/home/u"), "/home/u/py/bin/python");
    assert.equal(resolveSettingPath("${workspaceFolder}/.venv/bin/python", ["/ws"], "/h"), "/ws/.venv/bin/python");
    assert.equal(resolveSettingPath(".venv/bin/python", ["/ws"], "/h"), "/ws/.venv/bin/python");
    assert.equal(resolveSettingPath("python3.12", ["/ws"], "/h"), "python3.12");
  });
});

describe("installCommand", () => {
  it("installs from the registry, or the checkout editable", () => {
    assert.equal(installCommand("/usr/bin/python3", undefined), "/usr/bin/python3 -m pip install ralph-lsp");
    assert.equal(installCommand("python3", "/src/ralph lsp"), "python3 -m pip install -e '/src/ralph lsp'");
  });
});

describe("checkImport", () => {
  it("reports a missing interpreter", async () => {
    const r = await checkImport("/nonexistent/python-ralph-test", os.tmpdir());
    assert.equal(r.ok, false);
    assert.equal(!r.ok && r.reason, "not-found");
  });

  it("tells a missing module from other failures", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ralph-interp-"));
    try {
      const fake = path.join(dir, "python");
      fs.writeFileSync(fake, '#!/bin/sh\necho "ModuleNotFoundError: No module named \'ralph_lsp\'" >&2\nexit 1\n', { mode: 0o755 });
      const missing = await checkImport(fake, dir);
      assert.equal(!missing.ok && missing.reason, "not-installed");

      fs.writeFileSync(fake, "#!/bin/sh\necho boom >&2\nexit 3\n", { mode: 0o755 });
      const broken = await checkImport(fake, dir);
      assert.deepEqual(broken, { ok: false, reason: "error", detail: "boom" });

      fs.writeFileSync(fake, '#!/bin/sh\ntest "$1 $2" = "-c import ralph_lsp"\n', { mode: 0o755 });
      assert.deepEqual(await checkImport(fake, dir), { ok: true });

      fs.writeFileSync(fake, "#!/bin/sh\nexec sleep 5\n", { mode: 0o755 });
      const slow = await checkImport(fake, dir, 200);
      assert.equal(!slow.ok && slow.reason, "error");
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
