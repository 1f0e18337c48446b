// What the status bar item says, from the runs' statuses. Pure: no `vscode` import.
import { costsLine, usd } from "./money";
import { isFinalState, type RunSandbox, type RunStatus } from "./protocol";

export type StatusTone = "normal" | "warning" | "error";

export interface StatusView {
  text: string;
  tooltip: string;
  tone: StatusTone;
}

const FINAL_ICON: Record<string, string> = {
  succeeded: "$(check)",
  stopped: "$(debug-stop)",
  stuck: "$(warning)",
  exhausted: "$(warning)",
  failed: "$(error)",
  interrupted: "$(debug-disconnect)",
};

function progress(status: RunStatus): string {
  return `${status.completed}/${status.total}`;
}

function cost(status: RunStatus): string {
  return typeof status.costUsd === "number" && status.costUsd > 0 ? ` · ${usd(status.costUsd, 2)}${status.costEstimated ? " (estimate)" : ""}` : "";
}

/** One status as the status bar shows it, e.g. `$(sync~spin) Ralph: add-x · it 2 · 3/10`. */
export function formatStatusText(status: RunStatus): string {
  if (status.state === "running" && status.queue) {
    // A run of a queue: its place in the queue (2/5) before the change.
    const at = `${status.queue.position}/${status.queue.total} `;
    return formatStatusText({ ...status, queue: null }).replace("Ralph: ", `Ralph: ${at}`);
  }
  if (status.state === "running") {
    // Read from the status's fields, never from its English reason.
    if (status.phase === "waiting" && status.waiting?.kind === "rateLimit") {
      // The run waits for the agent's usage limit to reset (the tooltip says until when).
      return `$(watch) Ralph: ${status.change} · it ${status.iteration} · rate limited · ${progress(status)}`;
    }
    if (status.phase === "waiting" && status.waiting?.kind === "network") {
      // The agent waits for its service to be reachable again (it goes on by itself).
      return `$(debug-disconnect) Ralph: ${status.change} · it ${status.iteration} · waiting for network · ${progress(status)}`;
    }
    if (status.phase === "verifying") {
      return `$(beaker) Ralph: ${status.change} · verifying · ${progress(status)}`;
    }
    return `$(sync~spin) Ralph: ${status.change} · it ${status.iteration} · ${progress(status)}`;
  }
  const icon = FINAL_ICON[status.state] ?? "$(info)";
  return `${icon} Ralph: ${status.change} ${status.state} ${progress(status)}`;
}

/** One status as a line of the tooltip. */
export function describeStatus(status: RunStatus): string {
  const iterations =
    status.maxIterations > 0 ? `iteration ${status.iteration}/${status.maxIterations}` : `iteration ${status.iteration}`;
  const head = `${status.change}: ${status.state} · ${iterations} · ${progress(status)} tasks${cost(status)}`;
  const lines = [head, ...(status.reason ? [status.reason] : [])];
  const spend = describeCosts(status);
  const box = describeSandbox(status.sandbox);
  return [...lines, ...(spend ? [spend] : []), ...(box ? [box] : [])].join("\n");
}

/** The model and what the money bought (v5, SPEC §15) in one line; nothing reported, nothing
 * said (never "$0.0000"). */
export function describeCosts(status: RunStatus): string | null {
  const c = status.costs;
  const parts = status.model ? [`model ${status.model}`] : [];
  const spent = costsLine(c);
  if (spent) {
    parts.push(spent);
  }
  return parts.length ? parts.join(" · ") : null;
}

/** The run's sandbox in one line (v4): what it writes, hides and reaches; "off" said as such. */
export function describeSandbox(sandbox: RunSandbox | null | undefined): string | null {
  if (sandbox === undefined) {
    return null; // a server before v4
  }
  if (sandbox === null) {
    return "sandbox: off";
  }
  const list = (xs: string[], none: string) => (xs.length ? xs.join(", ") : none);
  return `sandbox: ${sandbox.kind} — writable: ${list(sandbox.writable, "none")}; hidden: ${list(sandbox.hidden, "none")}; domains: ${list(sandbox.allowedDomains, "none")}`;
}

export function toneOf(status: RunStatus): StatusTone {
  switch (status.state) {
    case "running":
    case "succeeded":
    case "stopped":
    case "planned":
      return "normal";
    case "stuck":
    case "exhausted":
      return "warning";
    default:
      return "error";
  }
}

export const IDLE_VIEW: StatusView = {
  text: "$(checklist) Ralph",
  tooltip: "Ralph: no run yet. Click to show the output.",
  tone: "normal",
};

const keyOf = (s: Pick<RunStatus, "root" | "change">): string => `${s.root}\u0000${s.change}`;

/**
 * Keeps the latest status of each change's run and decides what the single status bar item shows:
 * the most recently updated running run (with a count of the others), else the last run that ended.
 */
export class StatusBoard {
  private readonly runs = new Map<string, RunStatus>();
  private seq = 0;
  private readonly order = new Map<string, number>();

  /** Records a status; returns false when it is older than the one already held for its run. */
  update(status: RunStatus): boolean {
    const key = keyOf(status);
    const held = this.runs.get(key);
    if (held && held.runId === status.runId && isFinalState(held.state) && status.state === "running") {
      return false; // a late "running" after the run ended
    }
    this.runs.set(key, status);
    this.order.set(key, ++this.seq);
    return true;
  }

  /** Forgets one run (its server went away; a new one re-attaches to it if it goes on). */
  remove(status: Pick<RunStatus, "root" | "change">): void {
    const key = keyOf(status);
    this.runs.delete(key);
    this.order.delete(key);
  }

  clear(): void {
    this.runs.clear();
    this.order.clear();
  }

  /** The latest status of every run held. */
  all(): RunStatus[] {
    return [...this.runs.values()];
  }

  running(): RunStatus[] {
    return this.sorted().filter((s) => s.state === "running");
  }

  get(change: string, root?: string): RunStatus | undefined {
    if (root !== undefined) {
      return this.runs.get(keyOf({ change, root }));
    }
    return this.sorted().find((s) => s.change === change);
  }

  /** Newest first. */
  private sorted(): RunStatus[] {
    return [...this.runs.entries()]
      .sort((a, b) => (this.order.get(b[0]) ?? 0) - (this.order.get(a[0]) ?? 0))
      .map(([, s]) => s);
  }

  view(): StatusView {
    const all = this.sorted();
    const running = all.filter((s) => s.state === "running");
    const shown = running[0] ?? all[0];
    if (!shown) {
      return IDLE_VIEW;
    }
    let text = formatStatusText(shown);
    if (running.length > 1) {
      text += ` (+${running.length - 1})`;
    }
    const lines = (running.length > 0 ? running : [shown]).map(describeStatus);
    return {
      text,
      tooltip: `${lines.join("\n\n")}\n\nClick to show the output.`,
      tone: toneOf(shown),
    };
  }
}
