// "Restore to here" on the history page (SPEC §8): what the extension does with the page's message,
// decided here without `vscode` so that it can be tested; historyPanel.ts shows the dialogs and
// calls the server. The server checks everything again (trust, a run in that work tree).
import type { ChangeRef, RestoreResult, ServerCommands } from "../protocol";

export type RestoreParams = ServerCommands["ralph.restore"]["params"];

export const RESTORE_ACTION = "Restore";
export const UNDO_ACTION = "Undo restore";
export const COPY_ACTION = "Copy undo ref";
export const TRUST_ACTION = "Manage Workspace Trust";

/** What to do with a message of the page: nothing, say no (and why), or ask first in a modal. */
export type RestorePlan =
  | { kind: "ignore" }
  | { kind: "refuse"; message: string }
  | { kind: "confirm"; message: string; detail: string; confirm: string; params: RestoreParams; what: string };

const UNTRUSTED =
  "Ralph: restore is off while this workspace is not trusted: it rewrites the work tree's files " +
  "from the repository's git checkpoints. Trust the workspace to restore.";

/** The page's `{action: "restore", runId, iteration}` (anything else is not a restore). */
export function planRestore(ref: ChangeRef, message: unknown, trusted: boolean): RestorePlan {
  if (!message || typeof message !== "object") {
    return { kind: "ignore" };
  }
  const m = message as Record<string, unknown>;
  if (m.action !== "restore") {
    return { kind: "ignore" };
  }
  const n = m.iteration;
  const runId = m.runId;
  if (typeof n !== "number" || !Number.isInteger(n) || n < 1 || typeof runId !== "string" || runId === "") {
    return { kind: "refuse", message: "Ralph: cannot restore: the page named no run and iteration." };
  }
  if (!trusted) {
    return { kind: "refuse", message: UNTRUSTED };
  }
  const what = `iteration ${n} of run ${runId}`;
  return {
    kind: "confirm",
    message: `Restore the files of ${ref.change} to ${what}?`,
    detail:
      `The work tree's files are put back as they were after ${what}: files that differ are ` +
      "rewritten and files added since are removed; ignored files are left alone. Your uncommitted " +
      "work is first saved as an undo checkpoint, so you can undo this restore. Your index, HEAD " +
      "and branches are not touched.",
    confirm: RESTORE_ACTION,
    params: { ...ref, runId, iteration: n },
    what,
  };
}

/** Undoing a restore restores its undo checkpoint (itself undoable in turn). */
export function planUndo(ref: ChangeRef, undo: string, trusted: boolean): { kind: "refuse"; message: string } | { kind: "run"; params: RestoreParams; what: string } {
  if (!trusted) {
    return { kind: "refuse", message: UNTRUSTED };
  }
  return { kind: "run", params: { ...ref, checkpoint: undo }, what: `the undo checkpoint ${undo} (the state before the restore)` };
}

export interface RestoreOutcome {
  message: string;
  /** A warning when some paths were left alone. */
  severity: "information" | "warning";
  /** The undo checkpoint: its ref, or its commit when it has no ref. */
  undo: string;
  actions: string[];
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

/** The result of a restore, naming the undo, with the actions to undo it or copy its ref. */
export function restoreOutcome(ref: ChangeRef, result: RestoreResult, what: string): RestoreOutcome {
  const undo = result.undo?.ref || result.undo?.commit || "";
  const written = Array.isArray(result.written) ? result.written.length : 0;
  const removed = Array.isArray(result.removed) ? result.removed.length : 0;
  const skipped = Array.isArray(result.skipped) ? result.skipped : [];
  const left = skipped.length
    ? ` Left alone: ${skipped.map((s) => `${String(s.path)} (${String(s.reason)})`).join("; ")}.`
    : "";
  return {
    message:
      `Ralph: restored ${ref.change} to ${what}: ${plural(written, "file")} written, ${removed} removed.${left}` +
      (undo ? ` The state before is saved as ${undo}.` : ""),
    severity: skipped.length ? "warning" : "information",
    undo,
    actions: undo ? [UNDO_ACTION, COPY_ACTION] : [],
  };
}
