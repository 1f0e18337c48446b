// What the Ralph view's rows say. Pure: no `vscode` import.
import type { ChangeInfo, HistoryRecord, QueueItem, QueueStatus, RunStatus } from "../protocol";
import { reviewsCost, usd } from "../money";
import { durationOf } from "./html";

function money(cost: number | null | undefined): string {
  return typeof cost === "number" && cost > 0 ? ` · ${usd(cost, 2)}` : "";
}

/** A change's row: progress, and for a running change its iteration, phase and cost. */
export function changeDescription(info: ChangeInfo, status: RunStatus | undefined): string {
  const progress = `${info.completed}/${info.total}`;
  if (status?.state === "running") {
    const phase =
      status.phase === "verifying"
        ? "verifying"
        : status.phase === "waiting"
          ? status.waiting?.kind === "rateLimit"
            ? "rate limited"
            : "waiting for network"
          : `iteration ${status.iteration}`;
    return `${progress} · ${phase}${money(status.costUsd)}${status.costEstimated && money(status.costUsd) ? " (estimate)" : ""}`;
  }
  if (info.total > 0 && info.completed === info.total) {
    return `${progress} · done`;
  }
  return progress;
}

/** A run's row: state, iterations, cost, duration, when (relative; the tooltip has the time). */
export function runLabel(r: HistoryRecord, _locale?: string, now: number = Date.now()): string {
  const its = r.iterations.length;
  const costs = r.iterations.map((i) => i.costUsd).filter((c): c is number => typeof c === "number");
  const review = reviewsCost(r.reviews);
  const cost = costs.length || review !== null ? money(costs.reduce((a, b) => a + b, 0) + (review ?? 0)) + (r.iterations.some((i) => i.costEstimated) ? " (estimate)" : "") : "";
  const duration = r.endedAt ? ` · ${durationOf(r.startedAt, r.endedAt)}` : "";
  const when = relativeTime(r.startedAt, now);
  const branch = r.branchState === "merged" || r.branchState === "needs-review" ? ` (${r.branchState})` : "";
  return `${r.state}${branch} · ${its} it${cost}${duration}${when ? ` · ${when}` : ""}`;
}

/** `just now`, `5 min ago`, `2 h ago`, `3 d ago`, `12 wk ago`; "" for a time it cannot read. */
export function relativeTime(iso: string | null | undefined, now: number = Date.now()): string {
  const then = iso ? Date.parse(iso) : NaN;
  if (Number.isNaN(then)) {
    return "";
  }
  const s = Math.max(0, Math.round((now - then) / 1000));
  if (s < 60) {
    return "just now";
  }
  const steps: [number, string][] = [
    [7 * 86400, "wk"],
    [86400, "d"],
    [3600, "h"],
    [60, "min"],
  ];
  for (const [size, unit] of steps) {
    if (s >= size) {
      return `${Math.floor(s / size)} ${unit} ago`;
    }
  }
  return "just now";
}

/** A queue's row: `Queue 2/3 · running`. */
export function queueLabel(q: QueueStatus): string {
  return `Queue ${q.position}/${q.total} · ${q.state}`;
}

/** A queued change's row: pending, running with progress, or its final state. */
export function queueItemDescription(i: QueueItem): string {
  if (i.state === "pending") {
    return "pending";
  }
  if (i.state === "running") {
    return `running · ${i.completed}/${i.total}`;
  }
  return i.runId ? `${i.state} · ${i.iterations} it` : i.state;
}
