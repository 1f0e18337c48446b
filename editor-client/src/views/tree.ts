// The Ralph view (SPEC §6 v2): the active changes of each root with their progress; the running
// ones with iteration, phase and cost and inline Stop / Guide, the others with inline Run; under
// each change its recent runs. Refreshed by run statuses and by tasks.md files changing — never
// by polling.
import * as vscode from "vscode";
import type { Ctx } from "../ctx";
import type { ChangeInfo, HistoryRecord, QueueItem, QueueStatus, RunStatus } from "../protocol";
import { localTime } from "./html";
import { REFRESH_MS, coalesced } from "./soon";
import { changeDescription, queueItemDescription, queueLabel, runLabel } from "./treeModel";

const RECENT_RUNS = 5;

type Node = ChangeNode | RunNode | QueueNode | QueueItemNode;

interface QueueNode {
  kind: "queue";
  queue: QueueStatus;
}

interface QueueItemNode {
  kind: "queueItem";
  queue: QueueStatus;
  item: QueueItem;
}

interface ChangeNode {
  kind: "change";
  /** `change` and `root` make the node a change reference for the Run / Stop / Guide commands. */
  change: string;
  root: string;
  info: ChangeInfo;
  status: RunStatus | undefined;
}

interface RunNode {
  kind: "run";
  change: string;
  root: string;
  record: HistoryRecord;
}

export class RalphTree implements vscode.TreeDataProvider<Node>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<Node | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private readonly disposables: vscode.Disposable[] = [];

  constructor(private readonly ctx: Ctx) {
    const watcher = vscode.workspace.createFileSystemWatcher("**/openspec/changes/*/tasks.md");
    this.disposables.push(
      this.changed,
      watcher,
      watcher.onDidChange(() => this.refreshSoon()),
      watcher.onDidCreate(() => this.refreshSoon()),
      watcher.onDidDelete(() => this.refreshSoon()),
      // Every status changes a change's description; a run that ends adds a row under it.
      ctx.onDidRunStatus(() => this.refreshSoon()),
      ctx.onDidQueueStatus(() => this.refreshSoon()),
      ctx.onDidServerStart(() => this.refreshSoon()),
    );
  }

  /** One refresh for a burst of events (a flood of statuses while an agent works). */
  readonly refreshSoon = coalesced(() => this.changed.fire(undefined), REFRESH_MS);

  async getChildren(node?: Node): Promise<Node[]> {
    if (!this.ctx.serverRunning) {
      return [];
    }
    try {
      if (node === undefined) {
        const { changes } = await this.ctx.execute("ralph.changes", {});
        const statuses = new Map(this.ctx.runStatuses().map((s) => [`${s.root}\u0000${s.change}`, s]));
        // The newest queue this window started or heard of, above the changes (v3).
        const queues: Node[] = this.ctx.queueStatuses().slice(0, 1).map((queue) => ({ kind: "queue", queue }));
        return queues.concat(changes.map((info): Node => ({
          kind: "change",
          change: info.name,
          root: info.root,
          info,
          status: statuses.get(`${info.root}\u0000${info.name}`) ?? info.run ?? undefined,
        })));
      }
      if (node.kind === "queue") {
        return node.queue.items.map((item) => ({ kind: "queueItem", queue: node.queue, item }));
      }
      if (node.kind === "change") {
        const { runs } = await this.ctx.execute("ralph.history", { change: node.change, root: node.root });
        return (runs ?? []).slice(0, RECENT_RUNS).map((record) => ({ kind: "run", change: node.change, root: node.root, record }));
      }
    } catch {
      return []; // the server is (re)starting: the next status or file change refreshes
    }
    return [];
  }

  getTreeItem(node: Node): vscode.TreeItem {
    if (node.kind === "queue") {
      const q = node.queue;
      const item = new vscode.TreeItem(queueLabel(q), vscode.TreeItemCollapsibleState.Expanded);
      item.id = `queue:${q.queueId}`;
      item.description = q.reason ?? "";
      item.tooltip = `${q.queueId}${q.reason ? `\n${q.reason}` : ""}\nstarted ${localTime(q.startedAt)}`;
      item.contextValue = q.endedAt ? "ralph.queue.done" : "ralph.queue.running";
      item.iconPath = new vscode.ThemeIcon(q.endedAt ? "list-ordered" : "sync~spin");
      return item;
    }
    if (node.kind === "queueItem") {
      const i = node.item;
      const item = new vscode.TreeItem(i.change, vscode.TreeItemCollapsibleState.None);
      item.id = `queue:${node.queue.queueId}:${i.change}`;
      item.description = queueItemDescription(i);
      item.tooltip = i.reason ?? i.state;
      item.contextValue = "ralph.queueItem";
      const icons: Record<string, string> = { pending: "circle-large-outline", running: "sync~spin", succeeded: "check" };
      item.iconPath = new vscode.ThemeIcon(icons[i.state] ?? "warning");
      item.command = { command: "ralph.showHistory", title: "Show run history", arguments: [{ change: i.change, root: node.queue.root }] };
      return item;
    }
    if (node.kind === "change") {
      const running = node.status?.state === "running";
      const item = new vscode.TreeItem(node.change, vscode.TreeItemCollapsibleState.Collapsed);
      item.id = `change:${node.root}:${node.change}`;
      item.description = changeDescription(node.info, node.status);
      item.tooltip = node.status?.reason ? `${item.description}\n${node.status.reason}` : item.description;
      item.contextValue = running ? "ralph.change.running" : "ralph.change.idle";
      item.iconPath = new vscode.ThemeIcon(
        running ? "sync~spin" : node.info.total > 0 && node.info.completed === node.info.total ? "pass" : "circle-large-outline",
      );
      item.resourceUri = vscode.Uri.parse(node.info.tasksUri);
      item.command = { command: "vscode.open", title: "Open tasks.md", arguments: [vscode.Uri.parse(node.info.tasksUri)] };
      return item;
    }
    const r = node.record;
    const item = new vscode.TreeItem(runLabel(r), vscode.TreeItemCollapsibleState.None);
    item.id = `run:${node.root}:${r.runId}`;
    // The row says "2 h ago"; the tooltip has the full local time.
    item.tooltip = `${localTime(r.startedAt)}\n${r.reason ?? r.state}`;
    // A run that ended on a branch (worktree isolation, Ray) can be reviewed and merged.
    const onBranch = r.worktree?.branch;
    item.contextValue = typeof onBranch === "string" && r.state !== "running" ? "ralph.run.branch" : "ralph.run";
    item.iconPath = new vscode.ThemeIcon(r.state === "succeeded" ? "check" : r.state === "running" ? "sync~spin" : "warning");
    item.command = { command: "ralph.showHistory", title: "Show run history", arguments: [{ change: node.change, root: node.root }] };
    return item;
  }

  dispose(): void {
    this.refreshSoon.cancel();
    for (const d of this.disposables.splice(0)) {
      d.dispose();
    }
  }
}
