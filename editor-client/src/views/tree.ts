// The Ralph view (SPEC §6 v2): the active changes of each root with their progress; the running
// ones with iteration, phase and cost and inline Stop / Guide, the others with inline Run; under
// each change its recent runs. Refreshed by run statuses and by tasks.md files changing — never
// by polling.
import * as vscode from "vscode";
import type { Ctx } from "../ctx";
import type { ChangeInfo, HistoryRecord, RunStatus } from "../protocol";
import { REFRESH_MS, coalesced } from "./soon";
import { changeDescription, runLabel } from "./treeModel";

const RECENT_RUNS = 5;

type Node = ChangeNode | RunNode;

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
        return changes.map((info) => ({
          kind: "change",
          change: info.name,
          root: info.root,
          info,
          status: statuses.get(`${info.root}\u0000${info.name}`) ?? info.run ?? undefined,
        }));
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
    item.tooltip = r.reason ?? r.state;
    item.contextValue = "ralph.run";
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
