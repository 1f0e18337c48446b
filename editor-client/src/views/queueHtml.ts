// The queues of a change on its history page (v3): each queue's state, then a row per change
// with a link to that change's history. Pure, as historyHtml.ts is; a queue's record is a
// workspace file and is cleaned before it is shown.
import type { QueueItem, QueueStatus } from "../protocol";
import { durationOf, escapeHtml, localTime, money, num, seconds, text } from "./html";

/**
 * A queue as the page may use it (a record under .ralph/queues is a workspace file and may hold
 * anything): texts are texts, numbers numbers; an item without a text `change` is left out;
 * anything but an object with a text `queueId` and a list `items` is no queue.
 */
export function cleanQueue(raw: unknown): QueueStatus | null {
  if (!raw || typeof raw !== "object" || Array.isArray(raw)) {
    return null;
  }
  const q = raw as Record<string, unknown>;
  const queueId = text(q.queueId);
  if (queueId === null || !Array.isArray(q.items)) {
    return null;
  }
  const items = q.items
    .filter((it): it is Record<string, unknown> => !!it && typeof it === "object" && !Array.isArray(it) && text((it as Record<string, unknown>).change) !== null)
    .map((it) => ({
      change: text(it.change) as string,
      state: text(it.state) ?? "?",
      reason: text(it.reason),
      runId: text(it.runId),
      iterations: num(it.iterations) ?? 0,
      completed: num(it.completed) ?? 0,
      total: num(it.total) ?? 0,
      costUsd: num(it.costUsd),
      startedAt: text(it.startedAt),
      endedAt: text(it.endedAt),
      durationS: num(it.durationS),
      branch: text(it.branch),
    })) as QueueItem[];
  return {
    queueId,
    root: text(q.root) ?? "",
    state: text(q.state) ?? "?",
    reason: text(q.reason),
    startedAt: text(q.startedAt) ?? "",
    endedAt: text(q.endedAt),
    parallel: num(q.parallel) ?? 1,
    stopOnFailure: q.stopOnFailure === true,
    maxCostUsd: num(q.maxCostUsd),
    costUsd: num(q.costUsd),
    position: num(q.position) ?? 0,
    total: items.length,
    items,
  };
}

/** The queues that hold `change` (all of them when `change` is null), cleaned, as given. */
export function queuesOf(queues: unknown, change: string | null): QueueStatus[] {
  return (Array.isArray(queues) ? queues : [])
    .map(cleanQueue)
    .filter((q): q is QueueStatus => q !== null && (change === null || q.items.some((i) => i.change === change)));
}

function queueItemRow(item: QueueItem, current: string | null): string {
  const name = escapeHtml(item.change);
  const link = item.change === current ? `<strong>${name}</strong>` : `<a href="#" data-action="history" data-change="${name}" title="${escapeHtml(`the run history of ${item.change}`)}">${name}</a>`;
  const progress = item.total ? ` (${item.completed}/${item.total} tasks)` : "";
  return `<tr class="queue-item state-${escapeHtml(item.state)}">
<td>${link}</td><td><span class="state">${escapeHtml(item.state)}</span></td><td>${escapeHtml(item.reason ?? "—")}</td>
<td>${escapeHtml(`${item.iterations}${progress}`)}</td><td>${escapeHtml(money(item.costUsd))}</td><td>${escapeHtml(seconds(item.durationS))}</td>
<td>${escapeHtml(item.branch ?? "—")}</td></tr>`;
}

/** One queue: its state and reason, then a row per change with a link to that change's history. */
export function queueSection(queue: QueueStatus, current: string | null, locale?: string): string {
  const rows = queue.items.map((i) => queueItemRow(i, current)).join("\n");
  const budget = queue.maxCostUsd !== null ? ` of ${money(queue.maxCostUsd)}` : "";
  return `<section class="queue state-${escapeHtml(queue.state)}" data-queue="${escapeHtml(queue.queueId)}">
<h3>Queue <span class="state">${escapeHtml(queue.state)}</span> · ${escapeHtml(localTime(queue.startedAt, locale))} · ${escapeHtml(`${queue.position}/${queue.total}`)}
 · ${escapeHtml(durationOf(queue.startedAt, queue.endedAt))} · ${escapeHtml(money(queue.costUsd) + budget)}</h3>
<p class="reason">${escapeHtml(queue.reason ?? "")}</p>
<table><thead><tr><th>change</th><th>state</th><th>reason</th><th>iterations</th><th>cost</th><th>duration</th><th>branch</th></tr></thead>
<tbody>
${rows}
</tbody></table>
</section>`;
}
