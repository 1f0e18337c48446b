// The run boards: the latest status of each run and each queue this window has heard of, the
// events the views refresh from, the run-end notifications, and the `ralph.running`,
// `ralph.queueRunning` and `ralph.activeChangeRunning` contexts the menus read. Fed by the
// server's notifications (server.ts) and by command results; nothing here polls.
import * as vscode from "vscode";
import { ralphConfig } from "./client";
import { QueueEndNotifier, RunEndNotifier, type RunEndNote } from "./notify";
import { changeRefFromTasksPath, type QueueStatus, type RunStatus } from "./protocol";
import { StatusBoard } from "./status";

export class RunBoards implements vscode.Disposable {
  readonly board = new StatusBoard();
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

  /** `changed`: what the status bar shows may have changed. */
  constructor(
    private readonly output: vscode.LogOutputChannel,
    private readonly changed: () => void,
  ) {}

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
      this.changed();
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
  updateActiveContext(): void {
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

  /**
   * The server is gone. With `ralph.runsOutliveEditor` (the default) its runs go on in their own
   * runners: they are forgotten until the next server attaches to them (SPEC §9). Otherwise they
   * ended with it: running runs show as stopped.
   */
  forgetRunning(): void {
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
    this.changed();
  }

  dispose(): void {
    this.statusEmitter.dispose();
    this.queueEmitter.dispose();
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
