// The extension's context: one object the commands and views are given, built from its jobs —
// the server process (server.ts), settings and trust kept in step with it (settingsSync.ts), the
// run and queue boards (runBoards.ts) and the status bar item (statusBar.ts). It only wires them:
// what the server sends goes to the boards, and the status bar draws from both.
import * as vscode from "vscode";
import { messageOf, showError } from "./errors";
import { isRunStatus, type QueueStatus, type RunStatus, type ServerCommand, type ServerCommands } from "./protocol";
import { RunBoards } from "./runBoards";
import { ServerProcess } from "./server";
import { SettingsSync } from "./settingsSync";
import { StatusBar } from "./statusBar";

export class Ctx implements vscode.Disposable {
  readonly output: vscode.LogOutputChannel;
  private readonly boards: RunBoards;
  private readonly server: ServerProcess;
  private readonly statusBar: StatusBar;
  private readonly disposables: vscode.Disposable[] = [];
  private readonly startEmitter = new vscode.EventEmitter<void>();
  /** The server started (again): what the views show may have changed meanwhile. */
  readonly onDidServerStart = this.startEmitter.event;
  /** Every run status the server sends (the views refresh from it; nothing polls). */
  readonly onDidRunStatus: vscode.Event<RunStatus>;
  /** Every queue status the server sends. */
  readonly onDidQueueStatus: vscode.Event<QueueStatus>;

  constructor(readonly extension: vscode.ExtensionContext) {
    this.output = vscode.window.createOutputChannel("Ralph", { log: true });
    this.statusBar = new StatusBar();
    this.boards = new RunBoards(this.output, () => this.renderStatus());
    this.onDidRunStatus = this.boards.onDidRunStatus;
    this.onDidQueueStatus = this.boards.onDidQueueStatus;
    this.server = new ServerProcess(extension.extensionPath, this.output, {
      onRunStatus: (status) => this.boards.onRunStatus(status),
      onQueueStatus: (queue) => this.boards.onQueueStatus(queue),
      onStopped: () => this.boards.forgetRunning(),
      onChanged: () => this.renderStatus(),
      onStarted: () => this.onServerStarted(),
      showError: (err, command) => void this.showError(err, command),
    });
    this.disposables.push(
      this.output,
      this.boards,
      this.startEmitter,
      this.statusBar,
      new SettingsSync(this.server, this.output),
      vscode.window.onDidChangeActiveTextEditor(() => this.boards.updateActiveContext()),
    );
    this.boards.updateActiveContext();
    this.renderStatus();
    this.statusBar.show();
  }

  get trusted(): boolean {
    return vscode.workspace.isTrusted;
  }

  /** Starts the server unless it is running or starting. Never throws: problems are reported. */
  start(): Promise<void> {
    return this.server.start();
  }

  stop(): Promise<void> {
    return this.server.stop();
  }

  /** Restarts the server (the palette's "Restart server", a new interpreter, trust granted). */
  restart(): Promise<void> {
    return this.server.restart();
  }

  /** Runs one of the server's commands; rejects with a UserFacingError holding the server's text. */
  execute<K extends ServerCommand>(command: K, params: ServerCommands[K]["params"]): Promise<ServerCommands[K]["result"]> {
    return this.server.execute(command, params);
  }

  /** Shows an error from a command, with the server's text; offers trust when that is the cause. */
  showError(err: unknown, command?: string): Promise<void> {
    return showError(this.output, err, command);
  }

  /** Whether the server runs and answers commands. */
  get serverRunning(): boolean {
    return this.server.running;
  }

  /** The latest status of each run this window has heard of. */
  runStatuses(): RunStatus[] {
    return this.boards.runStatuses();
  }

  onRunStatus(status: RunStatus): void {
    this.boards.onRunStatus(status);
  }

  /** The queues this window has heard of, newest first. */
  queueStatuses(): QueueStatus[] {
    return this.boards.queueStatuses();
  }

  private async onServerStarted(): Promise<void> {
    this.startEmitter.fire();
    this.renderStatus();
    try {
      const { runs } = await this.execute("ralph.status", {});
      for (const run of runs ?? []) {
        if (isRunStatus(run)) {
          this.boards.onRunStatus(run);
        }
      }
    } catch (err) {
      this.output.warn(`ralph.status: ${messageOf(err)}`);
    }
  }

  private renderStatus(): void {
    this.statusBar.render(this.boards.board.view(), this.server.problem, this.server.startingFresh);
  }

  dispose(): void {
    for (const d of this.disposables.splice(0)) {
      d.dispose();
    }
  }
}
