// Review and merge a run's branch (SPEC §12), the pure part: the review bundle as a document a
// person reads (a header, the task → iteration → commit map, then git's patch). No `vscode` import.
import { usd } from "./money";
import type { ReviewBundle } from "./protocol";

/** The bundle as a `diff` document: `#` header lines, then the patch from the merge-base. */
export function reviewText(b: ReviewBundle): string {
  const lines = [
    `# review ${b.change} run ${b.runId}: ${b.branch} against ${b.into} (merge-base ${b.base.slice(0, 12)}, tip ${b.tip.slice(0, 12)})`,
    `# run ${b.state}${b.branchState ? `, branch ${b.branchState}` : ""}`,
  ];
  if (typeof b.costUsd === "number" && b.costUsd > 0) {
    lines.push(`# cost ${usd(b.costUsd)}`);
  }
  for (const it of b.iterations) {
    lines.push(`# iteration ${it.n}: ${it.tasksChecked ?? 0} task(s) checked → ${(it.commit ?? "-").slice(0, 12)}`);
  }
  if (b.verification) {
    const words = b.verification.map((v) => `${v.command} exit ${v.exitCode ?? "—"}`).join(", ");
    lines.push(`# verification: ${words || "nothing ran"}`);
  }
  lines.push(`# ${b.files.length} file(s):`, ...b.files.map((f) => `#   ${f.status} ${f.path}`));
  const cut = b.diffTruncated ? "\n# (the patch was cut at 4 MiB: `ralph-lsp review` prints it whole)\n" : "";
  return `${lines.join("\n")}\n${b.diff}${cut}`;
}

/** One file of a review: its text at the merge-base (`original`) and at the branch tip (`modified`),
 * each null where the file does not exist on that side (added, deleted). */
export interface ReviewTriple {
  path: string;
  status: string;
  original: string | null;
  modified: string | null;
}

/** The (resource, original, modified) commits of each changed file, for `vscode.changes`. */
export function reviewTriples(b: Pick<ReviewBundle, "files" | "base" | "tip">): ReviewTriple[] {
  return b.files.map((f) => ({
    path: f.path,
    status: f.status,
    original: f.status.startsWith("A") ? null : b.base,
    modified: f.status.startsWith("D") ? null : b.tip,
  }));
}

/** An inline comment left on a line range of a reviewed file (lines 1-based, as people count). */
export interface ReviewComment {
  path: string;
  startLine: number;
  endLine: number;
  /** The code lines the comment is on, as the branch tip has them. */
  quoted: string[];
  body: string;
}

/** The guidance of a follow-up run: each comment with its path, line(s) and the quoted code. */
export function commentGuidance(change: string, branch: string, comments: ReviewComment[]): string {
  const parts = [`Review comments on ${branch} (change ${change}); address each one:`];
  comments.forEach((c, i) => {
    const where = c.startLine === c.endLine ? `line ${c.startLine}` : `lines ${c.startLine}-${c.endLine}`;
    const code = c.quoted.map((l) => `    > ${l}`).join("\n");
    parts.push(`${i + 1}. ${c.path} ${where}:${code ? `\n${code}` : ""}\n   ${c.body.trim().replace(/\n/g, "\n   ")}`);
  });
  return parts.join("\n");
}
