// "Ralph: Review run" in VS Code's own editors (SPEC §12): the run's changes in the multi-file
// diff editor (`vscode.changes`, merge-base → branch tip, each file served read-only by the
// server's `ralph.fileAt`), the task → iteration → commit map beside it, and inline comments on
// the tip side that become the guidance of a follow-up run on the same branch.
import { randomBytes } from "node:crypto";
import * as vscode from "vscode";
import type { Ctx } from "./ctx";
import { REVIEW_SCHEME } from "./documents";
import type { ChangeRef, ReviewBundle } from "./protocol";
import { commentGuidance, reviewTriples, type ReviewComment } from "./review";
import { reviewHtml } from "./views/reviewHtml";

/** The review's document of `path` at `commit` (documents.ts serves it). */
function reviewUri(root: string | undefined, change: string, path: string, commit: string | null): vscode.Uri {
  const q = new URLSearchParams({ root: root ?? "", change, commit: commit ?? "" });
  return vscode.Uri.from({ scheme: REVIEW_SCHEME, path: `/${path}`, query: q.toString() });
}

/** The review open for each change (its bundle), so comments know their branch and tip. */
interface OpenReview {
  ref: ChangeRef;
  bundle: ReviewBundle;
}

export class Reviews implements vscode.Disposable {
  private readonly open = new Map<string, OpenReview>();
  /** The page beside each change's diff (one per change, reused). */
  private readonly pages = new Map<string, vscode.WebviewPanel>();
  private readonly controller: vscode.CommentController;
  private readonly threads: vscode.CommentThread[] = [];
  private readonly disposables: vscode.Disposable[] = [];

  constructor(private readonly ctx: Ctx) {
    this.controller = vscode.comments.createCommentController("ralph.review", "Ralph review");
    // Comments go on the tip side only: that is the code the follow-up run changes.
    this.controller.commentingRangeProvider = {
      provideCommentingRanges: (doc) => {
        const q = new URLSearchParams(doc.uri.query);
        const review = this.open.get(q.get("change") ?? "");
        const onTip = doc.uri.scheme === REVIEW_SCHEME && review !== undefined && q.get("commit") === review.bundle.tip;
        return onTip && doc.lineCount > 0 ? [new vscode.Range(0, 0, doc.lineCount - 1, 0)] : [];
      },
    };
    this.controller.options = { prompt: "Comment for the follow-up run", placeHolder: "What should the agent change here?" };
    this.disposables.push(
      this.controller,
      vscode.commands.registerCommand("ralph.reviewComment", (reply: vscode.CommentReply) => this.addComment(reply)),
    );
  }

  /** The multi-file diff of the run's branch, and the map, verification and cost beside it. */
  async show(ref: ChangeRef & { runId?: string }): Promise<void> {
    const bundle = await this.ctx.execute("ralph.reviewRun", ref);
    this.open.set(ref.change, { ref: { change: ref.change, ...(ref.root ? { root: ref.root } : {}) }, bundle });
    const base = ref.root ? vscode.Uri.parse(ref.root, true) : vscode.workspace.workspaceFolders?.[0]?.uri;
    const changes = reviewTriples(bundle).map((t) => [
      base ? vscode.Uri.joinPath(base, t.path) : reviewUri(ref.root, ref.change, t.path, bundle.tip),
      reviewUri(ref.root, ref.change, t.path, t.original),
      reviewUri(ref.root, ref.change, t.path, t.modified),
    ]);
    const title = `Review ${bundle.change}: ${bundle.branch} ↔ ${bundle.into}`;
    this.showPage(bundle);
    if (changes.length === 0) {
      void vscode.window.showInformationMessage(`Ralph: ${bundle.branch} changes nothing against ${bundle.into}.`);
      return;
    }
    await vscode.commands.executeCommand("vscode.changes", title, changes);
  }

  /** The map, verification and cost as a rendered page beside the diff, as the history page is. */
  private showPage(bundle: ReviewBundle): void {
    let panel = this.pages.get(bundle.change);
    if (panel) {
      panel.reveal(vscode.ViewColumn.Two, true);
    } else {
      const created = vscode.window.createWebviewPanel(
        "ralph.review",
        `Ralph: ${bundle.change} review`,
        { viewColumn: vscode.ViewColumn.Two, preserveFocus: true },
        { enableScripts: false, localResourceRoots: [] },
      );
      created.onDidDispose(() => this.pages.delete(bundle.change));
      this.pages.set(bundle.change, created);
      panel = created;
    }
    panel.webview.html = reviewHtml({ bundle, nonce: randomBytes(16).toString("base64"), cspSource: panel.webview.cspSource });
  }

  private addComment(reply: vscode.CommentReply): void {
    const thread = reply.thread;
    const comment: vscode.Comment = {
      body: new vscode.MarkdownString(reply.text),
      mode: vscode.CommentMode.Preview,
      author: { name: "You" },
    };
    thread.comments = [...thread.comments, comment];
    thread.canReply = true;
    thread.contextValue = "ralphReview";
    if (!this.threads.includes(thread)) {
      this.threads.push(thread);
    }
  }

  /** The comments left on one change's review, with the code lines they are on. */
  private async comments(change: string): Promise<ReviewComment[]> {
    const found: ReviewComment[] = [];
    for (const t of this.threads) {
      const q = new URLSearchParams(t.uri.query);
      if (t.uri.scheme !== REVIEW_SCHEME || q.get("change") !== change || t.comments.length === 0 || !t.range) {
        continue;
      }
      const doc = await vscode.workspace.openTextDocument(t.uri);
      const quoted: string[] = [];
      for (let n = t.range.start.line; n <= t.range.end.line && n < doc.lineCount; n++) {
        quoted.push(doc.lineAt(n).text);
      }
      const body = t.comments.map((c) => (typeof c.body === "string" ? c.body : c.body.value)).join("\n");
      found.push({ path: t.uri.path.replace(/^\//, ""), startLine: t.range.start.line + 1, endLine: t.range.end.line + 1, quoted, body });
    }
    return found;
  }

  /** "Run again with comments": a follow-up run of the change on its branch, guided by them. */
  async runAgain(arg: unknown): Promise<void> {
    const change = this.changeOf(arg);
    const review = change ? this.open.get(change) : undefined;
    if (!review) {
      throw new Error("no review is open: run “Ralph: Review run” and comment on a line first");
    }
    const comments = await this.comments(review.ref.change);
    if (comments.length === 0) {
      throw new Error(`no comment on the review of ${review.ref.change}: comment on a line of the diff first`);
    }
    const guidance = commentGuidance(review.ref.change, review.bundle.branch, comments);
    const result = await this.ctx.execute("ralph.run", { ...review.ref, guidance, followUp: true });
    this.ctx.output.info(`Run ${result.runId} of ${review.ref.change} started on ${review.bundle.branch} with ${comments.length} review comment(s).`);
    for (const t of this.threads.splice(0)) {
      t.dispose();
    }
  }

  private changeOf(arg: unknown): string | undefined {
    const thread = arg as vscode.CommentThread | undefined;
    if (thread && typeof thread === "object" && "uri" in thread && thread.uri instanceof vscode.Uri) {
      return new URLSearchParams(thread.uri.query).get("change") ?? undefined;
    }
    const named = (arg as { change?: unknown } | undefined)?.change;
    if (typeof named === "string") {
      return named;
    }
    return [...this.open.keys()].pop();
  }

  dispose(): void {
    for (const page of [...this.pages.values()]) {
      page.dispose();
    }
    for (const t of this.threads.splice(0)) {
      t.dispose();
    }
    for (const d of this.disposables.splice(0)) {
      d.dispose();
    }
  }
}
