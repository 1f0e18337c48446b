// Which Python runs the server, and whether it can. No `vscode` import: the caller passes in the
// setting, the workspace folders and the trust state.
import { spawn } from "node:child_process";
import * as os from "node:os";
import * as path from "node:path";

export type InterpreterSource = "setting" | "python-extension" | "workspace-venv" | "path";

export interface Interpreter {
  /** The program to spawn: an absolute path, or a bare name looked up on PATH. */
  command: string;
  source: InterpreterSource;
  /** Human words for the output, e.g. "from the setting ralph.server.pythonPath". */
  origin: string;
}

export interface InterpreterQuery {
  /** `ralph.server.pythonPath`, possibly empty. */
  setting: string | undefined;
  /** Workspace folder paths, in order. */
  folders: readonly string[];
  /** A workspace's own `.venv` is code from the workspace: only used in a trusted one. */
  trusted: boolean;
  /** The Python extension's interpreter for the workspace, when that extension is installed. */
  pythonExtension?: string;
  platform?: NodeJS.Platform;
  homeDir?: string;
  isFile: (p: string) => boolean;
}

export function venvPython(folder: string, platform: NodeJS.Platform = process.platform): string {
  return platform === "win32"
    ? path.join(folder, ".venv", "Scripts", "python.exe")
    : path.join(folder, ".venv", "bin", "python");
}

/** Expands `~` and `${workspaceFolder}`, and makes a relative path relative to the first folder. */
export function resolveSettingPath(value: string, folders: readonly string[], homeDir: string): string {
  let v = value.trim();
  const first = folders[0];
  if (first !== undefined) {
    v = v.replace(/\$\{workspaceFolder\}/g, first);
  }
  if (v === "~" || v.startsWith("~/")) {
    v = path.join(homeDir, v.slice(1));
  }
  const looksLikePath = v.includes("/") || v.includes("\\");
  if (looksLikePath && !path.isAbsolute(v) && first !== undefined) {
    v = path.resolve(first, v);
  }
  return v;
}

/**
 * The interpreter, in this order: the setting `ralph.server.pythonPath`; the Python extension's
 * interpreter for the workspace and then the `.venv` of the first workspace folder that has one
 * (both only in a trusted workspace: they may be the workspace's own code); `python3` (`python` on
 * Windows) from PATH.
 */
export function chooseInterpreter(q: InterpreterQuery): Interpreter {
  const platform = q.platform ?? process.platform;
  const setting = q.setting?.trim();
  if (setting) {
    return {
      command: resolveSettingPath(setting, q.folders, q.homeDir ?? os.homedir()),
      source: "setting",
      origin: "from the setting ralph.server.pythonPath",
    };
  }
  if (q.trusted && q.pythonExtension?.trim()) {
    return { command: q.pythonExtension.trim(), source: "python-extension", origin: "the Python extension's interpreter for the workspace" };
  }
  if (q.trusted) {
    for (const folder of q.folders) {
      const candidate = venvPython(folder, platform);
      if (q.isFile(candidate)) {
        return { command: candidate, source: "workspace-venv", origin: `the workspace's virtual environment` };
      }
    }
  }
  return {
    command: platform === "win32" ? "python" : "python3",
    source: "path",
    origin: q.trusted
      ? "from PATH (no ralph.server.pythonPath setting, no .venv in the workspace)"
      : "from PATH (the workspace's .venv is not used until the workspace is trusted)",
  };
}

export type ImportCheck =
  | { ok: true; server?: ServerInfo }
  | { ok: false; reason: "not-found" | "not-installed" | "too-old" | "error"; detail: string };

/** What the launcher's `--check` prints: the server's version and where it comes from. */
export interface ServerInfo {
  version: string;
  source: "bundled" | "environment";
  location: string;
}

export type ImportStrategy = "useBundled" | "fromEnvironment";

/** The launcher the extension ships (`bundled/tool/ralph_server.py`). */
export function launcherPath(extensionPath: string): string {
  return path.join(extensionPath, "bundled", "tool", "ralph_server.py");
}

/** The environment the server (and its `--check`) runs with. */
export function serverEnv(base: NodeJS.ProcessEnv, strategy: ImportStrategy): NodeJS.ProcessEnv {
  return { ...base, PYTHONUNBUFFERED: "1", RALPH_IMPORT_STRATEGY: strategy };
}

export function parseServerInfo(stdout: string): ServerInfo | undefined {
  const line = stdout.trim().split("\n").pop() ?? "";
  try {
    const v = JSON.parse(line) as Partial<ServerInfo>;
    if (typeof v.version === "string" && (v.source === "bundled" || v.source === "environment") && typeof v.location === "string") {
      return { version: v.version, source: v.source, location: v.location };
    }
  } catch {
    // not the launcher's line: a check that printed nothing useful
  }
  return undefined;
}

/**
 * Runs `<python> <launcher> --check`: can this interpreter start the server, and which one?
 * `cwd` must not be a workspace folder (the launcher also drops the working folder from sys.path).
 */
export function checkServer(
  command: string,
  launcher: string,
  cwd: string,
  env: NodeJS.ProcessEnv,
  timeoutMs = 30_000,
): Promise<ImportCheck> {
  return new Promise((resolve) => {
    let stderr = "";
    let stdout = "";
    let settled = false;
    const done = (r: ImportCheck): void => {
      if (!settled) {
        settled = true;
        clearTimeout(timer);
        resolve(r);
      }
    };
    const child = spawn(command, [launcher, "--check"], { cwd, env, stdio: ["ignore", "pipe", "pipe"], windowsHide: true });
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      done({ ok: false, reason: "error", detail: `"${command} ${launcher} --check" did not finish in ${timeoutMs / 1000} s` });
    }, timeoutMs);
    child.stdout?.setEncoding("utf8");
    child.stdout?.on("data", (chunk: string) => {
      if (stdout.length < 8192) {
        stdout += chunk;
      }
    });
    child.stderr?.setEncoding("utf8");
    child.stderr?.on("data", (chunk: string) => {
      if (stderr.length < 8192) {
        stderr += chunk;
      }
    });
    child.on("error", (err: NodeJS.ErrnoException) => {
      const reason = err.code === "ENOENT" || err.code === "EACCES" ? "not-found" : "error";
      done({ ok: false, reason, detail: err.message });
    });
    child.on("close", (code, signal) => {
      if (code === 0) {
        done({ ok: true, server: parseServerInfo(stdout) });
      } else if (code === 3) {
        done({ ok: false, reason: "too-old", detail: stderr.trim() });
      } else if (code === 4 || /ModuleNotFoundError|No module named/.test(stderr)) {
        done({ ok: false, reason: "not-installed", detail: stderr.trim() });
      } else {
        done({ ok: false, reason: "error", detail: stderr.trim() || `exit code ${code ?? signal}` });
      }
    });
  });
}

/**
 * The command that installs the server for this interpreter: an editable install when a workspace
 * folder is a checkout of ralph-lsp itself, else the package from the registry.
 */
export function installCommand(python: string, checkout: string | undefined): string {
  const q = (s: string): string => (/^[\w./:@%+=,-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`);
  return checkout !== undefined
    ? `${q(python)} -m pip install -e ${q(checkout)}`
    : `${q(python)} -m pip install ralph-lsp`;
}
