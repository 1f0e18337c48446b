// When a run ends, say so once (SPEC §6 v2). Pure: no `vscode` import; ctx.ts shows what it returns.
import { isFinalState, type QueueStatus, type RunStatus } from "./protocol";

export interface RunEndNote {
  severity: "information" | "warning";
  message: string;
  /** The change the buttons (Show history, Show output) act on. */
  change: string;
  root: string;
  /** v4 (SPEC §12): the run and the branch it ended on (worktree isolation): "Review", "Merge". */
  runId?: string;
  branch?: string;
}

/**
 * Watches statuses and returns a note the first time a run that was seen running reaches a final
 * state; never a second one for the same run, and none for runs that had ended before this window
 * saw them (the statuses read at start-up).
 */
export class RunEndNotifier {
  private readonly seenRunning = new Set<string>();
  private readonly told = new Set<string>();

  observe(status: RunStatus): RunEndNote | undefined {
    if (status.queue) {
      return undefined; // a run of a queue: the queue's end is told once, for all (QueueEndNotifier)
    }
    if (status.state === "running") {
      this.seenRunning.add(status.runId);
      return undefined;
    }
    if (!isFinalState(status.state) || !this.seenRunning.has(status.runId) || this.told.has(status.runId)) {
      return undefined;
    }
    this.told.add(status.runId);
    this.seenRunning.delete(status.runId);
    const reason = status.reason ? `: ${status.reason}` : "";
    if (status.state === "planned") {
      return plannedNote(status);
    }
    return {
      severity: status.state === "succeeded" ? "information" : "warning",
      message: `Ralph: ${status.change} ${status.state} (${status.completed}/${status.total} tasks)${reason}`,
      change: status.change,
      root: status.root,
      ...(status.worktree?.branch ? { runId: status.runId, branch: status.worktree.branch } : {}),
    };
  }
}

/** A planning run's end (SPEC §14): approve, revise or discard in proposal.md; its questions. */
export function plannedNote(status: RunStatus): RunEndNote {
  const questions = status.questions ?? [];
  const asked = questions.length ? ` · ${questions.length} open question(s): ${questions.join(" ")}` : "";
  return {
    severity: "information",
    message: `Ralph: ${status.change} is planned: approve it (Approve and run), revise or discard it in its proposal.md${asked}`,
    change: status.change,
    root: status.root,
  };
}

/**
 * One note when a queue ends (SPEC §9): how many changes succeeded (verified), which did not and
 * why. Never a second one for the same queue.
 */
export class QueueEndNotifier {
  private readonly told = new Set<string>();

  observe(queue: QueueStatus): RunEndNote | undefined {
    if (!queue.endedAt || this.told.has(queue.queueId)) {
      return undefined;
    }
    this.told.add(queue.queueId);
    const ok = queue.items.filter((i) => i.state === "succeeded").length;
    const others = queue.items.filter((i) => i.state !== "succeeded");
    const why = others.map((i) => `${i.change} ${i.state}${i.reason ? `: ${i.reason}` : ""}`);
    const stopped = queue.state === "stopped" ? " (stopped)" : "";
    return {
      severity: others.length === 0 ? "information" : "warning",
      message: [`Ralph: queue ended${stopped} · ${ok}/${queue.total} succeeded (verified)`, ...why].join(" · "),
      change: (others[0] ?? queue.items[0])?.change ?? "",
      root: queue.root,
    };
  }
}
