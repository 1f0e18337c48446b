// The extension's state: the output channel, the status bar item, the language client and the
// server's lifecycle. Commands live in commands.ts and reach the server through `execute`.
import * as fs from "node:fs";
import * as path from "node:path";
import * as vscode from "vscode";
import {
  CloseAction,
  ErrorAction,
  ExecuteCommandRequest,
  LanguageClient,
  State,
  type CloseHandlerResult,
  type ErrorHandler,
  type ErrorHandlerResult,
} from "vscode-languageclient/node";
import { createClient, ralphConfig, type ClientSetup, type StartAttempt } from "./client";
import { RESTART_SETTINGS, didChangeConfigurationParams, importStrategySetting, pythonPathSetting } from "./config";
import {
  checkServer,
  chooseInterpreter,
  installCommand,
  launcherPath,
  serverEnv,
  type ImportCheck,
  type Interpreter,
} from "./interpreter";
import {
  QUEUE_STATUS_NOTIFICATION,
  RUN_STATUS_NOTIFICATION,
  changeRefFromTasksPath,
  isQueueStatus,
  isRunStatus,
  type QueueStatus,
  type RunStatus,
  type ServerCommand,
  type ServerCommands,
} from "./protocol";
import { QueueEndNotifier, RunEndNotifier, type RunEndNote } from "./notify";
import { RestartPolicy } from "./restarts";
import { StatusBoard, type StatusView } from "./status";

/** An error whose message is meant for the user as it is (the server's text, or ours). */
export class UserFacingError extends Error {}

export class Ctx implements vscode.Disposable {
  readonly output: vscode.LogOutputChannel;
  readonly board = new StatusBoard();
  private readonly statusItem: vscode.StatusBarItem;
  private readonly disposables: vscode.Disposable[] = [];
  private client: LanguageClient | undefined;
  private clientDisposables: vscode.Disposable[] = [];
  private interpreter: Interpreter | undefined;
  private strategy: "useBundled" | "fromEnvironment" | undefined;
  private activeRunning: boolean | undefined;
  private readonly ends = new RunEndNotifier();
  private readonly queueEnds = new QueueEndNotifier();
  /** The latest status of each queue this window has heard of (v3). */
  private readonly queueBoard = new Map<string, QueueStatus>();
  private readonly queueEmitter = new vscode.EventEmitter<QueueStatus>();
  /** Every queue status the server sends. */
  readonly onDidQueueStatus = this.queueEmitter.event;
  private readonly statusEmitter = new vscode.EventEmitter<RunStatus>();
  /** Every run status the server sends (the views refresh from it; nothing polls). */
  readonly onDidRunStatus = this.statusEmitter.event;
  private readonly startEmitter = new vscode.EventEmitter<void>();
  /** The server started (again): what the views show may have changed meanwhile. */
  readonly onDidServerStart = this.startEmitter.event;
  /** Why the server is not running, when it could not be started. */
  private problem: string | undefined;
  private starting: Promise<void> | undefined;
  private readonly restarts = new RestartPolicy();
  private pushTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(readonly extension: vscode.ExtensionContext) {
    this.output = vscode.window.createOutputChannel("Ralph", { log: true });
    this.statusItem = vscode.window.createStatusBarItem("ralph.status", vscode.StatusBarAlignment.Left, 10);
    this.statusItem.name = "Ralph";
    this.statusItem.command = "ralph.showOutput";
    this.disposables.push(
      this.output,
      this.statusEmitter,
      this.startEmitter,
      this.statusItem,
      vscode.workspace.onDidChangeConfiguration((e) => this.onConfigurationChanged(e)),
      vscode.workspace.onDidGrantWorkspaceTrust(() => this.onTrustGranted()),
      vscode.window.onDidChangeActiveTextEditor(() => this.updateActiveContext()),
    );
    this.updateActiveContext();
    this.renderStatus();
    this.statusItem.show();
  }

  get trusted(): boolean {
    return vscode.workspace.isTrusted;
  }

  // ---- server lifecycle ---------------------------------------------------------------------

  /** Starts the server unless it is running or starting. Never throws: problems are reported. */
  start(): Promise<void> {
    this.starting ??= this.doStart().finally(() => {
      this.starting = undefined;
    });
    return this.starting;
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    for (const d of this.clientDisposables.splice(0)) {
      d.dispose();
    }
    if (client) {
      try {
        if (client.state !== State.Stopped) {
          await client.stop(5_000);
        }
      } catch (err) {
        this.output.warn(`Stopping the server: ${messageOf(err)}`);
      }
    }
    this.forgetRunning();
  }

  /** Restarts the server (the palette's "Restart server", a new interpreter, trust granted). */
  async restart(): Promise<void> {
    await this.starting;
    await this.stop();
    this.restarts.reset();
    await this.start();
  }

  private workspaceFolders(): string[] {
    return (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === "file").map((f) => f.uri.fsPath);
  }

  private async pickInterpreter(): Promise<Interpreter> {
    const setting = pythonPathSetting(ralphConfig());
    return chooseInterpreter({
      setting,
      folders: this.workspaceFolders(),
      trusted: this.trusted,
      pythonExtension: !setting.trim() && this.trusted ? await pythonExtensionInterpreter(this.output) : undefined,
      isFile: (p) => {
        try {
          return fs.statSync(p).isFile();
        } catch {
          return false;
        }
      },
    });
  }

  /**
   * The interpreter, launcher, working folder and environment to start the server with, once the
   * launcher has imported the server there; undefined (and reported) when it cannot start.
   */
  private async checkedLaunch(): Promise<Pick<ClientSetup, "command" | "launcher" | "cwd" | "env"> | undefined> {
    // Never the workspace: `-c`/`-m` put the working folder first on sys.path, so a repository
    // shipping its own `ralph_lsp/` would be imported instead of the installed server.
    const cwd = this.extension.extensionPath;
    const interpreter = await this.pickInterpreter();
    this.interpreter = interpreter;
    const launcher = launcherPath(this.extension.extensionPath);
    const strategy = importStrategySetting(ralphConfig());
    this.strategy = strategy;
    const env = serverEnv(process.env, strategy);
    this.output.info(`Server: ${interpreter.command} (interpreter ${interpreter.origin}), importStrategy ${strategy}`);
    const check = await checkServer(interpreter.command, launcher, cwd, env);
    if (!check.ok) {
      this.reportUnstartable(interpreter, check, this.workspaceFolders());
      return undefined;
    }
    if (check.server) {
      const from = check.server.source === "bundled" ? "bundled with the extension" : "installed for the interpreter";
      this.output.info(`Server: ralph-lsp ${check.server.version}, ${from} (${check.server.location})`);
    }
    return { command: interpreter.command, launcher, cwd, env };
  }

  private async doStart(): Promise<void> {
    if (this.client) {
      if (this.client.state !== State.Stopped) {
        return;
      }
      await this.stop();
    }
    this.problem = undefined;
    this.renderStatus();
    const launch = await this.checkedLaunch();
    if (!launch) {
      return;
    }
    const attempt: StartAttempt = { running: false, stderr: [] };
    const client = createClient({
      ...launch,
      output: this.output,
      attempt,
      errorHandler: this.errorHandler(attempt),
      maxRestartCount: this.restarts.max,
      trusted: () => this.trusted,
      showError: (err, command) => void this.showError(err, command),
    });
    this.clientDisposables.push(
      client.onNotification(RUN_STATUS_NOTIFICATION, (status: unknown) => {
        if (isRunStatus(status)) {
          this.onRunStatus(status);
        } else {
          this.output.warn(`Ignored a malformed ${RUN_STATUS_NOTIFICATION}: ${JSON.stringify(status)}`);
        }
      }),
      client.onNotification(QUEUE_STATUS_NOTIFICATION, (queue: unknown) => {
        if (isQueueStatus(queue)) {
          this.onQueueStatus(queue);
        } else {
          this.output.warn(`Ignored a malformed ${QUEUE_STATUS_NOTIFICATION}: ${JSON.stringify(queue)}`);
        }
      }),
      client.onDidChangeState((e) => {
        if (e.newState === State.Running) {
          attempt.running = true;
        }
        if (e.newState === State.Stopped) {
          this.forgetRunning();
        }
        this.renderStatus();
      }),
    );
    this.client = client;
    try {
      await client.start();
    } catch (err) {
      if (this.client === client) {
        this.client = undefined;
        for (const d of this.clientDisposables.splice(0)) {
          d.dispose();
        }
      }
      await new Promise((r) => setTimeout(r, 300)); // the dying server's last stderr lines
      const last = attempt.stderr[attempt.stderr.length - 1];
      this.fail(
        last !== undefined
          ? `the server exited while starting: ${last}`
          : `the server did not start: ${messageOf(err)}`,
      );
      return;
    }
    this.output.info("Server started.");
    this.startEmitter.fire();
    this.renderStatus();
    await this.seedStatus();
  }

  private errorHandler(attempt: StartAttempt): ErrorHandler {
    return {
      error: (_error, _message, count): ErrorHandlerResult => ({
        action: (count ?? 0) <= 3 ? ErrorAction.Continue : ErrorAction.Shutdown,
        handled: true, // logged; a lasting problem surfaces through `closed` or the start
      }),
      closed: (): CloseHandlerResult => {
        this.forgetRunning();
        if (!attempt.running) {
          // It never came up: restarting would only fail the same way. `start` reports it.
          return { action: CloseAction.DoNotRestart, handled: true };
        }
        if (this.restarts.allow()) {
          this.output.warn("The server stopped; restarting it.");
          return { action: CloseAction.Restart, handled: true };
        }
        const message = `the server stopped ${this.restarts.max + 1} times within ${
          this.restarts.windowMs / 60_000
        } minutes and will not be restarted. See the output, then run "Ralph: Restart server".`;
        this.fail(message);
        return { action: CloseAction.DoNotRestart, message: `Ralph: ${message}`, handled: true };
      },
    };
  }

  private reportUnstartable(interpreter: Interpreter, check: Exclude<ImportCheck, { ok: true }>, folders: string[]): void {
    const checkout = folders.find(
      (f) => fs.existsSync(path.join(f, "ralph_lsp", "__init__.py")) && fs.existsSync(path.join(f, "pyproject.toml")),
    );
    const install = installCommand(interpreter.command, checkout);
    let message: string;
    switch (check.reason) {
      case "not-found":
        message = `cannot start the server: the Python interpreter "${interpreter.command}" (${interpreter.origin}) was not found. Set "ralph.server.pythonPath" to a Python 3.10+ interpreter, or clear it to use python3 from PATH.`;
        break;
      case "too-old":
        message = `cannot start the server: ${check.detail.split("\n").pop() ?? ""}`;
        break;
      case "not-installed":
        message = `the Python package ralph-lsp is not installed for ${interpreter.command} (${interpreter.origin}). Install it with: ${install}`;
        break;
      default:
        message = `cannot start the server with ${interpreter.command}: ${check.detail.split("\n").pop() ?? ""}`;
    }
    if (check.detail) {
      this.output.error(check.detail);
    }
    this.fail(message, check.reason === "not-installed" ? install : undefined);
  }

  /** Records why the server is down and says it ONCE (no restart loop, no repeated pop-ups). */
  private fail(message: string, installCommandLine?: string): void {
    const first = this.problem === undefined;
    this.problem = message;
    this.output.error(message);
    this.renderStatus();
    if (!first) {
      return; // one start attempt, one message
    }
    const actions = installCommandLine ? ["Copy Install Command", "Retry", "Show Output"] : ["Open Settings", "Retry", "Show Output"];
    void vscode.window.showErrorMessage(`Ralph: ${message}`, ...actions).then(async (choice) => {
      if (choice === "Copy Install Command" && installCommandLine) {
        await vscode.env.clipboard.writeText(installCommandLine);
      } else if (choice === "Open Settings") {
        await vscode.commands.executeCommand("workbench.action.openSettings", "ralph.server.pythonPath");
      } else if (choice === "Retry") {
        await this.restart();
      } else if (choice === "Show Output") {
        this.output.show(true);
      }
    });
  }

  // ---- settings and trust ---------------------------------------------------------------------

  private onConfigurationChanged(e: vscode.ConfigurationChangeEvent): void {
    if (!e.affectsConfiguration("ralph")) {
      return;
    }
    // VS Code also reports restricted settings as changed when trust is granted: restart only
    // when the interpreter really changes.
    const restartKey = RESTART_SETTINGS.find((key) => e.affectsConfiguration(key));
    if (!restartKey) {
      this.pushSettings();
      return;
    }
    void this.pickInterpreter().then((next) => {
      if (next.command !== this.interpreter?.command || importStrategySetting(ralphConfig()) !== this.strategy) {
        this.output.info(`${restartKey} changed: restarting the server.`);
        void this.restart();
      } else {
        this.pushSettings();
      }
    });
  }

  private onTrustGranted(): void {
    this.output.info("The workspace is now trusted.");
    void this.pickInterpreter().then((next) => {
      if (!this.client || next.command !== this.interpreter?.command) {
        void this.restart(); // e.g. the workspace's .venv may be used now
        return;
      }
      this.pushSettings();
    });
  }

  /** Sends the settings soon, once: a trust grant also fires a configuration change. */
  private pushSettings(): void {
    if (this.pushTimer === undefined) {
      this.pushTimer = setTimeout(() => {
        this.pushTimer = undefined;
        this.sendSettings();
      }, 50);
    }
  }

  private sendSettings(): void {
    const client = this.client;
    if (!client || client.state !== State.Running) {
      return;
    }
    const params = didChangeConfigurationParams(ralphConfig(), this.trusted);
    client.sendNotification("workspace/didChangeConfiguration", params).then(
      () => this.output.info("Settings changed: sent them to the server."),
      (err: unknown) => this.output.warn(`Sending settings: ${messageOf(err)}`),
    );
  }

  // ---- the server's commands ------------------------------------------------------------------

  /** Runs one of the server's commands; rejects with a UserFacingError holding the server's text. */
  async execute<K extends ServerCommand>(command: K, params: ServerCommands[K]["params"]): Promise<ServerCommands[K]["result"]> {
    if (!this.client && !this.problem) {
      await this.start();
    }
    const client = this.client;
    if (!client || client.state === State.Stopped) {
      throw new UserFacingError(`the Ralph server is not running: ${this.problem ?? "it did not start"}.`);
    }
    try {
      const result: unknown = await client.sendRequest(ExecuteCommandRequest.type, { command, arguments: [params] });
      return result as ServerCommands[K]["result"];
    } catch (err) {
      throw new UserFacingError(messageOf(err));
    }
  }

  /** Shows an error from a command, with the server's text; offers trust when that is the cause. */
  async showError(err: unknown, command?: string): Promise<void> {
    const text = messageOf(err);
    this.output.error(command ? `${command}: ${text}` : text);
    const needsTrust = !this.trusted && (command === "ralph.run" || command === "ralph.runChange");
    const actions = needsTrust ? ["Manage Workspace Trust", "Show Output"] : ["Show Output"];
    const choice = await vscode.window.showErrorMessage(`Ralph: ${text}`, ...actions);
    if (choice === "Manage Workspace Trust") {
      await vscode.commands.executeCommand("workbench.trust.manage");
    } else if (choice === "Show Output") {
      this.output.show(true);
    }
  }

  // ---- run status -----------------------------------------------------------------------------

  /** Whether the server runs and answers commands. */
  get serverRunning(): boolean {
    return this.client?.state === State.Running;
  }

  /** The latest status of each run this window has heard of. */
  runStatuses(): RunStatus[] {
    return this.board.all();
  }

  onRunStatus(status: RunStatus): void {
    this.statusEmitter.fire(status);
    const note = this.ends.observe(status);
    if (note) {
      void this.tellRunEnded(note);
    }
    if (this.board.update(status)) {
      this.renderStatus();
      void vscode.commands.executeCommand("setContext", "ralph.running", this.board.running().length > 0);
      this.updateActiveContext();
    }
  }

  /** The queues this window has heard of, newest first. */
  queueStatuses(): QueueStatus[] {
    return [...this.queueBoard.values()].reverse();
  }

  onQueueStatus(queue: QueueStatus): void {
    this.queueBoard.delete(queue.queueId);
    this.queueBoard.set(queue.queueId, queue);
    this.queueEmitter.fire(queue);
    const live = [...this.queueBoard.values()].some((q) => !q.endedAt);
    void vscode.commands.executeCommand("setContext", "ralph.queueRunning", live);
    const note = this.queueEnds.observe(queue);
    if (note) {
      this.output.info(note.message);
      void this.tellRunEnded(note);
    }
  }

  /** The run-end notification, with its two buttons. */
  private async tellRunEnded(note: RunEndNote): Promise<void> {
    const show = note.severity === "information" ? vscode.window.showInformationMessage : vscode.window.showWarningMessage;
    const buttons = note.branch ? ["Review", "Merge", "Show history", "Show output"] : ["Show history", "Show output"];
    const choice = await show(note.message, ...buttons);
    const run = { change: note.change, root: note.root, runId: note.runId };
    if (choice === "Review") {
      await vscode.commands.executeCommand("ralph.reviewChangeRun", run);
    } else if (choice === "Merge") {
      await vscode.commands.executeCommand("ralph.mergeChangeRun", run);
    } else if (choice === "Show history") {
      await vscode.commands.executeCommand("ralph.showHistory", { change: note.change, root: note.root });
    } else if (choice === "Show output") {
      this.output.show(true);
    }
  }

  /**
   * `ralph.activeChangeRunning`: whether the change of the active `tasks.md` runs, so that the
   * editor-title button is ▶ or ■ for that file's change (not for whichever change runs).
   */
  private updateActiveContext(): void {
    const uri = vscode.window.activeTextEditor?.document.uri;
    const ref = uri?.scheme === "file" ? changeRefFromTasksPath(uri.fsPath) : undefined;
    const running =
      ref !== undefined &&
      this.board.running().some((r) => r.change === ref.change && sameRoot(r.root, ref.root));
    if (running !== this.activeRunning) {
      this.activeRunning = running;
      void vscode.commands.executeCommand("setContext", "ralph.activeChangeRunning", running);
    }
  }

  private async seedStatus(): Promise<void> {
    try {
      const { runs } = await this.execute("ralph.status", {});
      for (const run of runs ?? []) {
        if (isRunStatus(run)) {
          this.onRunStatus(run);
        }
      }
    } catch (err) {
      this.output.warn(`ralph.status: ${messageOf(err)}`);
    }
  }

  /**
   * The server is gone. With `ralph.runsOutliveEditor` (the default) its runs go on in their own
   * runners: they are forgotten until the next server attaches to them (SPEC §9). Otherwise they
   * ended with it: running runs show as stopped.
   */
  private forgetRunning(): void {
    const outlive = ralphConfig().get<boolean>("runsOutliveEditor", true);
    for (const run of this.board.running()) {
      if (outlive) {
        this.board.remove(run);
      } else {
        this.board.update({ ...run, state: "stopped", reason: "the server stopped" });
      }
    }
    void vscode.commands.executeCommand("setContext", "ralph.running", false);
    this.updateActiveContext();
    this.renderStatus();
  }

  private renderStatus(): void {
    let view: StatusView = this.board.view();
    if (this.problem) {
      view = { text: "$(error) Ralph", tooltip: `Ralph: ${this.problem}\n\nClick to show the output.`, tone: "error" };
    } else if (this.starting && !this.client) {
      view = { ...view, tooltip: `Starting the Ralph server…\n\n${view.tooltip}` };
    }
    this.statusItem.text = view.text;
    this.statusItem.tooltip = view.tooltip;
    this.statusItem.backgroundColor =
      view.tone === "error"
        ? new vscode.ThemeColor("statusBarItem.errorBackground")
        : view.tone === "warning"
          ? new vscode.ThemeColor("statusBarItem.warningBackground")
          : undefined;
  }

  dispose(): void {
    clearTimeout(this.pushTimer);
    for (const d of this.disposables.splice(0)) {
      d.dispose();
    }
  }
}

export function messageOf(err: unknown): string {
  if (err instanceof Error) {
    return err.message;
  }
  return typeof err === "string" ? err : JSON.stringify(err);
}

/** The subset of the Python extension's API used here (`ms-python.python`, `environments`). */
interface PythonExtensionApi {
  environments?: {
    getActiveEnvironmentPath(resource?: vscode.Uri): { path: string } | undefined;
    resolveEnvironment(env: { path: string }): Promise<{ executable?: { uri?: vscode.Uri } } | undefined>;
  };
}

/**
 * The Python extension's interpreter for the first workspace folder, when that extension is
 * installed; undefined otherwise, or when it does not answer within 10 s (never blocks the start).
 */
async function pythonExtensionInterpreter(output: vscode.LogOutputChannel): Promise<string | undefined> {
  const ext = vscode.extensions.getExtension<PythonExtensionApi>("ms-python.python");
  if (!ext) {
    return undefined;
  }
  const ask = async (): Promise<string | undefined> => {
    const api = ext.isActive ? ext.exports : await ext.activate();
    const environments = api?.environments;
    const active = environments?.getActiveEnvironmentPath(vscode.workspace.workspaceFolders?.[0]?.uri);
    if (!environments || !active) {
      return undefined;
    }
    const resolved = await environments.resolveEnvironment(active);
    return resolved?.executable?.uri?.fsPath ?? active.path;
  };
  try {
    return await Promise.race([ask(), new Promise<undefined>((r) => setTimeout(() => r(undefined), 10_000))]);
  } catch (err) {
    output.warn(`The Python extension did not give its interpreter: ${err instanceof Error ? err.message : String(err)}`);
    return undefined;
  }
}

/** Two `file:` URIs of one folder, however each was encoded. */
function sameRoot(a: string | undefined, b: string | undefined): boolean {
  if (a === undefined || b === undefined) {
    return true; // a status or ref without a root: the only root
  }
  try {
    return vscode.Uri.parse(a).fsPath === vscode.Uri.parse(b).fsPath;
  } catch {
    return a === b;
  }
}
