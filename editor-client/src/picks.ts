// Quick pick contents. Pure: paths come in already converted from URIs by the caller.
import type { ChangeInfo, RunStatus } from "./protocol";

export interface ChangePickItem {
  label: string;
  description: string;
  detail?: string;
  change: ChangeInfo;
}

export interface ChangePick {
  items: ChangePickItem[];
  /** Index of the item to preselect (the change the active editor belongs to), or -1. */
  active: number;
}

/** `3/10`, plus what is going on with its run. */
export function changeDescription(change: ChangeInfo): string {
  const progress = change.total === 0 ? "no tasks" : `${change.completed}/${change.total}`;
  const run = change.run;
  if (run?.state === "running") {
    return `${progress} · running, iteration ${run.iteration}`;
  }
  if (run) {
    return `${progress} · last run ${run.state}`;
  }
  return progress;
}

const norm = (p: string): string => p.replace(/\\/g, "/").replace(/\/+$/, "");

/**
 * The change that `activePath` (the file in the active editor) belongs to: its `tasks.md`, or any
 * file inside its change folder (the folder holding its `tasks.md`). -1 when none.
 */
export function activeChangeIndex(
  changes: readonly { tasksPath: string | undefined }[],
  activePath: string | undefined,
): number {
  if (activePath === undefined) {
    return -1;
  }
  const active = norm(activePath);
  const exact = changes.findIndex((c) => c.tasksPath !== undefined && norm(c.tasksPath) === active);
  if (exact >= 0) {
    return exact;
  }
  return changes.findIndex((c) => {
    if (c.tasksPath === undefined) {
      return false;
    }
    const folder = norm(c.tasksPath).replace(/\/[^/]*$/, "");
    return active.startsWith(`${folder}/`);
  });
}

/**
 * The items of "Run change": one per change, in the server's order, with its progress; the detail
 * names the root when more than one OpenSpec root is open.
 */
export function changePick(
  changes: readonly ChangeInfo[],
  toPath: (uri: string) => string | undefined,
  activePath: string | undefined,
): ChangePick {
  const roots = new Set(changes.map((c) => c.root));
  const items = changes.map((change) => {
    const item: ChangePickItem = { label: change.name, description: changeDescription(change), change };
    if (roots.size > 1) {
      item.detail = toPath(change.root) ?? change.root;
    }
    return item;
  });
  const active = activeChangeIndex(
    changes.map((c) => ({ tasksPath: c.tasksUri ? toPath(c.tasksUri) : undefined })),
    activePath,
  );
  return { items, active };
}

/** The items to stop or guide: the running runs. */
export function runPickItems(runs: readonly RunStatus[]): { label: string; description: string; run: RunStatus }[] {
  return runs.map((run) => ({
    label: run.change,
    description: `iteration ${run.iteration} · ${run.completed}/${run.total}`,
    run,
  }));
}
