import { pathToFileURL } from "node:url";
// The server's custom protocol, mirrored once (SPEC §5). Nothing here imports `vscode`, so the
// unit tests can load it.

/** Final states a run can end in. */
export const FINAL_STATES = ["succeeded", "stuck", "exhausted", "failed", "stopped", "interrupted"] as const;
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
  /** The story the agent works on (story scope), or null. */
  story?: string | null;
  /** What a running run does now (v2): the agent works, the checks run, or it waits. */
  phase?: RunPhase | null;
  /** While `phase` is "waiting": for what, and until when when known. */
  waiting?: RunWaiting | null;
  /** With worktree isolation: the run's branch and worktree. */
  worktree?: { branch: string; root: string; tasksUri: string } | null;
  /** The permission rules the agent was refused in this run (v2). */
  refusals?: string[];
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

export interface HistoryTransition {
  state: string;
  at: string;
  reason: string | null;
}

export interface HistoryIteration {
  n: number;
  startedAt: string;
  endedAt: string | null;
  exitCode: number | null;
  tasksChecked: number | null;
  costUsd: number | null;
  numTurns: number | null;
  usage: Record<string, unknown> | null;
  /** v2: the checks run after this iteration, null when they did not run. */
  verification?: VerificationResult[] | null;
  /** v2: tool calls the agent was refused. */
  refusals?: { tool: string; input: string; rule: string }[];
  /** v2: git checkpoint after the iteration, where the project is a git work tree. */
  checkpoint?: { ref: string; commit: string } | null;
  filesChanged?: string[] | null;
  /** v2: file URIs of the iteration's raw output and prompt (null once removed). */
  outputUri?: string | null;
  promptUri?: string | null;
}

export interface VerificationResult {
  command: string;
  exitCode: number | null;
  durationMs: number;
  outputTail: string;
}

/** `ralph.diff`'s result (v2). */
export interface IterationDiff {
  runId: string;
  iteration: number;
  files: { path: string; status: string; beforeUri: string | null; afterUri: string | null }[];
  patch: string;
}

export interface HistoryGuidance {
  text: string;
  at: string;
  deliveredIn: number | null;
}

export interface HistoryRecord {
  runId: string;
  change: string;
  root: string;
  startedAt: string;
  endedAt: string | null;
  state: string;
  reason: string | null;
  transitions: HistoryTransition[];
  iterations: HistoryIteration[];
  guidance: HistoryGuidance[];
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

/** Each server command (`workspace/executeCommand`): its one argument and its result. */
export interface ServerCommands {
  "ralph.changes": { params: { root?: string }; result: { changes: ChangeInfo[] } };
  "ralph.run": {
    params: ChangeRef & { maxIterations?: number; iterationScope?: "story" | "change"; guidance?: string; story?: string };
    result: { runId: string; change: string; state: "running" };
  };
  "ralph.stop": { params: ChangeRef; result: RunStatus };
  "ralph.guide": { params: ChangeRef & { text: string }; result: { queued: boolean } };
  "ralph.status": { params: { change?: string; root?: string }; result: { runs: RunStatus[] } };
  "ralph.history": { params: ChangeRef; result: { runs: HistoryRecord[] } };
  "ralph.diff": { params: ChangeRef & { runId?: string; iteration?: number }; result: IterationDiff };
  "ralph.fileAt": { params: { root?: string; checkpoint: string; path: string }; result: { text: string } };
}
export type ServerCommand = keyof ServerCommands;

/** The custom notification carrying a run's status on every change of it. */
export const RUN_STATUS_NOTIFICATION = "ralph/runStatus";

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
