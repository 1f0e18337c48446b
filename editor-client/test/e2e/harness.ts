// Drives a real VS Code (code-server) in headless Chromium through playwright-core. Everything it
// needs comes in through environment variables set by scripts/e2e.sh.
import assert from "node:assert/strict";
import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { chromium, type BrowserContext, type Locator, type Page } from "playwright-core";

export const TIMEOUT = 60_000;
/** USER_HZ: the unit of the times in /proc/<pid>/stat (100 on Linux). */
const CLOCK_TICKS = 100;

/** Settings whose value is a path on the (remote) machine: `machine-overridable` in package.json. */
const MACHINE_SETTINGS = new Set(["ralph.server.pythonPath"]);

export function env(name: string): string {
  const v = process.env[name];
  if (!v) {
    throw new Error(`${name} is not set (run this test through scripts/e2e.sh)`);
  }
  return v;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === "object" && addr ? resolve(addr.port) : reject(new Error("no port"))));
    });
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The process groups of the code-servers this test process started and has not stopped. A
 * code-server runs in a session of its own, so a signal that ends this process would not reach
 * it: on SIGINT, SIGTERM or SIGHUP each group is killed before this process exits (scripts/e2e.sh
 * also ends, on any exit, every process carrying its tag).
 */
const liveGroups = new Set<number>();
let signalsHandled = false;

function endLiveGroupsOnSignals(): void {
  if (signalsHandled) {
    return;
  }
  signalsHandled = true;
  const codes: [NodeJS.Signals, number][] = [
    ["SIGHUP", 129],
    ["SIGINT", 130],
    ["SIGTERM", 143],
  ];
  for (const [name, code] of codes) {
    process.once(name, () => {
      for (const group of liveGroups) {
        try {
          process.kill(-group, "SIGKILL");
        } catch {
          // already gone
        }
      }
      process.exit(code);
    });
  }
}

export interface CodeServerOptions {
  codeServer: string;
  nodeBinDir: string;
  vsix: string;
  settings: Record<string, unknown>;
  resultsDir: string;
  /** Workspace trust on (the folder opens restricted), instead of off (everything trusted). */
  workspaceTrust?: boolean;
}

/** A code-server for a test file: the code-server, Node, .vsix and results folder that
 * scripts/e2e.sh names, with the test's own settings (and workspace trust). */
export function e2eServer(opts: Pick<CodeServerOptions, "settings" | "workspaceTrust">): CodeServer {
  return new CodeServer({
    codeServer: env("RALPH_E2E_CODE_SERVER"),
    nodeBinDir: env("RALPH_E2E_NODE_BIN"),
    vsix: env("RALPH_E2E_VSIX"),
    resultsDir: env("RALPH_E2E_RESULTS"),
    ...opts,
  });
}

/** `step(name, fn)`: runs `fn`; when it throws, a screenshot of the workbench goes to the results
 * as `failure-<prefix><name>.png` first. */
export function stepper(
  prefix: string,
  workbench: () => Workbench | undefined,
): <T>(name: string, fn: () => Promise<T>) => Promise<T> {
  return async <T>(name: string, fn: () => Promise<T>): Promise<T> => {
    try {
      return await fn();
    } catch (err) {
      await workbench()?.screenshot(path.join(env("RALPH_E2E_RESULTS"), `failure-${prefix}${name}.png`));
      throw err;
    }
  };
}

/** Chromium (its profile in the server's folder) and a workbench page, not yet on a folder. */
export async function openBrowser(server: CodeServer): Promise<{ browser: BrowserContext; wb: Workbench }> {
  const browser = await launchBrowser(server.path("browser"), env("RALPH_E2E_CHROMIUM"));
  return { browser, wb: new Workbench(browser.pages()[0] ?? (await browser.newPage())) };
}

/** One code-server in its own process group, with fresh user-data, extensions, HOME and XDG dirs. */
export class CodeServer {
  readonly tmp: string;
  readonly userDataDir: string;
  port = 0;
  private proc: ChildProcess | undefined;

  constructor(private readonly opts: CodeServerOptions) {
    this.tmp = fs.mkdtempSync(path.join(os.tmpdir(), "ralph-e2e-"));
    this.userDataDir = path.join(this.tmp, "user-data");
  }

  path(...parts: string[]): string {
    return path.join(this.tmp, ...parts);
  }

  private env(): NodeJS.ProcessEnv {
    const e: NodeJS.ProcessEnv = {
      ...process.env,
      PATH: `${this.opts.nodeBinDir}${path.delimiter}${process.env.PATH ?? ""}`,
      HOME: this.path("home"),
      XDG_CONFIG_HOME: this.path("home", ".config"),
      XDG_DATA_HOME: this.path("home", ".local", "share"),
      XDG_CACHE_HOME: this.path("home", ".cache"),
    };
    for (const k of Object.keys(e)) {
      if (k.startsWith("VSCODE_") || k === "ELECTRON_RUN_AS_NODE") {
        delete e[k];
      }
    }
    return e;
  }

  private writeJson(file: string, value: unknown): void {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    // Written atomically: VS Code watches these files.
    fs.writeFileSync(`${file}.tmp`, JSON.stringify(value, null, 2));
    fs.renameSync(`${file}.tmp`, file);
  }

  /**
   * The extension's settings, where a person puts them: in the User settings, except the
   * interpreter, a path on the remote machine, which goes in the remote's Machine settings
   * (code-server is a remote window: its `machine-overridable` settings come from there).
   */
  writeSettings(extra: Record<string, unknown> = {}): void {
    const all = { ...this.opts.settings, ...extra };
    const machine = Object.fromEntries(Object.entries(all).filter(([k]) => MACHINE_SETTINGS.has(k)));
    const user = Object.fromEntries(Object.entries(all).filter(([k]) => !MACHINE_SETTINGS.has(k)));
    this.writeJson(path.join(this.userDataDir, "Machine", "settings.json"), machine);
    this.writeJson(path.join(this.userDataDir, "User", "settings.json"), { ...this.baseUserSettings(), ...user });
  }

  private baseUserSettings(): Record<string, unknown> {
    return {
      "security.workspace.trust.enabled": this.opts.workspaceTrust === true,
      "security.workspace.trust.startupPrompt": "never",
      "security.workspace.trust.untrustedFiles": "open",
      "workbench.startupEditor": "none",
      "workbench.secondarySideBar.defaultVisibility": "hidden",
      "workbench.tips.enabled": false,
      "workbench.enableExperiments": false,
      "chat.disableAIFeatures": true,
      "telemetry.telemetryLevel": "off",
      "update.mode": "none",
      "extensions.autoCheckUpdates": false,
      "extensions.autoUpdate": false,
      "git.enabled": false,
      "editor.minimap.enabled": false,
      "window.commandCenter": false,
    };
  }

  async start(): Promise<void> {
    for (const d of ["home/.config", "home/.local/share", "home/.cache", "extensions"]) {
      fs.mkdirSync(this.path(d), { recursive: true });
    }
    this.writeSettings();
    const common = ["--user-data-dir", this.userDataDir, "--extensions-dir", this.path("extensions")];
    execFileSync(this.opts.codeServer, [...common, "--install-extension", this.opts.vsix], {
      env: this.env(),
      stdio: ["ignore", "pipe", "pipe"],
      timeout: TIMEOUT,
    });
    this.port = await freePort();
    const log = fs.openSync(path.join(this.opts.resultsDir, "code-server.log"), "w");
    this.proc = spawn(
      this.opts.codeServer,
      [
        ...common,
        "--bind-addr",
        `127.0.0.1:${this.port}`,
        "--auth",
        "none",
        "--disable-telemetry",
        "--disable-update-check",
        ...(this.opts.workspaceTrust === true ? [] : ["--disable-workspace-trust"]),
        "--disable-proxy",
        "--disable-getting-started-override",
        "--reconnection-grace-time",
        "5",
      ],
      { env: this.env(), detached: true, stdio: ["ignore", log, log] },
    );
    fs.closeSync(log);
    if (this.proc.pid) {
      endLiveGroupsOnSignals();
      liveGroups.add(this.proc.pid);
    }
    const deadline = Date.now() + TIMEOUT;
    for (;;) {
      if (this.proc.exitCode !== null) {
        throw new Error(`code-server exited with ${this.proc.exitCode}: see code-server.log`);
      }
      try {
        const res = await fetch(`http://127.0.0.1:${this.port}/healthz`);
        if (res.ok) {
          return;
        }
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline) {
        throw new Error("code-server did not answer /healthz in time");
      }
      await sleep(200);
    }
  }

  /** Stops the whole process group (code-server, its extension hosts, their language servers). */
  async stop(): Promise<void> {
    const proc = this.proc;
    this.proc = undefined;
    if (!proc?.pid) {
      return;
    }
    liveGroups.delete(proc.pid);
    const group = -proc.pid;
    const alive = (): boolean => {
      try {
        process.kill(group, 0);
        return true;
      } catch {
        return false;
      }
    };
    try {
      process.kill(group, "SIGTERM");
    } catch {
      return;
    }
    const deadline = Date.now() + 5_000;
    while (alive() && Date.now() < deadline) {
      await sleep(100);
    }
    if (alive()) {
      process.kill(group, "SIGKILL");
    }
  }

  /**
   * CPU seconds (user + system) used so far by each process of this code-server's process group
   * whose command line matches, read from /proc (Linux), keyed by pid.
   */
  cpuSeconds(match: RegExp): Map<number, number> {
    const found = new Map<number, number>();
    const group = this.proc?.pid;
    if (!group) {
      return found;
    }
    for (const entry of fs.readdirSync("/proc")) {
      if (!/^\d+$/.test(entry)) {
        continue;
      }
      try {
        const stat = fs.readFileSync(`/proc/${entry}/stat`, "utf8");
        // Fields after the command's closing parenthesis: pgrp is the 3rd, utime the 12th, stime the 13th.
        const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
        if (Number(fields[2]) !== group) {
          continue;
        }
        const cmdline = fs.readFileSync(`/proc/${entry}/cmdline`, "utf8").replace(/\0/g, " ");
        if (match.test(cmdline)) {
          found.set(Number(entry), (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS);
        }
      } catch {
        // the process ended meanwhile
      }
    }
    return found;
  }

  /** The extension's own log ("Ralph" output channel) as VS Code wrote it to disk, or "". */
  extensionLog(): string {
    const logs = path.join(this.userDataDir, "logs");
    if (!fs.existsSync(logs)) {
      return "";
    }
    const found = (fs.readdirSync(logs, { recursive: true }) as string[])
      .filter((f) => f.endsWith(path.join("ralph-lsp.ralph-lsp", "Ralph.log")))
      .sort();
    const last = found[found.length - 1];
    return last ? fs.readFileSync(path.join(logs, last), "utf8") : "";
  }

  /** Keeps VS Code's logs (the extension host log holds the language server's stderr). */
  saveLogs(dest: string): void {
    const logs = path.join(this.userDataDir, "logs");
    if (fs.existsSync(logs)) {
      fs.cpSync(logs, dest, { recursive: true });
    }
  }

  cleanup(): void {
    fs.rmSync(this.tmp, { recursive: true, force: true });
  }
}

/** Chromium with every request that is not to 127.0.0.1 aborted. */
export async function launchBrowser(profileDir: string, executablePath: string): Promise<BrowserContext> {
  const context = await chromium.launchPersistentContext(profileDir, {
    executablePath,
    headless: true,
    viewport: { width: 1400, height: 900 },
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--disable-dev-shm-usage",
    ],
  });
  await context.route("**/*", (route) => {
    const host = new URL(route.request().url()).hostname;
    return host === "127.0.0.1" ? route.continue() : route.abort();
  });
  return context;
}

/** The few things a person does in the workbench. */
export class Workbench {
  constructor(readonly page: Page) {
    page.setDefaultTimeout(TIMEOUT);
  }

  /** The workbench of `server` on `folder`, with `file` open in an editor. */
  async openFolder(server: CodeServer, folder: string, file: string): Promise<void> {
    await this.open(`http://127.0.0.1:${server.port}/?folder=${encodeURIComponent(folder)}`);
    await this.openFile(file);
  }

  async open(url: string): Promise<void> {
    await this.page.goto(url);
    await this.page.locator(".monaco-workbench").waitFor();
    await this.page.locator(".part.statusbar").waitFor();
  }

  private get quickInput(): Locator {
    return this.page.locator(".quick-input-widget");
  }

  /** Picks the row holding `text` in the open quick input (after typing `filter` into it). */
  async quickPick(filter: string | undefined, text: string): Promise<void> {
    const input = this.quickInput.locator("input").first();
    await input.waitFor();
    if (filter !== undefined) {
      await input.fill(filter);
    }
    await this.quickInput.locator(".quick-input-list .monaco-list-row", { hasText: text }).first().waitFor();
    await input.press("Enter");
  }

  /** Runs a command from the palette (F1), e.g. "Ralph: Run change". */
  async command(title: string): Promise<void> {
    await this.page.locator(".monaco-workbench").focus();
    await this.page.keyboard.press("F1");
    await this.quickPick(`>${title}`, title);
  }

  /**
   * Opens a file through Quick Open. Tried up to three times: a webview that has just loaded
   * (the history page) can take the focus back from the editor just opened.
   */
  async openFile(name: string): Promise<void> {
    const tab = this.page.locator(".tabs-container .tab.active", { hasText: name });
    const open = this.page.locator(".tabs-container .tab", { hasText: name });
    for (let attempt = 1; ; attempt++) {
      if (attempt > 1 && (await open.count()) > 0) {
        // Already open: its tab, as a person would. (A webview that holds the focus, like
        // the history page, can keep Ctrl+P from reaching the workbench.)
        await open.first().click();
      } else {
        await this.page.locator(".monaco-workbench").focus();
        await this.page.keyboard.press("Control+P");
        await this.quickPick(name, name);
      }
      try {
        await tab.waitFor({ timeout: attempt < 3 ? 10_000 : TIMEOUT });
        return;
      } catch (err) {
        if (attempt >= 3) {
          throw err;
        }
        await this.page.keyboard.press("Escape");
      }
    }
  }

  /** The rows of the open quick pick once one holds `expect`, and the focused one. */
  async quickPickRows(expect: string): Promise<{ rows: string[]; focused: string | undefined }> {
    const list = this.quickInput.locator(".quick-input-list .monaco-list-row");
    await list.filter({ hasText: expect }).first().waitFor();
    const rows = (await list.allInnerTexts()).map(normalize);
    const focusedRow = this.quickInput.locator(".quick-input-list .monaco-list-row.focused");
    const focused = (await focusedRow.count()) > 0 ? normalize(await focusedRow.first().innerText()) : undefined;
    return { rows, focused };
  }

  async lenses(): Promise<string[]> {
    return (await this.page.locator(".monaco-editor .codelens-decoration").allInnerTexts()).map(normalize);
  }

  /**
   * Records, inside the page, every text a list row holding `text` shows under `selector` (within
   * the workbench part `part`), from now on: a MutationObserver sees each render, so a state that lasts one refresh is not missed by
   * a poll that happens to look before and after it. `seenTexts` reads what was recorded.
   */
  async recordRowTexts(key: string, part: string, selector: string, text: string): Promise<void> {
    // In the page's own terms (this file is compiled without the DOM's types).
    const args = JSON.stringify({ key, part, selector, text });
    await this.page.evaluate(`(() => {
      const { key, part, selector, text } = ${args};
      const seen = [];
      const look = () => {
        for (const row of document.querySelectorAll(selector + " .monaco-list-row")) {
          const t = row.innerText || "";
          if (t.includes(text) && seen[seen.length - 1] !== t) {
            seen.push(t);
          }
        }
      };
      look();
      window[key + ":observer"]?.disconnect();
      const observer = new MutationObserver(look);
      observer.observe(document.querySelector(part) || document.body, { subtree: true, childList: true, characterData: true, attributes: true });
      window[key] = seen;
      window[key + ":observer"] = observer;
    })()`);
  }

  /** Stops recording for `key`; what was seen stays readable. */
  async stopRecording(key: string): Promise<void> {
    await this.page.evaluate(`window[${JSON.stringify(key + ":observer")}]?.disconnect()`);
  }

  async seenTexts(key: string): Promise<string[]> {
    const texts = (await this.page.evaluate(`window[${JSON.stringify(key)}] || []`)) as string[];
    return texts.map(normalize);
  }

  statusItem(id: string): Locator {
    return this.page.locator(`.part.statusbar [id="${id}"]`);
  }

  async statusText(id: string): Promise<string> {
    const item = this.statusItem(id);
    return (await item.count()) > 0 ? normalize(await item.first().innerText()).trim() : "";
  }

  /** The Output panel's visible text. */
  async outputText(): Promise<string> {
    const lines = this.page.locator(".part.panel .view-lines");
    return (await lines.count()) > 0 ? normalize(await lines.first().innerText()) : "";
  }

  /** Scrolls the Output panel with the mouse wheel (negative: up), as a person would. */
  async scrollOutput(deltaY: number): Promise<void> {
    const box = await this.page.locator(".part.panel .monaco-editor").first().boundingBox();
    if (!box) {
      throw new Error("the Output panel is not showing");
    }
    await this.page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
    await this.page.mouse.wheel(0, deltaY);
  }

  async notifications(): Promise<string[]> {
    return (await this.page.locator(".notifications-toasts .notification-toast").allInnerTexts()).map(normalize);
  }

  /** Polls `probe` until it returns a truthy value; the error says what was last seen. */
  async until<T>(what: string, probe: () => Promise<T | undefined | false>, timeout = TIMEOUT): Promise<T> {
    const deadline = Date.now() + timeout;
    let last: unknown;
    for (;;) {
      try {
        const v = await probe();
        if (v) {
          return v;
        }
        last = v;
      } catch (err) {
        last = err;
      }
      if (Date.now() > deadline) {
        const notes = await this.notifications().catch(() => []);
        throw new Error(
          `timed out after ${timeout / 1000} s waiting for ${what}; last probe: ${String(last)}` +
            (notes.length ? `; notifications: ${JSON.stringify(notes)}` : ""),
        );
      }
      await sleep(250);
    }
  }

  /**
   * A known workbench state for the next test: no quick input or menu, no notification, and no
   * editor but `file`. One slow step must not leave a history page or a toast over the next test.
   */
  async fresh(file: string): Promise<void> {
    await this.page.keyboard.press("Escape");
    await this.command("View: Close All Editors");
    await this.command("Notifications: Clear All Notifications");
    await this.until("no editor open", async () => (await this.page.locator(".tabs-container .tab").count()) === 0);
    await this.openFile(file);
  }

  async screenshot(file: string): Promise<void> {
    await this.page.screenshot({ path: file }).catch(() => undefined);
  }
}

/**
 * A `beforeEach` hook that starts every test after the first from a known workbench state
 * (`Workbench.fresh`), so that leftovers of one failed or slow test do not fail the next ones.
 */
export function freshBetweenTests(wb: () => Workbench, file: string): () => Promise<void> {
  let first = true;
  return async () => {
    if (first) {
      first = false;
      return;
    }
    await wb().fresh(file);
  };
}

/** The example's only change (discovered, so the example may rename it). */
export function discoverChange(root: string): string {
  const dir = path.join(root, "openspec", "changes");
  const names = fs
    .readdirSync(dir, { withFileTypes: true })
    .filter((d) => d.isDirectory() && d.name !== "archive" && fs.existsSync(path.join(dir, d.name, "tasks.md")))
    .map((d) => d.name)
    .sort();
  assert.ok(names.length > 0, `no change with a tasks.md under ${dir}`);
  return names[0] as string;
}

export function countTasks(text: string): { done: number; total: number } {
  const tasks = text.split("\n").filter((l) => /^\s*(?:[-*+]|\d{1,9}[.)])\s+\[.\]\s/.test(l));
  return { done: tasks.filter((l) => /\[[xX]\]/.test(l)).length, total: tasks.length };
}

export function normalize(text: string): string {
  return text.replace(/\u00a0/g, " ");
}
