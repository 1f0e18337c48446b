// A change's run history (the result of `ralph.history`) as a Markdown document. Pure.
import { reviewsCost, usd } from "./money";
import type { HistoryRecord } from "./protocol";
import { cleanConformance } from "./views/historyHtml";

function when(iso: string | null | undefined): string {
  if (!iso) {
    return "—";
  }
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) {
    return iso;
  }
  return d.toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z").replace(/Z$/, " UTC");
}

function duration(start: string | null | undefined, end: string | null | undefined): string {
  if (!start || !end) {
    return "—";
  }
  const ms = new Date(end).getTime() - new Date(start).getTime();
  if (!Number.isFinite(ms) || ms < 0) {
    return "—";
  }
  const s = Math.round(ms / 1000);
  return s < 60 ? `${s} s` : `${Math.floor(s / 60)} min ${s % 60} s`;
}

function money(cost: number | null | undefined): string {
  if (typeof cost !== "number") {
    return "—";
  }
  return cost > 0 && cost < 0.00005 ? usd(cost) : usd(cost).replace(/0{1,2}$/, "");
}

/** Escapes what would break a table cell or start Markdown syntax. */
export function cell(text: string | number | null | undefined): string {
  if (text === null || text === undefined || text === "") {
    return "—";
  }
  return String(text).replace(/\\/g, "\\\\").replace(/\|/g, "\\|").replace(/[\r\n]+/g, " ").replace(/([*_`<>[\]])/g, "\\$1");
}

export function totalCost(record: HistoryRecord): number | null {
  const costs = record.iterations.map((i) => i.costUsd).filter((c): c is number => typeof c === "number");
  const review = reviewsCost(record.reviews);
  return costs.length > 0 || review !== null ? costs.reduce((a, b) => a + b, 0) + (review ?? 0) : null;
}

export function formatHistory(change: string, runs: readonly HistoryRecord[]): string {
  const out: string[] = [`# Ralph runs of \`${change.replace(/`/g, "'")}\``, ""];
  if (runs.length === 0) {
    out.push("No run yet.", "");
    return out.join("\n");
  }
  out.push("| run | state | reason | started | ended | iterations | cost |", "|---|---|---|---|---|---|---|");
  for (const r of runs) {
    out.push(
      `| ${cell(r.runId)} | ${cell(r.state)} | ${cell(r.reason)} | ${cell(when(r.startedAt))} | ${cell(when(r.endedAt))} | ${r.iterations.length} | ${money(totalCost(r))}${r.iterations.some((i) => i.costEstimated) ? " (estimate)" : ""} |`,
    );
  }
  for (const r of runs) {
    out.push("", `## ${cell(r.runId)}: ${cell(r.state)}`, "");
    out.push(`- Started ${when(r.startedAt)}, ended ${when(r.endedAt)} (${duration(r.startedAt, r.endedAt)})`);
    if (r.reason) {
      out.push(`- Reason: ${cell(r.reason)}`);
    }
    if (r.iterations.length > 0) {
      out.push("", "| # | started | duration | exit code | tasks checked | turns | cost |", "|---|---|---|---|---|---|---|");
      for (const it of r.iterations) {
        out.push(
          `| ${it.n} | ${cell(when(it.startedAt))} | ${duration(it.startedAt, it.endedAt)} | ${cell(it.exitCode)} | ${cell(it.tasksChecked)} | ${cell(it.numTurns)} | ${money(it.costUsd)}${it.costEstimated ? " (estimate)" : ""} |`,
        );
      }
    }
    const table = cleanConformance(r.conformance);
    if (table) {
      out.push("", `Conformance: ${cell(table.summary)}`, "", "| scenario | state | test |", "|---|---|---|");
      for (const row of table.rows) {
        out.push(`| ${cell(row.key)} | ${cell(row.state)} | ${cell(row.test)} |`);
      }
    }
    if (r.transitions.length > 0) {
      out.push("", "Transitions:", "");
      for (const t of r.transitions) {
        out.push(`- ${when(t.at)}: ${cell(t.state)}${t.reason ? ` (${cell(t.reason)})` : ""}`);
      }
    }
    if (r.guidance.length > 0) {
      out.push("", "Guidance:", "");
      for (const g of r.guidance) {
        const delivered = g.deliveredIn === null ? "not delivered" : `delivered in iteration ${g.deliveredIn}`;
        out.push(`- ${when(g.at)} (${delivered}): ${cell(g.text)}`);
      }
    }
  }
  out.push("");
  return out.join("\n");
}
