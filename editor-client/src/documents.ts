// The read-only virtual documents the extension opens, served by one provider: a history as
// Markdown (`ralph-history:`, kept here), an archive preview's two sides (`ralph-archive:`, kept
// here), and a file as a checkpoint or a reviewed commit has it (`ralph-checkpoint:` from the
// history page's diffs, `ralph-review:` from a review's diff; read through ralph.fileAt).
import * as vscode from "vscode";
import { ARCHIVE_SCHEME } from "./archive";
import type { ServerCommands } from "./protocol";

export const HISTORY_SCHEME = "ralph-history";
/** `ralph-checkpoint:/<path>?root=<root URI>&checkpoint=<commit>`: a file as a checkpoint has it. */
export const CHECKPOINT_SCHEME = "ralph-checkpoint";
/** `ralph-review:/<path>?root=<root URI>&commit=<id>&change=<name>`; `commit` empty: no such file. */
export const REVIEW_SCHEME = "ralph-review";

type FileAt = ServerCommands["ralph.fileAt"];

export class ReadOnlyDocuments implements vscode.TextDocumentContentProvider, vscode.Disposable {
  /** The texts of the documents kept here (histories, archive previews), by URI. */
  private readonly texts = new Map<string, string>();
  private histories = 0;
  private previews = 0;
  private readonly registrations: vscode.Disposable[];

  constructor(private readonly fileAt: (params: FileAt["params"]) => Promise<FileAt["result"]>) {
    this.registrations = [HISTORY_SCHEME, ARCHIVE_SCHEME, CHECKPOINT_SCHEME, REVIEW_SCHEME].map((scheme) =>
      vscode.workspace.registerTextDocumentContentProvider(scheme, this),
    );
  }

  /** `ralph-history:/<change> runs.md?<n>` holding a rendered history. */
  addHistory(change: string, markdown: string): vscode.Uri {
    const uri = vscode.Uri.from({ scheme: HISTORY_SCHEME, path: `/${change} runs.md`, query: String(++this.histories) });
    this.texts.set(uri.toString(), markdown);
    return uri;
  }

  /** The number of a new archive preview (its documents' paths start with it). */
  nextPreview(): number {
    this.previews += 1;
    return this.previews;
  }

  /** One side of an archive preview's diff. */
  addArchiveSide(path: string, text: string): vscode.Uri {
    const uri = vscode.Uri.from({ scheme: ARCHIVE_SCHEME, path });
    this.texts.set(uri.toString(), text);
    return uri;
  }

  provideTextDocumentContent(uri: vscode.Uri): string | Promise<string> {
    switch (uri.scheme) {
      case HISTORY_SCHEME:
        return this.texts.get(uri.toString()) ?? "This history is no longer available: run “Ralph: Show run history” again.";
      case CHECKPOINT_SCHEME:
        return uri.query === "empty" ? "" : this.atCommit(uri, "checkpoint");
      case REVIEW_SCHEME:
        return this.atCommit(uri, "commit");
      default:
        return this.texts.get(uri.toString()) ?? "";
    }
  }

  /** The file at the commit the query's `key` names ("" with none), from the server. */
  private async atCommit(uri: vscode.Uri, key: "checkpoint" | "commit"): Promise<string> {
    const q = new URLSearchParams(uri.query);
    const checkpoint = q.get(key);
    if (!checkpoint) {
      return "";
    }
    const root = q.get("root") || undefined;
    const { text } = await this.fileAt({ ...(root ? { root } : {}), checkpoint, path: uri.path.replace(/^\//, "") });
    return text;
  }

  dispose(): void {
    for (const d of this.registrations.splice(0)) {
      d.dispose();
    }
  }
}
