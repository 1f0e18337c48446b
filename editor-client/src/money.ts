// Money as the extension writes it, on every surface the same way the server writes it
// (ralph_lsp's `usd` and the run's end line, SPEC §15): never "$0.0000" for a cost that was
// reported, a review round's cost part of the run's total. Pure: no `vscode` import.
import type { RunCosts } from "./protocol";

/** `$0.0022` (`decimals` decimals); a real cost too small for them keeps two significant digits
 * (`$0.000039`), so a cost that was reported never reads as nothing. */
export function usd(cost: number, decimals = 4): string {
  if (cost > 0 && cost < 0.5 * 10 ** -decimals) {
    return `$${cost.toFixed(Math.min(12, 1 - Math.floor(Math.log10(cost))))}`;
  }
  return `$${cost.toFixed(decimals)}`;
}

/** A run's `costs` in one line, as the run's end line says it (`$0.2200 (review $0.0200) · $0.1100
 * per verified task · $0.0200 on 2 iterations without progress`); "" when nothing was reported
 * or spent (a free agent such as the demo). */
export function costsLine(c: RunCosts | null | undefined): string {
  if (!c || typeof c.totalUsd !== "number" || !(c.totalUsd > 0)) {
    return "";
  }
  const review = typeof c.reviewUsd === "number" && c.reviewUsd > 0 ? ` (review ${usd(c.reviewUsd)})` : "";
  const parts = [usd(c.totalUsd) + review];
  if (typeof c.perVerifiedTaskUsd === "number") {
    parts.push(`${usd(c.perVerifiedTaskUsd)} per verified task`);
  } else if (c.verifiedTasks === 0) {
    parts.push("no task verified");
  } else if (c.verifiedTasks === null && c.tasksChecked > 0) {
    parts.push(`${usd(c.totalUsd / c.tasksChecked)} per task, unverified`);
  }
  const n = c.noProgressIterations ?? 0;
  parts.push(`${usd(c.noProgressUsd ?? 0)} on ${n} iteration${n === 1 ? "" : "s"} without progress`);
  return parts.join(" · ") + (c.estimated === true ? " (estimate)" : "");
}

/** What a run record's review rounds cost together; null when none reported a cost. The record is
 * a workspace file and may hold anything: what is not a round with a finite cost of 0 or more counts
 * for nothing. */
export function reviewsCost(reviews: unknown): number | null {
  const costs = (Array.isArray(reviews) ? reviews : [])
    .map((r: unknown) => (r && typeof r === "object" ? (r as { costUsd?: unknown }).costUsd : undefined))
    .filter((c): c is number => typeof c === "number" && Number.isFinite(c) && c >= 0);
  return costs.length ? costs.reduce((a, b) => a + b, 0) : null;
}
