import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { describe, it } from "node:test";
import { checkServer, chooseInterpreter, installCommand, launcherPath, resolveSettingPath, serverEnv, venvPython } from "../../src/interpreter";

const files = (...paths: string[]) => (p: string) => paths.includes(p);

describe("chooseInterpreter", () => {
  const base = { folders: ["/ws/a", "/ws/b"], trusted: true, platform: "linux" as const, homeDir: "/home/u" };

  it("uses the setting first", () => {
    const i = chooseInterpreter({ ...base, setting: "/opt/py/bin/python", isFile: files("/ws/a/.venv/bin/python") });
    assert.deepEqual([i.command, i.source], ["/opt/py/bin/python", "setting"]);
    assert.match(i.origin, /ralph\.server\.pythonPath/);
  });

  it("then the Python extension's interpreter, in a trusted workspace only", () => {
    const withExt = { ...base, setting: "", pythonExtension: "/envs/p/bin/python", isFile: files("/ws/a/.venv/bin/python") };
    const i = chooseInterpreter(withExt);
    assert.deepEqual([i.command, i.source], ["/envs/p/bin/python", "python-extension"]);
    const untrusted = chooseInterpreter({ ...withExt, trusted: false });
    assert.deepEqual([untrusted.command, untrusted.source], ["python3", "path"]);
    const set = chooseInterpreter({ ...withExt, setting: "/opt/py" });
    assert.equal(set.source, "setting");
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

describe("checkServer (the bundled launcher, run by a real python3)", () => {
  const launcherSrc = launcherPath(path.resolve(__dirname, "..")); // the launcher sits beside package.json

  /** An extension folder with the launcher, and a bundled server of version `version` if given. */
  function extensionDir(root: string, version?: string): string {
    const ext = path.join(root, "ext");
    fs.mkdirSync(path.join(ext, "bundled", "tool"), { recursive: true });
    fs.copyFileSync(launcherSrc, launcherPath(ext));
    if (version !== undefined) {
      const pkg = path.join(ext, "bundled", "libs", "ralph_lsp");
      fs.mkdirSync(pkg, { recursive: true });
      fs.writeFileSync(path.join(pkg, "__init__.py"), `__version__ = "${version}"\n`);
    }
    return ext;
  }

  /** A python3 with no site-packages (as a bare system Python has no ralph-lsp). */
  function barePython(root: string): string {
    const exe = path.join(root, "python");
    fs.writeFileSync(exe, '#!/bin/sh\nexec python3 -I -S "$@"\n', { mode: 0o755 });
    return exe;
  }

  function withDir(fn: (dir: string) => Promise<void>): () => Promise<void> {
    return async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ralph-interp-"));
      try {
        await fn(dir);
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    };
  }

  it("reports a missing interpreter", async () => {
    const r = await checkServer("/nonexistent/python-ralph-test", launcherSrc, os.tmpdir(), process.env);
    assert.equal(!r.ok && r.reason, "not-found");
  });

  it(
    "runs the bundled server on a Python that has none, whatever the strategy",
    withDir(async (dir) => {
      const ext = extensionDir(dir, "9.9.9");
      const python = barePython(dir);
      for (const strategy of ["useBundled", "fromEnvironment"] as const) {
        const r = await checkServer(python, launcherPath(ext), dir, serverEnv(process.env, strategy));
        assert.ok(r.ok, JSON.stringify(r));
        assert.deepEqual(r.server, { version: "9.9.9", source: "bundled", location: path.join(ext, "bundled", "libs", "ralph_lsp") });
      }
    }),
  );

  it(
    "never imports the working folder's ralph_lsp, and says when there is no server at all",
    withDir(async (dir) => {
      const ext = extensionDir(dir); // a build without the bundle
      const hostile = path.join(dir, "workspace");
      const marker = path.join(dir, "hostile-ran");
      fs.mkdirSync(path.join(hostile, "ralph_lsp"), { recursive: true });
      fs.writeFileSync(path.join(hostile, "ralph_lsp", "__init__.py"), `open(${JSON.stringify(marker)}, "w").write("ran")\n`);
      const r = await checkServer(barePython(dir), launcherPath(ext), hostile, serverEnv(process.env, "useBundled"));
      assert.equal(!r.ok && r.reason, "not-installed", JSON.stringify(r));
      assert.ok(!fs.existsSync(marker), "the working folder's package was imported");
    }),
  );

  it(
    "tells a too-old Python and other failures apart, and gives up on a hang",
    withDir(async (dir) => {
      const fake = path.join(dir, "python");
      fs.writeFileSync(fake, '#!/bin/sh\necho "ralph-lsp needs Python 3.10 or newer" >&2\nexit 3\n', { mode: 0o755 });
      const old = await checkServer(fake, launcherSrc, dir, process.env);
      assert.deepEqual(old, { ok: false, reason: "too-old", detail: "ralph-lsp needs Python 3.10 or newer" });
      fs.writeFileSync(fake, "#!/bin/sh\necho boom >&2\nexit 1\n", { mode: 0o755 });
      assert.deepEqual(await checkServer(fake, launcherSrc, dir, process.env), { ok: false, reason: "error", detail: "boom" });
      fs.writeFileSync(fake, "#!/bin/sh\nexec sleep 5\n", { mode: 0o755 });
      const slow = await checkServer(fake, launcherSrc, dir, process.env, 200);
      assert.equal(!slow.ok && slow.reason, "error");
    }),
  );
});
