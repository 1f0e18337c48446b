// Review and merge a run's branch (SPEC §12), the pure part: the review bundle as a document a
// person reads (a header, the task → iteration → commit map, then git's patch). No `vscode` import.
import type { ReviewBundle } from "./protocol";

/** The bundle as a `diff` document: `#` header lines, then the patch from the merge-base. */
export function reviewText(b: ReviewBundle): string {
  const lines = [
    `# review ${b.change} run ${b.runId}: ${b.branch} against ${b.into} (merge-base ${b.base.slice(0, 12)}, tip ${b.tip.slice(0, 12)})`,
    `# run ${b.state}${b.branchState ? `, branch ${b.branchState}` : ""}`,
  ];
  if (typeof b.costUsd === "number" && b.costUsd > 0) {
    lines.push(`# cost $${b.costUsd.toFixed(4)}`);
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
