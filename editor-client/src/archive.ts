// Archive in the editor (SPEC §11): the pure parts of "Ralph: Archive preview" and "Ralph: Archive
// change" — the virtual documents a diff shows and the sentence an outcome is reported with.
import type { ArchiveOutcome, RebuiltSpec } from "./protocol";

/** The URI scheme of the read-only documents an archive preview's diffs show. */
export const ARCHIVE_SCHEME = "ralph-archive";

/** The virtual paths of one spec's two sides: `/<n>/<specId>/spec.md` (`n`: one per preview). */
export function previewPaths(preview: number, spec: RebuiltSpec): { before: string; after: string } {
  const base = `/${preview}/${spec.specId}/spec.md`;
  return { before: `/before${base}`, after: `/after${base}` };
}

/** The diff editor's title for one rebuilt spec. */
export function diffTitle(change: string, spec: RebuiltSpec): string {
  const state = spec.oldText === null ? "new spec" : "current ↔ archived";
  return `${spec.specId}/spec.md (${state}, archive of ${change})`;
}

/** One line saying what an archive did, or why it did not. */
export function outcomeMessage(change: string, outcome: ArchiveOutcome): string {
  const done = outcome.archive;
  if (done) {
    const t = done.totals;
    const counts = t ? ` (+${t.added} ~${t.modified} -${t.removed} →${t.renamed})` : "";
    const specs = done.specsUpdated ? `specs updated${counts}` : "no spec changed";
    return `Ralph: archived ${change} as ${done.archivedAs}; ${specs}.`;
  }
  const why = outcome.status?.[0];
  if (!why) {
    return `Ralph: ${change} was not archived.`;
  }
  return `Ralph: ${change} was not archived: ${why.message}${why.fix ? ` ${why.fix}` : ""}`;
}
