// Which change or run a command acts on: the one it was given (a lens's `{change, root}`, a view
// row, an editor-title button's tasks.md), else one the user picks; and the trust a run needs.
// picks.ts builds the pick lists (pure); this shows them.
import * as path from "node:path";
import * as vscode from "vscode";
import type { Ctx } from "./ctx";
import { activeChangeIndex, changePick, runPickItems } from "./picks";
import { changeRefFrom, changeRefFromTasksPath, type ChangeInfo, type ChangeRef, type RunStatus } from "./protocol";

function uriToPath(uri: string): string | undefined {
  try {
    const u = vscode.Uri.parse(uri, true);
    return u.scheme === "file" ? u.fsPath : undefined;
  } catch {
    return undefined;
  }
}

function activePath(): string | undefined {
  const uri = vscode.window.activeTextEditor?.document.uri;
  return uri?.scheme === "file" ? uri.fsPath : undefined;
}

/** A quick pick with one item made active (showQuickPick cannot preselect in single-pick mode). */
function pickOne<T extends vscode.QuickPickItem>(items: T[], active: number, title: string, placeholder: string): Promise<T | undefined> {
  return new Promise((resolve) => {
    const qp = vscode.window.createQuickPick<T>();
    qp.title = title;
    qp.placeholder = placeholder;
    qp.matchOnDescription = true;
    qp.items = items;
    const preselected = items[active];
    if (preselected) {
      qp.activeItems = [preselected];
    }
    let picked: T | undefined;
    qp.onDidAccept(() => {
      picked = qp.selectedItems[0] ?? qp.activeItems[0];
      qp.hide();
    });
    qp.onDidHide(() => {
      qp.dispose();
      resolve(picked);
    });
    qp.show();
  });
}

async function pickChange(ctx: Ctx, title: string): Promise<ChangeInfo | undefined> {
  const { changes } = await ctx.execute("ralph.changes", {});
  if (changes.length === 0) {
    void vscode.window.showInformationMessage(
      "Ralph: this workspace has no active OpenSpec change (a folder openspec/changes/<name>/ with a tasks.md).",
    );
    return undefined;
  }
  const pick = changePick(changes, uriToPath, activePath());
  const item = await pickOne(pick.items, pick.active, title, "Pick a change (progress: checked/total tasks)");
  return item?.change;
}

/** The running run to act on: the one given, the only one, or one the user picks. */
export async function pickRunning(ctx: Ctx, title: string): Promise<RunStatus | ChangeRef | undefined> {
  const { runs } = await ctx.execute("ralph.status", {});
  const running = runs.filter((r) => r.state === "running");
  if (running.length === 0) {
    void vscode.window.showInformationMessage("Ralph: no run is active.");
    return undefined;
  }
  if (running.length === 1) {
    return running[0];
  }
  const items = runPickItems(running);
  const active = activeChangeIndex(
    running.map((r) => {
      const root = uriToPath(r.root);
      return { tasksPath: root === undefined ? undefined : path.join(root, "openspec", "changes", r.change, "tasks.md") };
    }),
    activePath(),
  );
  const item = await pickOne(items, active, title, "Pick a running change");
  return item?.run;
}

/**
 * The change a command acts on when it names one: a lens's `{change, root}`, or the file of an
 * editor-title button (VS Code passes the editor's URI).
 */
export function targetOf(arg: unknown): ChangeRef | undefined {
  if (arg instanceof vscode.Uri) {
    return arg.scheme === "file" ? changeRefFromTasksPath(arg.fsPath) : undefined;
  }
  return changeRefFrom(arg);
}

/** The change a command acts on: the one it was given (a lens, a view row, a tasks.md), else one picked. */
export async function changeTarget(ctx: Ctx, arg: unknown, title: string): Promise<ChangeRef | undefined> {
  const given = targetOf(arg);
  if (given) {
    return given;
  }
  const change = await pickChange(ctx, title);
  return change ? { change: change.name, root: change.root } : undefined;
}

export async function needTrust(ctx: Ctx): Promise<boolean> {
  if (ctx.trusted) {
    return true;
  }
  const choice = await vscode.window.showWarningMessage(
    "Ralph: running a change spawns a coding agent, so it needs a trusted workspace.",
    "Manage Workspace Trust",
  );
  if (choice) {
    await vscode.commands.executeCommand("workbench.trust.manage");
  }
  return false;
}
