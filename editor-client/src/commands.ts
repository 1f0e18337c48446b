// The palette commands. Each is a factory over the context; `registerCommands` wires them once.
// Their ids differ from the server's own commands (ralph.run, ralph.stop, …), which the language
// client registers by itself.
import * as vscode from "vscode";
import { diffTitle, outcomeMessage, previewPaths } from "./archive";
import type { Ctx } from "./ctx";
import { UserFacingError } from "./errors";
import { formatHistory } from "./history";
import { HistoryPanels } from "./views/historyPanel";
import { planningCommands } from "./planning";
import { Reviews } from "./reviewUi";
import { RalphTree } from "./views/tree";
import type { ChangeRef } from "./protocol";
import { changeTarget, needTrust, pickRunning, targetOf } from "./targets";
import { ReadOnlyDocuments } from "./documents";

type Handler = (...args: unknown[]) => Promise<void> | void;

async function startQueue(ctx: Ctx, changes: string[], root: string | undefined): Promise<void> {
  const result = await ctx.execute("ralph.run", root ? { changes, root } : { changes });
  ctx.output.info(`Queue ${result.queueId ?? ""} started: ${changes.join(", ")}.`);
}

/** The order to run `names` in: the picked order, changed by moving one up until "Run". */
async function pickOrder(names: string[]): Promise<string[] | undefined> {
  const order = [...names];
  for (;;) {
    type Item = vscode.QuickPickItem & { move?: number };
    const items: Item[] = [
      { label: "$(run-all) Run in this order", description: order.join(" → ") },
      ...order.slice(1).map((name, i) => ({ label: `$(arrow-up) Move ${name} up`, description: `now ${i + 2} of ${order.length}`, move: i + 1 })),
    ];
    const item = await vscode.window.showQuickPick(items, { title: "Ralph: Run changes — order", placeHolder: "Run them, or move one up" });
    if (!item) {
      return undefined;
    }
    if (item.move === undefined) {
      return order;
    }
    const [moved] = order.splice(item.move, 1);
    order.splice(item.move - 1, 0, moved as string);
  }
}

/** Ralph: Run changes… — several changes as a queue; `{changes, root?}` skips the picks. */
function runChanges(ctx: Ctx): Handler {
  return async (arg) => {
    if (!(await needTrust(ctx))) {
      return;
    }
    const given = arg as { changes?: unknown; root?: unknown } | undefined;
    if (given && Array.isArray(given.changes) && given.changes.every((c) => typeof c === "string")) {
      await startQueue(ctx, given.changes as string[], typeof given.root === "string" ? given.root : undefined);
      return;
    }
    const { changes } = await ctx.execute("ralph.changes", {});
    if (changes.length === 0) {
      void vscode.window.showInformationMessage("Ralph: this workspace has no active OpenSpec change.");
      return;
    }
    const picked = await vscode.window.showQuickPick(
      changes.map((c) => ({ label: c.name, description: `${c.completed}/${c.total}`, picked: c.completed < c.total, change: c })),
      { canPickMany: true, title: "Ralph: Run changes", placeHolder: "Pick the changes to run, in this order" },
    );
    if (!picked || picked.length === 0) {
      return;
    }
    const roots = new Set(picked.map((p) => p.change.root));
    if (roots.size > 1) {
      throw new UserFacingError("a queue runs the changes of one OpenSpec root; pick changes of one root");
    }
    const order = picked.length > 1 ? await pickOrder(picked.map((p) => p.change.name)) : [picked[0]!.change.name];
    if (order) {
      await startQueue(ctx, order, picked[0]!.change.root);
    }
  };
}

/** Run all (the Ralph view): every active change with an unchecked task, in name order. */
function runAll(ctx: Ctx): Handler {
  return async () => {
    if (!(await needTrust(ctx))) {
      return;
    }
    const { changes } = await ctx.execute("ralph.changes", {});
    const open = changes.filter((c) => c.completed < c.total);
    if (open.length === 0) {
      void vscode.window.showInformationMessage("Ralph: every active change has its tasks checked.");
      return;
    }
    const root = open[0]!.root;
    const names = open.filter((c) => c.root === root).map((c) => c.name).sort();
    await startQueue(ctx, names, root);
  };
}

function stopChanges(ctx: Ctx): Handler {
  return async () => {
    const stopped = await ctx.execute("ralph.stopQueue", {});
    const dropped = stopped.dropped.length ? `; dropped ${stopped.dropped.join(", ")}` : "";
    void vscode.window.showInformationMessage(`Ralph: queue stopped (${stopped.stopped.join(", ") || "nothing running"})${dropped}.`);
  };
}

function runChange(ctx: Ctx, withGuidance = false): Handler {
  return async (arg) => {
    if (!ctx.trusted) {
      const choice = await vscode.window.showWarningMessage(
        "Ralph: running a change spawns a coding agent, so it needs a trusted workspace.",
        "Manage Workspace Trust",
      );
      if (choice) {
        await vscode.commands.executeCommand("workbench.trust.manage");
      }
      return;
    }
    const title = withGuidance ? "Ralph: Run change with guidance" : "Ralph: Run change";
    const ref = await changeTarget(ctx, arg, title);
    if (!ref) {
      return;
    }
    let guidance: string | undefined;
    if (withGuidance) {
      guidance = await askGuidance(ref.change, "A directive for the run's first iteration (it gets it once, as current direction).");
      if (guidance === undefined) {
        return;
      }
    }
    const result = await ctx.execute("ralph.run", guidance === undefined ? ref : { ...ref, guidance });
    ctx.output.info(`Run ${result.runId} of ${result.change} started.`);
  };
}

function stopRun(ctx: Ctx): Handler {
  return async (arg) => {
    const target = targetOf(arg) ?? (await pickRunning(ctx, "Ralph: Stop run"));
    if (!target) {
      return;
    }
    const ref: ChangeRef = target.root ? { change: target.change, root: target.root } : { change: target.change };
    const status = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: `Ralph: stopping ${ref.change}…` },
      () => ctx.execute("ralph.stop", ref),
    );
    ctx.onRunStatus(status);
  };
}

function sendGuidance(ctx: Ctx): Handler {
  return async (arg) => {
    const target = targetOf(arg) ?? (await pickRunning(ctx, "Ralph: Send guidance"));
    if (!target) {
      return;
    }
    const text = await askGuidance(target.change, "A directive for the next iteration's agent (it gets it once, as current direction).");
    if (text === undefined) {
      return;
    }
    const ref: ChangeRef = target.root ? { change: target.change, root: target.root } : { change: target.change };
    await ctx.execute("ralph.guide", { ...ref, text });
    void vscode.window.showInformationMessage(`Ralph: guidance queued for the next iteration of ${target.change}.`);
  };
}

/** The guidance text a person types, trimmed; undefined when they cancel. */
async function askGuidance(change: string, prompt: string): Promise<string | undefined> {
  const text = await vscode.window.showInputBox({
    title: `Ralph: guidance for ${change}`,
    prompt,
    placeHolder: "e.g. Use the existing date helpers in utils.py instead of adding new ones",
    ignoreFocusOut: true,
    validateInput: (v) => (v.trim() === "" ? "Type the guidance, or press Escape to cancel." : undefined),
  });
  return text === undefined || text.trim() === "" ? undefined : text.trim();
}

function showOutput(ctx: Ctx): Handler {
  return () => ctx.output.show(true);
}

/** The run history to look at: a chart and a row per iteration, with links (a webview). */
function showHistory(ctx: Ctx, panels: HistoryPanels): Handler {
  return async (arg) => {
    const target = await changeTarget(ctx, arg, "Ralph: Show run history");
    if (target) {
      await panels.show(target);
    }
  };
}

/** The same history as a Markdown document, to copy or share. */
function showHistoryMarkdown(ctx: Ctx, docs: ReadOnlyDocuments): Handler {
  return async (arg) => {
    const target = await changeTarget(ctx, arg, "Ralph: Show run history as Markdown");
    if (!target) {
      return;
    }
    const { runs } = await ctx.execute("ralph.history", target);
    const uri = docs.addHistory(target.change, formatHistory(target.change, runs ?? []));
    const doc = await vscode.workspace.openTextDocument(uri);
    await vscode.languages.setTextDocumentLanguage(doc, "markdown");
    await vscode.window.showTextDocument(doc, { preview: true });
  };
}

/** "Ralph: Archive preview": the rebuilt main specs as diffs, before anything is written. */
function showArchivePreview(ctx: Ctx, docs: ReadOnlyDocuments): Handler {
  return async (arg) => {
    const target = await changeTarget(ctx, arg, "Ralph: Archive preview");
    if (!target) {
      return;
    }
    const preview = await ctx.execute("ralph.archivePreview", target);
    if (!preview.archive) {
      void vscode.window.showWarningMessage(outcomeMessage(target.change, preview));
      return;
    }
    const specs = preview.specs ?? [];
    if (specs.length === 0) {
      void vscode.window.showInformationMessage(`Ralph: archiving ${target.change} changes no main spec.`);
      return;
    }
    const n = docs.nextPreview();
    for (const spec of specs) {
      const paths = previewPaths(n, spec);
      const before = docs.addArchiveSide(paths.before, spec.oldText ?? "");
      const after = docs.addArchiveSide(paths.after, spec.newText);
      await vscode.commands.executeCommand("vscode.diff", before, after, diffTitle(target.change, spec), { preview: false });
    }
  };
}

/** "Ralph: Archive change": confirm, then ralph.archiveChange (specs written, folder moved). */
function archiveChange(ctx: Ctx): Handler {
  return async (arg) => {
    const target = await changeTarget(ctx, arg, "Ralph: Archive change");
    if (!target || !(await needTrust(ctx))) {
      return;
    }
    const preview = await ctx.execute("ralph.archivePreview", target);
    const open = preview.incompleteTasks;
    const detail = `${(preview.specs ?? []).length} main spec(s) will be written` + (open ? `; ${open} task(s) are not checked.` : ".");
    const choice = await vscode.window.showWarningMessage(`Archive ${target.change}?`, { modal: true, detail }, "Archive");
    if (choice !== "Archive") {
      return;
    }
    const outcome = await ctx.execute("ralph.archiveChange", { ...target, yes: true });
    const message = outcomeMessage(target.change, outcome);
    if (outcome.archive) {
      void vscode.window.showInformationMessage(message);
    } else {
      void vscode.window.showWarningMessage(message);
    }
  };
}

/** The run a tree row, the history page or a notification names (`runId`, or a row's `record`). */
function runIdOf(arg: unknown): string | undefined {
  const a = arg as { runId?: unknown; record?: { runId?: unknown } } | undefined;
  const id = a?.runId ?? a?.record?.runId;
  return typeof id === "string" && id !== "" ? id : undefined;
}

/** v4 (SPEC §12): a run's branch against its target, from their merge-base, in the multi-file diff. */
function reviewRun(ctx: Ctx, reviews: Reviews): Handler {
  return async (arg) => {
    const target = await changeTarget(ctx, arg, "Ralph: Review run");
    if (!target) {
      return;
    }
    const runId = runIdOf(arg);
    await reviews.show(runId ? { ...target, runId } : target);
  };
}

/** v4: merge a run's branch once the merged result passes; the server notifies once. */
function mergeRun(ctx: Ctx, all: boolean): Handler {
  return async (arg) => {
    if (!(await needTrust(ctx))) {
      return;
    }
    if (all) {
      await ctx.execute("ralph.mergeAll", {});
      return;
    }
    const target = await changeTarget(ctx, arg, "Ralph: Merge run");
    if (target) {
      const runId = runIdOf(arg);
      await ctx.execute("ralph.mergeRun", runId ? { ...target, runId } : target);
    }
  };
}

function restartServer(ctx: Ctx): Handler {
  return () => ctx.restart();
}

export function registerCommands(ctx: Ctx): vscode.Disposable[] {
  const docs = new ReadOnlyDocuments((params) => ctx.execute("ralph.fileAt", params));
  const panels = new HistoryPanels(ctx);
  const tree = new RalphTree(ctx);
  const reviews = new Reviews(ctx);
  const table: Record<string, Handler> = {
    "ralph.runChange": runChange(ctx),
    "ralph.runChangeWithGuidance": runChange(ctx, true),
    "ralph.runChanges": runChanges(ctx),
    "ralph.runAll": runAll(ctx),
    "ralph.stopChanges": stopChanges(ctx),
    "ralph.stopRun": stopRun(ctx),
    "ralph.sendGuidance": sendGuidance(ctx),
    "ralph.showOutput": showOutput(ctx),
    "ralph.showHistory": showHistory(ctx, panels),
    "ralph.showHistoryMarkdown": showHistoryMarkdown(ctx, docs),
    "ralph.refreshView": () => tree.refreshSoon(),
    "ralph.restartServer": restartServer(ctx),
    "ralph.showArchivePreview": showArchivePreview(ctx, docs),
    "ralph.archive": archiveChange(ctx),
    "ralph.reviewChangeRun": reviewRun(ctx, reviews),
    "ralph.runAgainWithComments": (arg) => reviews.runAgain(arg),
    "ralph.mergeChangeRun": mergeRun(ctx, false),
    "ralph.mergeAllRuns": mergeRun(ctx, true),
    ...planningCommands(ctx, { changeTarget, needTrust }),
  };
  const disposables: vscode.Disposable[] = [
    docs,
    panels,
    tree,
    reviews,
    vscode.window.registerTreeDataProvider("ralph.changes", tree),
  ];
  for (const [id, handler] of Object.entries(table)) {
    disposables.push(
      vscode.commands.registerCommand(id, async (...args: unknown[]) => {
        try {
          await handler(...args);
        } catch (err) {
          await ctx.showError(err instanceof UserFacingError ? err.message : err, id);
        }
      }),
    );
  }
  return disposables;
}
