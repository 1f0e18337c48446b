// The run history of one change as an HTML page for a webview (SPEC §6 v2). Pure: no `vscode`
// import; the panel passes in the nonce and the webview's CSP source. Times are local; colours come
// from VS Code's theme variables (light, dark and high contrast alike); the chart is plain SVG, so
// nothing is loaded from anywhere and the content security policy stays strict.
import type { ConformanceRow, ConformanceTable, HistoryIteration, HistoryRecord } from "../protocol";
import { reviewsCost } from "../money";
import { describeSandbox } from "../status";
import { durationOf, escapeHtml, localTime, money, num, text } from "./html";
import { queueSection, queuesOf } from "./queueHtml";
import { reviewsSection } from "./reviewRoundsHtml";

export interface ChartPoint {
  n: number;
  checked: number; // tasks checked so far (cumulative)
  cost: number; // this iteration's reported cost
}

/**
 * A record as the page may use it, whatever was planted in record.json (the server coerces too):
 * numbers are numbers, texts are texts, lists are lists; an iteration that is not an object with a
 * number `n` is left out; anything but an object with a text `runId` is no record.
 */
export function cleanRecord(raw: unknown): HistoryRecord | null {
  if (!raw || typeof raw !== "object" || Array.isArray(raw)) {
    return null;
  }
  const r = raw as Record<string, unknown>;
  const runId = text(r.runId);
  if (runId === null) {
    return null;
  }
  const iterations = (Array.isArray(r.iterations) ? r.iterations : [])
    .filter((it): it is Record<string, unknown> => !!it && typeof it === "object" && !Array.isArray(it) && num((it as Record<string, unknown>).n) !== null)
    .map((it) => ({
      ...it,
      n: num(it.n) as number,
      startedAt: text(it.startedAt),
      endedAt: text(it.endedAt),
      exitCode: num(it.exitCode),
      tasksChecked: num(it.tasksChecked),
      costUsd: num(it.costUsd),
      numTurns: num(it.numTurns),
      model: text(it.model),
      modelReason: text(it.modelReason),
      usage: it.usage && typeof it.usage === "object" && !Array.isArray(it.usage) ? it.usage : null,
      outputUri: text(it.outputUri),
      promptUri: text(it.promptUri),
      checkpoint: typeof it.checkpoint === "string" || (it.checkpoint && typeof it.checkpoint === "object") ? it.checkpoint : null,
      refusals: Array.isArray(it.refusals) ? it.refusals.filter((x) => x && typeof x === "object") : [],
      verification: Array.isArray(it.verification) ? it.verification.filter((x) => x && typeof x === "object") : null,
    })) as unknown as HistoryIteration[];
  return {
    ...(r as unknown as HistoryRecord),
    runId,
    state: text(r.state) ?? "?",
    reason: text(r.reason),
    startedAt: text(r.startedAt),
    endedAt: text(r.endedAt),
    iterations,
  } as HistoryRecord;
}

export function chartPoints(iterations: HistoryIteration[]): ChartPoint[] {
  let sum = 0;
  return iterations.map((it) => {
    sum += num(it.tasksChecked) ?? 0;
    return { n: num(it.n) ?? 0, checked: sum, cost: num(it.costUsd) ?? 0 };
  });
}

/**
 * The chart of one run: tasks checked (cumulative, a line with a point per iteration) over cost
 * per iteration (bars), iteration numbers below.
 */
export function chartSvg(points: ChartPoint[], total: number): string {
  const w = 560;
  const h = 160;
  const pad = { l: 36, r: 36, t: 12, b: 26 };
  const iw = w - pad.l - pad.r;
  const ih = h - pad.t - pad.b;
  const n = Math.max(points.length, 1);
  const step = iw / n;
  const maxTasks = Math.max(total, ...points.map((p) => p.checked), 1);
  const maxCost = Math.max(...points.map((p) => p.cost), 0);
  const x = (i: number): number => pad.l + step * (i + 0.5);
  const yTasks = (v: number): number => pad.t + ih - (v / maxTasks) * ih;
  const bars = maxCost > 0
    ? points
        .map((p, i) => {
          const bh = (p.cost / maxCost) * ih;
          return `<rect class="cost" x="${(x(i) - step * 0.3).toFixed(1)}" y="${(pad.t + ih - bh).toFixed(1)}" width="${(step * 0.6).toFixed(1)}" height="${bh.toFixed(1)}"><title>iteration ${escapeHtml(p.n)}: ${escapeHtml(money(p.cost))}</title></rect>`;
        })
        .join("")
    : "";
  const line = points.map((p, i) => `${x(i).toFixed(1)},${yTasks(p.checked).toFixed(1)}`).join(" ");
  const dots = points
    .map((p, i) => `<circle class="point" cx="${x(i).toFixed(1)}" cy="${yTasks(p.checked).toFixed(1)}" r="4"><title>iteration ${escapeHtml(p.n)}: ${escapeHtml(p.checked)}/${escapeHtml(total)} tasks</title></circle>`)
    .join("");
  const labels = points.map((p, i) => `<text class="axis" x="${x(i).toFixed(1)}" y="${h - 8}" text-anchor="middle">${escapeHtml(p.n)}</text>`).join("");
  return [
    `<svg class="chart" viewBox="0 0 ${w} ${h}" role="img" aria-label="tasks checked and cost per iteration">`,
    `<line class="grid" x1="${pad.l}" y1="${pad.t + ih}" x2="${w - pad.r}" y2="${pad.t + ih}"/>`,
    `<line class="grid" x1="${pad.l}" y1="${yTasks(total)}" x2="${w - pad.r}" y2="${yTasks(total)}"/>`,
    `<text class="axis" x="${pad.l - 6}" y="${yTasks(total) + 4}" text-anchor="end">${escapeHtml(total)}</text>`,
    `<text class="axis" x="${pad.l - 6}" y="${pad.t + ih + 4}" text-anchor="end">0</text>`,
    maxCost > 0 ? `<text class="axis cost-label" x="${w - pad.r + 4}" y="${pad.t + 10}">${escapeHtml(money(maxCost))}</text>` : "",
    bars,
    points.length ? `<polyline class="tasks" points="${line}"/>` : "",
    dots,
    labels,
    "</svg>",
  ].join("");
}

function verificationCell(it: HistoryIteration): string {
  const checks = it.verification;
  if (!checks || checks.length === 0) {
    return "—";
  }
  return checks
    .map((c) => {
      const ok = c.exitCode === 0;
      const title = ok ? "passed" : c.exitCode === null ? "could not start" : `exited ${c.exitCode}`;
      return `<span class="${ok ? "ok" : "bad"}" title="${escapeHtml(title)}">${ok ? "✓" : "✗"} ${escapeHtml(c.command)}</span>`;
    })
    .join("<br>");
}

function linksCell(record: HistoryRecord, it: HistoryIteration): string {
  const links: string[] = [];
  if (it.outputUri) {
    links.push(`<a href="#" data-action="open" data-uri="${escapeHtml(it.outputUri)}">output</a>`);
  }
  if (it.promptUri) {
    links.push(`<a href="#" data-action="open" data-uri="${escapeHtml(it.promptUri)}">prompt</a>`);
  }
  if (it.checkpoint) {
    links.push(`<a href="#" data-action="diff" data-run="${escapeHtml(record.runId)}" data-iteration="${escapeHtml(it.n)}">diff</a>`);
  }
  return links.join(" · ") || "—";
}

/** "Restore to here": only where the iteration has a checkpoint to go back to (SPEC §8). */
function restoreCell(record: HistoryRecord, it: HistoryIteration): string {
  if (!it.checkpoint) {
    return "";
  }
  const title = `Put the work tree's files back as after iteration ${it.n} of this run (asks first; undoable)`;
  return `<button type="button" class="restore" data-action="restore" data-run="${escapeHtml(record.runId)}" data-iteration="${escapeHtml(it.n)}" title="${escapeHtml(title)}">Restore to here</button>`;
}

/** `` · $x per verified task``: tasks checked up to the last iteration whose verification passed
 * (as ralph_lsp/runs/costs.py counts them); per task checked, said so, when nothing was verified. */
export function perTask(its: HistoryIteration[], spent: number): string {
  let tasks = 0;
  let verified: number | null = null;
  for (const it of its) {
    tasks += Math.max(0, it.tasksChecked ?? 0);
    const checks = it.verification;
    if (Array.isArray(checks) && checks.length) {
      verified = checks.every((c) => c.exitCode === 0) ? tasks : (verified ?? 0);
    }
  }
  if (verified) return ` · ${money(spent / verified)} per verified task`;
  if (verified === 0) return " · no task verified";
  return tasks ? ` · ${money(spent / tasks)} per task, unverified` : "";
}

/** An iteration's tokens for the cost cell's title: the receipt's (v5, cached apart), else the
 * older record's `tokens`; "" when the agent reported none. */
export function tokensTitle(it: HistoryIteration): string {
  const u = it.usage;
  if (u && ["inputTokens", "cachedInputTokens", "cacheWriteTokens", "outputTokens"].some((k) => k in u)) {
    const n = (k: string) => (typeof u[k] === "number" ? String(u[k]) : "—");
    return `tokens in ${n("inputTokens")}, cached ${n("cachedInputTokens")}, cache write ${n("cacheWriteTokens")}, out ${n("outputTokens")}`;
  }
  const t = it.tokens;
  return t ? `tokens in ${t.input ?? "—"}, out ${t.output ?? "—"}, cache read ${t.cacheRead ?? "—"}, cache write ${t.cacheWrite ?? "—"}` : "";
}

/** The receipt's cost: "—" when none was reported (never $0.0000), its source after it. */
function costCell(it: HistoryIteration): string {
  if (typeof it.costUsd !== "number") return "—";
  const estimated = it.costSource === "estimated" || it.costEstimated === true;
  return money(it.costUsd) + (estimated ? " (estimate)" : "");
}

function iterationRow(record: HistoryRecord, it: HistoryIteration): string {
  const model = it.model ? `<span title="${escapeHtml(it.modelReason ?? "")}">${escapeHtml(it.model)}</span>` : "—";
  return `<tr class="iteration">
<td>${escapeHtml(it.n)}</td><td>${model}</td><td>${escapeHtml(durationOf(it.startedAt, it.endedAt))}</td>
<td>${escapeHtml(it.exitCode ?? "—")}</td><td>${escapeHtml(it.tasksChecked ?? "—")}</td>
<td>${escapeHtml(it.numTurns ?? "—")}</td><td title="${escapeHtml(tokensTitle(it))}">${escapeHtml(costCell(it))}</td>
<td>${verificationCell(it)}</td>
<td>${it.refusals && it.refusals.length ? `<span class="bad" title="${escapeHtml(it.refusals.map((r) => String(r.rule)).join(", "))}">${escapeHtml(it.refusals.length)} refused</span>` : "—"}</td>
<td>${linksCell(record, it)}</td><td>${restoreCell(record, it)}</td></tr>`;
}

function runSection(record: HistoryRecord, total: number, locale?: string): string {
  const its = record.iterations;
  const costs = its.map((i) => i.costUsd).filter((c): c is number => typeof c === "number");
  // The review rounds' cost is part of what the run spent (as the server's end line says it).
  const review = reviewsCost(record.reviews) ?? 0;
  const spent = costs.reduce((a, b) => a + b, 0) + review;
  const idle = its.filter((i) => (i.tasksChecked ?? 0) <= 0);
  // An agent that reports no cost (none, or only zeros, as the demo does): the header says nothing of
  // money rather than "$0.0000" three times.
  const cost = spent > 0
    ? ` · ${money(spent)}${review > 0 ? ` (review ${money(review)})` : ""}${perTask(its, spent)} · ${money(idle.reduce((a, i) => a + (i.costUsd ?? 0), 0))} on ${idle.length} without progress${its.some((i) => i.costEstimated) ? " (estimate)" : ""}`
    : "";
  const rows = its.map((it) => iterationRow(record, it)).join("\n");

  return `<section class="run state-${escapeHtml(record.state)}" data-run="${escapeHtml(record.runId)}">
<h2><span class="state">${escapeHtml(record.state)}</span> · ${escapeHtml(localTime(record.startedAt, locale))}
 · ${escapeHtml(its.length)} iteration${its.length === 1 ? "" : "s"} · ${escapeHtml(durationOf(record.startedAt, record.endedAt))}${escapeHtml(cost)}</h2>
<p class="reason">${escapeHtml(record.reason ?? "")}</p>${mergeLine(record)}${branchActions(record)}
${sandboxLine(record)}
${its.length ? chartSvg(chartPoints(its), total) : ""}
<table><thead><tr><th>#</th><th>model</th><th>duration</th><th>exit</th><th>tasks</th><th>turns</th><th>cost</th><th>verification</th><th>refusals</th><th>files</th><th><span class="hidden">restore</span></th></tr></thead>
<tbody>
${rows}
</tbody></table>
${conformanceSection(record)}
${reviewsSection(record.reviews)}
</section>`;
}

const CONFORMANCE_MARKS: Record<string, [string, string]> = {
  verified: ["✓ verified", "ok"],
  failing: ["✗ failing", "bad"],
  "not-run": ["○ not run", ""],
  unlinked: ["○ no test names it", "bad"],
};

/**
 * v5 (SPEC §13): the record's conformance table as the page may use it (a record is a workspace
 * file and may hold anything): rows with a text key and a known state, texts as texts; null when
 * the record has none (an older record, or a run whose verification never ran).
 */
export function cleanConformance(raw: unknown): ConformanceTable | null {
  if (!raw || typeof raw !== "object" || Array.isArray(raw)) {
    return null;
  }
  const c = raw as Record<string, unknown>;
  if (!Array.isArray(c.rows)) {
    return null;
  }
  const rows = c.rows
    .filter((r): r is Record<string, unknown> => !!r && typeof r === "object" && !Array.isArray(r))
    .filter((r) => text(r.key) !== null && text(r.state) !== null && text(r.state) as string in CONFORMANCE_MARKS)
    .map((r) => ({
      key: text(r.key) as string,
      title: text(r.title) ?? (text(r.key) as string),
      state: text(r.state) as string,
      test: text(r.test),
      spec: text(r.spec) ?? "",
      line: num(r.line) ?? 0,
    })) as ConformanceRow[];
  const verified = rows.filter((r) => r.state === "verified").length;
  return {
    summary: text(c.summary) ?? `${verified}/${rows.length} scenario${rows.length === 1 ? "" : "s"} verified`,
    verified,
    total: rows.length,
    rows,
    warnings: (Array.isArray(c.warnings) ? c.warnings : []).filter((w): w is string => typeof w === "string"),
  };
}

/** v5 (SPEC §13): the last verification's conformance table of a run: scenario, state, test. */
export function conformanceSection(record: HistoryRecord): string {
  const table = cleanConformance(record.conformance);
  if (!table) {
    return "";
  }
  const rows = table.rows
    .map((r) => {
      const [mark, cls] = CONFORMANCE_MARKS[r.state] ?? [r.state, ""];
      return `<tr class="scenario state-${escapeHtml(r.state)}"><td title="${escapeHtml(`${r.spec}:${r.line}`)}">${escapeHtml(r.key)}</td><td><span class="${cls}">${escapeHtml(mark)}</span></td><td>${r.test ? `<code>${escapeHtml(r.test)}</code>` : "—"}</td></tr>`;
    })
    .join("\n");
  const warnings = (table.warnings ?? []).map((w) => `<li>${escapeHtml(w)}</li>`).join("");
  return `<details class="conformance" open><summary>Conformance: ${escapeHtml(table.summary)}</summary>
<table><thead><tr><th>scenario</th><th>state</th><th>test</th></tr></thead>
<tbody>
${rows}
</tbody></table>${warnings ? `\n<ul class="warnings">${warnings}</ul>` : ""}
</details>`;
}

/** v4 (SPEC §12): what became of the run's branch: the merge commit, or why it waits for a person. */
export function mergeLine(record: HistoryRecord): string {
  const m = record.merge;
  if (!m || typeof m !== "object" || !record.branchState) {
    return "";
  }
  if (record.branchState === "merged") {
    const commit = typeof m.commit === "string" ? m.commit : "";
    return `\n<p class="merge">merged into ${escapeHtml(m.into)} as <code title="${escapeHtml(commit)}">${escapeHtml(commit.slice(0, 12))}</code></p>`;
  }
  return `\n<p class="merge bad">needs review: ${escapeHtml(m.reason)}</p>`;
}

/** The run's sandbox (v4), as its first lines said it; nothing for a record from before v4. */
function sandboxLine(record: HistoryRecord): string {
  const said = describeSandbox(record.sandbox);
  return said ? `<p class="sandbox">${escapeHtml(said)}</p>` : "";
}

/** v4 (SPEC §12): a run that ended on a branch (worktree isolation, Ray) can be reviewed and merged. */
export function branchActions(record: HistoryRecord): string {
  const branch = record.worktree?.branch;
  if (typeof branch !== "string" || branch === "" || record.state === "running" || record.branchState === "merged") {
    return "";
  }
  const run = escapeHtml(record.runId);
  return `\n<p class="branch">branch <code>${escapeHtml(branch)}</code>: <button type="button" data-action="review" data-run="${run}">Review</button> <button type="button" data-action="merge" data-run="${run}">Merge</button></p>`;
}

export interface HistoryPage {
  change: string;
  runs: HistoryRecord[];
  /** The change's task count now (the chart's top line). */
  total: number;
  nonce: string;
  cspSource: string;
  locale?: string;
  /** The queues the change's runs belong to (v3; `ralph.queues`), newest first. */
  queues?: unknown[];
}

export function historyHtml(page: HistoryPage): string {
  const { nonce, cspSource } = page;
  const csp = `default-src 'none'; style-src ${cspSource} 'nonce-${nonce}'; script-src 'nonce-${nonce}'; img-src ${cspSource};`;
  const runs = (Array.isArray(page.runs) ? page.runs : []).map(cleanRecord).filter((r): r is HistoryRecord => r !== null);
  const total = num(page.total) ?? 0;
  const body = runs.length
    ? runs.map((r) => runSection(r, total, page.locale)).join("\n")
    : `<p class="empty">No run of ${escapeHtml(page.change)} yet.</p>`;
  const queues = queuesOf(page.queues, page.change);
  const queued = queues.length ? `<h2>Queues</h2>\n${queues.map((q) => queueSection(q, page.change, page.locale)).join("\n")}` : "";
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Ralph: ${escapeHtml(page.change)} runs</title>
<style nonce="${nonce}">
body { color: var(--vscode-foreground); background: var(--vscode-editor-background); font-family: var(--vscode-font-family); font-size: var(--vscode-font-size); padding: 0 16px 24px; }
h1 { font-size: 1.3em; font-weight: 600; }
h3 { font-size: 1em; font-weight: 600; margin: 1em 0 0.2em; }
h2 { font-size: 1.05em; font-weight: 600; margin: 1.4em 0 0.2em; }
.state-succeeded .state { color: var(--vscode-testing-iconPassed, var(--vscode-charts-green)); }
.state-stuck .state, .state-exhausted .state { color: var(--vscode-editorWarning-foreground, var(--vscode-charts-yellow)); }
.state-failed .state, .state-skipped .state, .state-dropped .state, .state-interrupted .state { color: var(--vscode-errorForeground, var(--vscode-charts-red)); }
.reason { margin: 0 0 0.6em; color: var(--vscode-descriptionForeground); }
svg.chart { width: 100%; max-width: 560px; height: auto; display: block; margin: 0.4em 0 0.8em; }
svg .grid { stroke: var(--vscode-editorWidget-border, var(--vscode-panel-border)); stroke-width: 1; }
svg .axis { fill: var(--vscode-descriptionForeground); font-size: 10px; }
svg .tasks { fill: none; stroke: var(--vscode-charts-blue); stroke-width: 2; }
svg .point { fill: var(--vscode-charts-blue); stroke: var(--vscode-editor-background); stroke-width: 1.5; }
svg .cost { fill: var(--vscode-charts-orange); opacity: 0.45; }
table { border-collapse: collapse; }
th, td { text-align: left; padding: 2px 10px 2px 0; border-bottom: 1px solid var(--vscode-editorWidget-border, transparent); vertical-align: top; }
th { color: var(--vscode-descriptionForeground); font-weight: normal; }
.ok { color: var(--vscode-testing-iconPassed, var(--vscode-charts-green)); }
.bad { color: var(--vscode-errorForeground, var(--vscode-charts-red)); }
a { color: var(--vscode-textLink-foreground); }
details.conformance { margin: 0.8em 0 0; }
details.conformance summary { cursor: pointer; font-weight: 600; }
a:focus { outline: 1px solid var(--vscode-focusBorder); }
button.restore { color: var(--vscode-button-secondaryForeground); background: var(--vscode-button-secondaryBackground); border: 1px solid var(--vscode-button-border, transparent); border-radius: 2px; padding: 1px 8px; font: inherit; cursor: pointer; white-space: nowrap; }
button.restore:hover { background: var(--vscode-button-secondaryHoverBackground); }
button.restore:focus { outline: 1px solid var(--vscode-focusBorder); outline-offset: 1px; }
.hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); }
</style></head>
<body>
<h1>Ralph: ${escapeHtml(page.change)}</h1>
${body}
${queued}
<script nonce="${nonce}">
const vscode = acquireVsCodeApi();
document.addEventListener("click", (e) => {
  const a = e.target.closest("[data-action]");
  if (!a) { return; }
  e.preventDefault();
  vscode.postMessage({ action: a.dataset.action, uri: a.dataset.uri, runId: a.dataset.run, iteration: Number(a.dataset.iteration), change: a.dataset.change });
});
</script>
</body></html>`;
}
