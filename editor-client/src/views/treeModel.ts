// What the Ralph view's rows say. Pure: no `vscode` import.
import type { ChangeInfo, HistoryRecord, RunStatus } from "../protocol";
import { durationOf, localTime } from "./historyHtml";

function money(cost: number | null | undefined): string {
  return typeof cost === "number" && cost > 0 ? ` · $${cost.toFixed(2)}` : "";
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

/** A run's row: state, iterations, cost, duration, when (local time). */
export function runLabel(r: HistoryRecord, locale?: string): string {
  const its = r.iterations.length;
  const costs = r.iterations.map((i) => i.costUsd).filter((c): c is number => typeof c === "number");
  const cost = costs.length ? money(costs.reduce((a, b) => a + b, 0)) + (r.iterations.some((i) => i.costEstimated) ? " (estimate)" : "") : "";
  const duration = r.endedAt ? ` · ${durationOf(r.startedAt, r.endedAt)}` : "";
  return `${r.state} · ${its} it${cost}${duration} · ${localTime(r.startedAt, locale)}`;
}
