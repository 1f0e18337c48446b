// v5 (SPEC §13): a run's review rounds on the history page: reviewer, model, verdict, the tasks
// it appended (their text in the title), what was refused and undone, and the round's cost. Pure:
// no `vscode` import. A record is a file of the workspace and may hold anything, so each round is
// read field by field and every text escaped.
import type { HistoryReviewRound } from "../protocol";
import { escapeHtml, money, num, text } from "./html";

function texts(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((s): s is string => typeof s === "string") : [];
}

/** The record's `reviews` as the page may use them: objects only, each field of its type. */
export function cleanReviews(raw: unknown): HistoryReviewRound[] {
  if (!Array.isArray(raw)) {
    return [];
  }
  return raw
    .filter((r): r is Record<string, unknown> => !!r && typeof r === "object" && !Array.isArray(r))
    .map((r) => ({
      round: num(r.round) ?? 0,
      reviewer: text(r.reviewer) ?? "?",
      model: text(r.model),
      verdict: text(r.verdict) ?? "?",
      tasksAdded: texts(r.tasksAdded),
      refusals: texts(r.refusals),
      costUsd: num(r.costUsd),
      exitCode: num(r.exitCode),
      startedAt: text(r.startedAt) ?? "",
      endedAt: text(r.endedAt) ?? "",
      ...(text(r.detail) ? { detail: text(r.detail) as string } : {}),
    }));
}

/** The review rounds' table; "" for a run no reviewer judged. */
export function reviewsSection(raw: unknown): string {
  const rounds = cleanReviews(raw);
  if (!rounds.length) {
    return "";
  }
  const rows = rounds
    .map((r) => {
      const cls = r.verdict === "approved" ? "ok" : "bad";
      const added = r.tasksAdded.length ? `<span title="${escapeHtml(r.tasksAdded.join("\n"))}">${escapeHtml(r.tasksAdded.length)}</span>` : "—";
      const refused = r.refusals.length ? `<span class="bad" title="${escapeHtml(r.refusals.join("\n"))}">${escapeHtml(r.refusals.length)} undone</span>` : "—";
      return `<tr class="review verdict-${escapeHtml(r.verdict)}"><td>${escapeHtml(r.round)}</td><td>${escapeHtml(r.reviewer)}</td><td>${escapeHtml(r.model ?? "—")}</td><td><span class="${cls}" title="${escapeHtml(r.detail ?? "")}">${escapeHtml(r.verdict)}</span></td><td>${added}</td><td>${refused}</td><td>${escapeHtml(money(r.costUsd))}</td></tr>`;
    })
    .join("\n");
  const n = rounds.length;
  return `<details class="reviews" open><summary>Review: ${escapeHtml(n)} round${n === 1 ? "" : "s"}, ${escapeHtml(rounds[n - 1]?.verdict ?? "?")} last</summary>
<table><thead><tr><th>round</th><th>reviewer</th><th>model</th><th>verdict</th><th>tasks added</th><th>refusals</th><th>cost</th></tr></thead>
<tbody>
${rows}
</tbody></table>
</details>`;
}
