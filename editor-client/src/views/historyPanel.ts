// The run history of a change in a webview panel (one per change, reused), refreshed when one of
// its runs reports a status. Links open the iteration's raw output and prompt, and its diff in
// VS Code's diff editor through the server's ralph.diff / ralph.fileAt; "Restore to here" asks in a
// modal, then calls ralph.restore and offers to undo it (restore.ts decides, this shows).
import { randomBytes } from "node:crypto";
import * as vscode from "vscode";
import type { Ctx } from "../ctx";
import { CHECKPOINT_SCHEME } from "../documents";
import type { ChangeRef } from "../protocol";
import { historyHtml } from "./historyHtml";
import { COPY_ACTION, TRUST_ACTION, UNDO_ACTION, planRestore, planUndo, restoreOutcome, type RestoreParams } from "./restore";
import { REFRESH_MS, coalesced } from "./soon";

interface Message {
  action?: string;
  uri?: string;
  runId?: string;
  iteration?: number;
  change?: string;
}

export class HistoryPanels implements vscode.Disposable {
  private readonly panels = new Map<string, { panel: vscode.WebviewPanel; ref: ChangeRef; renderSoon: ReturnType<typeof coalesced> }>();
  private readonly disposables: vscode.Disposable[] = [];

  constructor(private readonly ctx: Ctx) {
    this.disposables.push(
      // A page re-renders once per burst of its change's statuses (each render asks the server).
      ctx.onDidRunStatus((status) => this.panels.get(keyOf({ change: status.change, root: status.root }))?.renderSoon()),
      // A queue's status re-renders the pages of its changes (their queue table).
      ctx.onDidQueueStatus((queue) => {
        for (const item of queue.items) {
          this.panels.get(keyOf({ change: item.change, root: queue.root }))?.renderSoon();
        }
      }),
    );
  }

  async show(ref: ChangeRef): Promise<void> {
    const key = keyOf(ref);
    const open = this.panels.get(key);
    if (open) {
      open.panel.reveal();
      await this.render(open.panel, ref);
      return;
    }
    const panel = vscode.window.createWebviewPanel("ralph.history", `Ralph: ${ref.change} runs`, vscode.ViewColumn.Active, {
      enableScripts: true,
      localResourceRoots: [],
      retainContextWhenHidden: false,
    });
    const renderSoon = coalesced(() => void this.render(panel, ref), REFRESH_MS);
    this.panels.set(key, { panel, ref, renderSoon });
    panel.onDidDispose(() => {
      renderSoon.cancel();
      this.panels.delete(key);
    });
    panel.webview.onDidReceiveMessage((m: Message) => void this.onMessage(ref, m));
    await this.render(panel, ref);
  }

  private async render(panel: vscode.WebviewPanel, ref: ChangeRef): Promise<void> {
    const scope = ref.root ? { root: ref.root } : {};
    const [{ runs }, { changes }, queues] = await Promise.all([
      this.ctx.execute("ralph.history", ref),
      this.ctx.execute("ralph.changes", scope),
      // The queues the change's runs belong to; a server without them shows the runs alone.
      this.ctx.execute("ralph.queues", scope).then((r) => r.queues, () => []),
    ]);
    const info = changes.find((c) => c.name === ref.change);
    panel.webview.html = historyHtml({
      change: ref.change,
      runs: runs ?? [],
      total: info?.total ?? 0,
      nonce: randomBytes(16).toString("base64"),
      cspSource: panel.webview.cspSource,
      locale: vscode.env.language,
      queues,
    });
  }

  private async onMessage(ref: ChangeRef, m: Message): Promise<void> {
    try {
      if (m.action === "open" && typeof m.uri === "string" && m.uri.startsWith("file:")) {
        const doc = await vscode.workspace.openTextDocument(vscode.Uri.parse(m.uri, true));
        await vscode.window.showTextDocument(doc, { preview: true, viewColumn: vscode.ViewColumn.Beside });
      } else if (m.action === "diff" && typeof m.iteration === "number") {
        await this.diff(ref, m.runId, m.iteration);
      } else if (m.action === "history" && typeof m.change === "string" && m.change) {
        await this.show({ change: m.change, ...(ref.root ? { root: ref.root } : {}) });
      } else if ((m.action === "review" || m.action === "merge") && typeof m.runId === "string" && m.runId) {
        const command = m.action === "review" ? "ralph.reviewChangeRun" : "ralph.mergeChangeRun";
        await vscode.commands.executeCommand(command, { ...ref, runId: m.runId });
      } else if (m.action === "restore") {
        await this.restore(ref, m);
      }
    } catch (err) {
      await this.ctx.showError(err, m.action === "restore" ? "ralph.restore" : "ralph.history");
    }
  }

  /** "Restore to here": refused while untrusted, asked in a modal, then done with its undo named. */
  private async restore(ref: ChangeRef, m: Message): Promise<void> {
    const plan = planRestore(ref, m, vscode.workspace.isTrusted);
    if (plan.kind === "ignore") {
      return;
    }
    if (plan.kind === "refuse") {
      await this.refuse(plan.message);
      return;
    }
    const choice = await vscode.window.showWarningMessage(plan.message, { modal: true, detail: plan.detail }, plan.confirm);
    if (choice === plan.confirm) {
      await this.restoreTo(ref, plan.params, plan.what);
    }
  }

  private async restoreTo(ref: ChangeRef, params: RestoreParams, what: string): Promise<void> {
    const result = await this.ctx.execute("ralph.restore", params);
    const out = restoreOutcome(ref, result, what);
    this.ctx.output.info(out.message);
    const show = out.severity === "warning" ? vscode.window.showWarningMessage : vscode.window.showInformationMessage;
    const choice = await show(out.message, ...out.actions);
    if (choice === COPY_ACTION) {
      await vscode.env.clipboard.writeText(out.undo);
    } else if (choice === UNDO_ACTION) {
      const undo = planUndo(ref, out.undo, vscode.workspace.isTrusted);
      if (undo.kind === "refuse") {
        await this.refuse(undo.message);
      } else {
        await this.restoreTo(ref, undo.params, undo.what);
      }
    }
  }

  private async refuse(message: string): Promise<void> {
    this.ctx.output.warn(message);
    if ((await vscode.window.showErrorMessage(message, TRUST_ACTION)) === TRUST_ACTION) {
      await vscode.commands.executeCommand("workbench.trust.manage");
    }
  }

  /** The iteration's changed files: one in the diff editor, several through a pick first. */
  private async diff(ref: ChangeRef, runId: string | undefined, iteration: number): Promise<void> {
    const d = await this.ctx.execute("ralph.diff", { ...ref, ...(runId ? { runId } : {}), iteration });
    if (d.files.length === 0) {
      void vscode.window.showInformationMessage(`Ralph: iteration ${iteration} changed no file.`);
      return;
    }
    const pick =
      d.files.length === 1
        ? d.files[0]
        : (
            await vscode.window.showQuickPick(
              d.files.map((f) => ({ label: f.path, description: f.status, file: f })),
              { title: `Ralph: files iteration ${iteration} changed` },
            )
          )?.file;
    if (!pick) {
      return;
    }
    const empty = vscode.Uri.from({ scheme: CHECKPOINT_SCHEME, path: `/${pick.path}`, query: "empty" });
    const before = pick.beforeUri ? vscode.Uri.parse(pick.beforeUri, true) : empty;
    const after = pick.afterUri ? vscode.Uri.parse(pick.afterUri, true) : empty;
    await vscode.commands.executeCommand("vscode.diff", before, after, `${pick.path} (iteration ${iteration})`);
  }

  dispose(): void {
    for (const { panel } of this.panels.values()) {
      panel.dispose();
    }
    for (const d of this.disposables.splice(0)) {
      d.dispose();
    }
  }
}

function keyOf(ref: ChangeRef): string {
  return `${ref.root ?? ""}\u0000${ref.change}`;
}
