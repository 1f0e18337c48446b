// The server process: which interpreter starts it, starting, stopping and restarting it, the
// restart policy when it dies, saying ONCE why it cannot start, and sending it commands. It
// knows nothing of runs: what the server sends and when it starts or stops go to `ServerHooks`
// (ctx.ts wires them to the run boards and the status bar).
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
import { importStrategySetting, pythonPathSetting } from "./config";
import { UserFacingError, messageOf } from "./errors";
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
  isQueueStatus,
  isRunStatus,
  type QueueStatus,
  type RunStatus,
  type ServerCommand,
  type ServerCommands,
} from "./protocol";
import { RestartPolicy } from "./restarts";

/** What the server process tells the rest of the extension. */
export interface ServerHooks {
  onRunStatus(status: RunStatus): void;
  onQueueStatus(queue: QueueStatus): void;
  /** The server stopped or is gone (its runs are forgotten). */
  onStopped(): void;
  /** Its state or its problem changed: the status bar draws again. */
  onChanged(): void;
  /** It started (again). */
  onStarted(): Promise<void>;
  /** A lens command of the server failed. */
  showError(err: unknown, command?: string): void;
}

export class ServerProcess {
  private client: LanguageClient | undefined;
  private clientDisposables: vscode.Disposable[] = [];
  /** The interpreter and import strategy of the last start (a settings change compares them). */
  interpreter: Interpreter | undefined;
  strategy: "useBundled" | "fromEnvironment" | undefined;
  /** Why the server is not running, when it could not be started. */
  problem: string | undefined;
  private starting: Promise<void> | undefined;
  private readonly restarts = new RestartPolicy();

  constructor(
    private readonly extensionPath: string,
    private readonly output: vscode.LogOutputChannel,
    private readonly hooks: ServerHooks,
  ) {}

  /** Whether the server runs and answers commands. */
  get running(): boolean {
    return this.client?.state === State.Running;
  }

  /** The running client, if any (settings are sent through it). */
  get runningClient(): LanguageClient | undefined {
    return this.running ? this.client : undefined;
  }

  /** Whether a client exists (started, starting or restarting). */
  get hasClient(): boolean {
    return this.client !== undefined;
  }

  /** Starting, with no client yet: the status bar says so. */
  get startingFresh(): boolean {
    return this.starting !== undefined && !this.client;
  }

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
    this.hooks.onStopped();
  }

  /** Restarts the server (the palette's "Restart server", a new interpreter, trust granted). */
  async restart(): Promise<void> {
    await this.starting;
    await this.stop();
    this.restarts.reset();
    await this.start();
  }

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

  private workspaceFolders(): string[] {
    return (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === "file").map((f) => f.uri.fsPath);
  }

  /** The interpreter the settings, the workspace and the Python extension choose now. */
  async pickInterpreter(): Promise<Interpreter> {
    const setting = pythonPathSetting(ralphConfig());
    const trusted = vscode.workspace.isTrusted;
    return chooseInterpreter({
      setting,
      folders: this.workspaceFolders(),
      trusted,
      pythonExtension: !setting.trim() && trusted ? await pythonExtensionInterpreter(this.output) : undefined,
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
    const cwd = this.extensionPath;
    const interpreter = await this.pickInterpreter();
    this.interpreter = interpreter;
    const launcher = launcherPath(this.extensionPath);
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
    this.hooks.onChanged();
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
      trusted: () => vscode.workspace.isTrusted,
      showError: (err, command) => this.hooks.showError(err, command),
    });
    this.clientDisposables.push(...this.listen(client, attempt));
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
    await this.hooks.onStarted();
  }

  /** The server's status notifications and its state changes, passed on to the hooks. */
  private listen(client: LanguageClient, attempt: StartAttempt): vscode.Disposable[] {
    return [
      client.onNotification(RUN_STATUS_NOTIFICATION, (status: unknown) => {
        if (isRunStatus(status)) {
          this.hooks.onRunStatus(status);
        } else {
          this.output.warn(`Ignored a malformed ${RUN_STATUS_NOTIFICATION}: ${JSON.stringify(status)}`);
        }
      }),
      client.onNotification(QUEUE_STATUS_NOTIFICATION, (queue: unknown) => {
        if (isQueueStatus(queue)) {
          this.hooks.onQueueStatus(queue);
        } else {
          this.output.warn(`Ignored a malformed ${QUEUE_STATUS_NOTIFICATION}: ${JSON.stringify(queue)}`);
        }
      }),
      client.onDidChangeState((e) => {
        if (e.newState === State.Running) {
          attempt.running = true;
        }
        if (e.newState === State.Stopped) {
          this.hooks.onStopped();
        }
        this.hooks.onChanged();
      }),
    ];
  }

  private errorHandler(attempt: StartAttempt): ErrorHandler {
    return {
      error: (_error, _message, count): ErrorHandlerResult => ({
        action: (count ?? 0) <= 3 ? ErrorAction.Continue : ErrorAction.Shutdown,
        handled: true, // logged; a lasting problem surfaces through `closed` or the start
      }),
      closed: (): CloseHandlerResult => {
        this.hooks.onStopped();
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
    this.hooks.onChanged();
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
