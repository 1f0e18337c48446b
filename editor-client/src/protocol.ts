import { pathToFileURL } from "node:url";
// The server's custom protocol, mirrored once (SPEC §5). Nothing here imports `vscode`, so the
// unit tests can load it. The shapes of a run's record (history, diff, restore, merge, review)
// are in records.ts and are exported from here too: importers name this one module.
import type { HistoryRecord, IterationDiff, MergeOutcome, RestoreResult, ReviewBundle, RunSandbox, TrainResult } from "./records";

export type * from "./records";

/** Final states a run can end in. */
export const FINAL_STATES = ["succeeded", "stuck", "exhausted", "failed", "stopped", "interrupted", "planned"] as const;
export type FinalState = (typeof FINAL_STATES)[number];
export type RunState = "running" | FinalState;

export function isFinalState(state: string): state is FinalState {
  return (FINAL_STATES as readonly string[]).includes(state);
}

/** A run's status: the `ralph/runStatus` payload and the element of `ralph.status`. */
export interface RunStatus {
  runId: string;
  change: string;
  /** The OpenSpec root's URI. */
  root: string;
  state: RunState;
  iteration: number;
  maxIterations: number;
  completed: number;
  total: number;
  reason: string | null;
  startedAt: string;
  updatedAt: string;
  costUsd: number | null;
  /** v3: `costUsd` is (partly) estimated from tokens at list prices (Codex, Gemini). */
  costEstimated?: boolean;
  /** The story the agent works on (story scope), or null. */
  story?: string | null;
  /** What a running run does now (v2): the agent works, the checks run, or it waits. */
  phase?: RunPhase | null;
  /** While `phase` is "waiting": for what, and until when when known. */
  waiting?: RunWaiting | null;
  /** With worktree isolation: the run's branch and worktree. A run on Ray: its branch on the
   * git remote `remote`, no folder here (`root` null) and a local copy of its tasks.md. */
  worktree?: { branch: string; root: string | null; tasksUri: string | null; remote?: string } | null;
  /** The permission rules the agent was refused in this run (v2). */
  refusals?: string[];
  /** A run of a queue (v3): which queue, and the change's place in it. */
  queue?: { id: string; position: number; total: number } | null;
  /** What the run's sandbox grants (v4, SPEC §10); null when it is off. */
  sandbox?: RunSandbox | null;
  /** v5 (SPEC §14): "plan" for a planning run, which ends "planned" and waits for approval. */
  kind?: "run" | "plan";
  /** v5: a planned change's open questions (design.md's `## Open Questions`). */
  questions?: string[];
  /** v5 (SPEC §15): the model of the iteration under way, or the last one. */
  model?: string | null;
  /** v5: the run's costs so far; null before its first iteration ends. */
  costs?: RunCosts | null;
}

/** What a run's money bought (v5, SPEC §15); a cost is null while none was reported. */
export interface RunCosts {
  totalUsd: number | null;
  perVerifiedTaskUsd: number | null;
  verifiedTasks: number | null;
  tasksChecked: number;
  noProgressUsd: number | null;
  noProgressIterations: number;
  estimated: boolean;
  /** Of the total, what the review rounds cost (SPEC §13); null or absent: none reported one. */
  reviewUsd?: number | null;
}

/** One change of a queue (v3) and what became of it. */
export interface QueueItem {
  change: string;
  /** "pending", "running", a run's final state, "skipped" (budget) or "dropped" (stopped). */
  state: string;
  reason: string | null;
  runId: string | null;
  iterations: number;
  completed: number;
  total: number;
  costUsd: number | null;
  startedAt: string | null;
  endedAt: string | null;
  durationS: number | null;
  branch: string | null;
}

/** A queue's status (v3): the `ralph/queueStatus` payload and the element of `ralph.queues`. */
export interface QueueStatus {
  queueId: string;
  root: string;
  /** "running", then "done" or "stopped". */
  state: string;
  reason: string | null;
  startedAt: string;
  endedAt: string | null;
  parallel: number;
  stopOnFailure: boolean;
  maxCostUsd: number | null;
  costUsd: number | null;
  /** How many changes have started (or were passed over): k of k/n. */
  position: number;
  total: number;
  items: QueueItem[];
}

/** `ralph.run`'s argument: one change, or (v3) `changes`, a queue. */
export interface RunParams {
  change?: string;
  root?: string;
  maxIterations?: number;
  iterationScope?: "story" | "change";
  guidance?: string;
  story?: string;
  changes?: string[];
  parallel?: number;
  stopOnFailure?: boolean;
  /** v4 (SPEC §12): a follow-up run on the change's branch: the agent runs with the guidance
   * even when every task is already checked (review comments). */
  followUp?: boolean;
}

export const RUN_PHASES = ["agent", "verifying", "waiting"] as const;
export type RunPhase = (typeof RUN_PHASES)[number];

export interface RunWaiting {
  kind: "rateLimit" | "network";
  /** ISO time the wait ends, when the agent named one. */
  until?: string;
}

export interface Story {
  id: string;
  title: string;
  line: number;
  completed: number;
  total: number;
}

export interface ChangeInfo {
  name: string;
  root: string;
  tasksUri: string;
  completed: number;
  total: number;
  stories: Story[];
  run: RunStatus | null;
}

/** A change, as every command that targets one takes it. */
export interface ChangeRef {
  change: string;
  /** Optional when only one OpenSpec root is open. */
  root?: string;
}

/** `{change, root?}` from a code lens or another extension; undefined for a palette invocation. */
export function changeRefFrom(arg: unknown): ChangeRef | undefined {
  if (typeof arg !== "object" || arg === null) {
    return undefined;
  }
  const { change, root } = arg as Record<string, unknown>;
  if (typeof change !== "string" || change === "") {
    return undefined;
  }
  return typeof root === "string" && root !== "" ? { change, root } : { change };
}

/**
 * The change a `tasks.md` belongs to, from its path: `<root>/openspec/changes/<name>/tasks.md`
 * (the root as a `file:` URI, as the server takes it). Anything else is not a change's task list.
 */
export function changeRefFromTasksPath(fsPath: string): ChangeRef | undefined {
  const parts = fsPath.split(/[\\/]/);
  const n = parts.length;
  if (n < 5 || parts[n - 1] !== "tasks.md" || parts[n - 3] !== "changes" || parts[n - 4] !== "openspec") {
    return undefined;
  }
  const change = parts[n - 2] as string;
  if (change === "" || change === "archive") {
    return undefined;
  }
  const root = parts.slice(0, n - 4).join("/") || "/";
  return { change, root: pathToFileURL(root).href };
}

/** What `openspec archive --json` reports of an archive done (or, in a preview, to be done). */
export interface ArchiveResult {
  change: string;
  archivedAs: string;
  path: string;
  specsUpdated: boolean;
  totals?: { added: number; modified: number; removed: number; renamed: number };
  warnings?: string[];
}

/** Why archive refused, with the OpenSpec CLI's blocker code. */
export interface ArchiveDiagnostic {
  severity: "error";
  code: string;
  message: string;
  fix?: string;
}

/** `ralph.archiveChange`'s answer: the archive done, or `null` and why not. */
export interface ArchiveOutcome {
  archive: ArchiveResult | null;
  status?: ArchiveDiagnostic[];
}

/** One main spec an archive rewrites: its text before (`null`: a new spec) and after. */
export interface RebuiltSpec {
  specId: string;
  uri: string;
  oldText: string | null;
  newText: string;
}

/** `ralph.archivePreview`'s answer. */
export interface ArchivePreview extends ArchiveOutcome {
  specs?: RebuiltSpec[];
  incompleteTasks: number;
}

/** Each server command (`workspace/executeCommand`): its one argument and its result. */
export interface ServerCommands {
  "ralph.changes": { params: { root?: string }; result: { changes: ChangeInfo[] } };
  /** One run's result is `{runId, change, state}`; a queue's, its QueueStatus. */
  "ralph.run": {
    params: RunParams;
    result: { runId: string; change: string; state: string; queueId?: string; total?: number };
  };
  "ralph.stopQueue": { params: { queue?: string; root?: string }; result: QueueStatus & { stopped: string[]; dropped: string[] } };
  "ralph.queues": { params: { root?: string }; result: { queues: QueueStatus[] } };
  "ralph.stop": { params: ChangeRef; result: RunStatus };
  "ralph.guide": { params: ChangeRef & { text: string }; result: { queued: boolean } };
  "ralph.status": { params: { change?: string; root?: string }; result: { runs: RunStatus[] } };
  "ralph.history": { params: ChangeRef; result: { runs: HistoryRecord[] } };
  "ralph.diff": { params: ChangeRef & { runId?: string; iteration?: number }; result: IterationDiff };
  "ralph.fileAt": { params: { root?: string; checkpoint: string; path: string }; result: { text: string } };
  /** `iteration` (of `runId`, default the newest run) or `checkpoint` (e.g. an undo). */
  "ralph.restore": { params: ChangeRef & { runId?: string; iteration?: number; checkpoint?: string }; result: RestoreResult };
  /** v4: the rebuilt main specs an archive would write, nothing written. */
  "ralph.archivePreview": { params: ChangeRef; result: ArchivePreview };
  /** v4: archive the change (specs written, folder moved), under workspace trust. */
  "ralph.archiveChange": { params: ChangeRef & { yes?: boolean }; result: ArchiveOutcome };
  "ralph.reviewRun": { params: ChangeRef & { runId?: string; into?: string }; result: ReviewBundle };
  "ralph.mergeRun": { params: ChangeRef & { runId?: string; into?: string; strategy?: "merge" | "squash" | "rebase" }; result: MergeOutcome };
  "ralph.mergeAll": { params: { root?: string; into?: string; strategy?: "merge" | "squash" | "rebase" }; result: TrainResult };
  /** v5 (SPEC §14): create openspec/changes/<change>/ and start a planning run. */
  "ralph.planChange": { params: { change: string; description: string; root?: string }; result: { runId: string; change: string; state: string } };
  /** v5: plan the change again, `text` (a comment, answers) as guidance. */
  "ralph.revisePlan": { params: ChangeRef & { text: string }; result: { runId: string; change: string; state: string } };
  /** v5: move the change's folder to the trash; `yes` after the person confirmed. */
  "ralph.discardChange": { params: ChangeRef & { yes?: boolean }; result: { discarded: string; trash: string } };
}
export type ServerCommand = keyof ServerCommands;

/** The custom notification carrying a run's status on every change of it. */
export const RUN_STATUS_NOTIFICATION = "ralph/runStatus";

/** The custom notification carrying a queue's status on every change of one of its changes (v3). */
export const QUEUE_STATUS_NOTIFICATION = "ralph/queueStatus";

export function isQueueStatus(value: unknown): value is QueueStatus {
  if (typeof value !== "object" || value === null) {
    return false;
  }
  const v = value as Record<string, unknown>;
  return typeof v.queueId === "string" && typeof v.root === "string" && Array.isArray(v.items) && typeof v.total === "number";
}

/** Loose check of an incoming status (the server is another program: trust, but verify). */
export function isRunStatus(value: unknown): value is RunStatus {
  if (typeof value !== "object" || value === null) {
    return false;
  }
  const v = value as Record<string, unknown>;
  return (
    typeof v.change === "string" &&
    typeof v.root === "string" &&
    typeof v.state === "string" &&
    typeof v.completed === "number" &&
    typeof v.total === "number"
  );
}
