// The shapes of a run's record as the server sends them (SPEC §5, §6): the history of a change's
// runs and their iterations, an iteration's diff, a restore, a merge and a review, and the sandbox
// a run had. Types only; protocol.ts exports them with the rest of the protocol.

/** A run's sandbox (v4): its mechanism, what it may write, what is hidden, where it may go. */
export interface RunSandbox {
  kind: "bwrap" | "seatbelt";
  writable: string[];
  hidden: string[];
  allowedDomains: string[];
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
  /** v3: `costUsd` is an estimate from the tokens at a list price. */
  costEstimated?: boolean;
  numTurns: number | null;
  /** v5 (SPEC §15): the receipt's tokens, the cached part apart (before v5: the agent's own usage). */
  usage: Record<string, unknown> | null;
  /** Before v5: input, output and cache tokens, the same names whichever agent reported them. */
  tokens?: { input: number | null; output: number | null; cacheRead: number | null; cacheWrite: number | null } | null;
  /** v5: the model it ran, and why (`ralph.models.apply`, or the escalation step). */
  model?: string | null;
  modelReason?: string | null;
  /** v5: where `costUsd` comes from; null with no cost. */
  costSource?: "reported" | "estimated" | null;
  /** v2: the checks run after this iteration, null when they did not run. */
  verification?: VerificationResult[] | null;
  /** v2: tool calls the agent was refused. */
  refusals?: { tool: string; input: string; rule: string }[];
  /** v2: the commit id of the git checkpoint after the iteration, where the project is a git
   * work tree (records of an early v2 build held `{ref, commit}`: the history page takes both). */
  checkpoint?: string | { ref: string; commit: string } | null;
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

/** A checkpoint: a `refs/ralph/…` ref (null when only the commit is known) and its commit. */
export interface CheckpointRef {
  ref: string | null;
  commit: string;
}

/** `ralph.restore`'s result (v2): restoring `undo` (as `checkpoint`) undoes it. */
export interface RestoreResult {
  runId: string;
  restored: CheckpointRef;
  undo: CheckpointRef;
  written: string[];
  removed: string[];
  skipped: { path: string; reason: string }[];
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
  /** v4 (SPEC §12): what became of the run's branch; absent or null until a merge is tried. */
  branchState?: BranchState;
  merge?: MergeRecord | null;
  /** What the run's sandbox granted (v4); null: it ran with the sandbox off. */
  sandbox?: RunSandbox | null;
  /** With worktree isolation (or on Ray): the branch the run worked on. */
  worktree?: { branch?: string } | null;
  /** v5 (SPEC §13): the conformance table of the run's last verification; null: none ran. */
  conformance?: ConformanceTable | null;
  /** v5 (SPEC §13): the reviewer's rounds, in order; absent before v5 or without a reviewer. */
  reviews?: HistoryReviewRound[];
}

/** v5 (SPEC §13): one review round as the record keeps it. */
export interface HistoryReviewRound {
  round: number;
  reviewer: string;
  model: string | null;
  /** "approved", "rejected", "refused" or "failed". */
  verdict: string;
  tasksAdded: string[];
  refusals: string[];
  costUsd: number | null;
  exitCode: number | null;
  startedAt: string;
  endedAt: string;
  detail?: string;
}

/** v5 (SPEC §13): one scenario of a change, its state after a verification and its test. */
export interface ConformanceRow {
  key: string;
  title: string;
  /** "verified", "failing", "not-run" or "unlinked". */
  state: string;
  test: string | null;
  spec: string;
  line: number;
}

/** v5: a verification's conformance table as the record keeps it (`3/4 scenarios verified`). */
export interface ConformanceTable {
  summary: string;
  verified: number;
  total: number;
  rows: ConformanceRow[];
  warnings?: string[];
}

/** v4: a run's branch: merged into its target, or parked for a person. */
export type BranchState = "merged" | "needs-review" | null;

/** v4: the last merge attempt of a run's branch, as its record keeps it. */
export interface MergeRecord {
  into: string;
  strategy: string;
  commit: string | null;
  reason: string;
  conflicts: string[];
  outputTail: string | null;
  at: string;
}

/** `ralph.mergeRun`'s result (v4); `state` is "merged", "needs-review" or "refused". */
export interface MergeOutcome {
  change: string;
  runId: string;
  branch: string;
  into: string;
  strategy: string;
  state: string;
  reason: string;
  commit: string | null;
  conflicts: string[];
  outputTail: string | null;
  verification: VerificationResult[];
  attempts: number;
}

/** `ralph.mergeAll`'s result (v4): the merge train. */
export interface TrainResult {
  into: string;
  merged: number;
  parked: number;
  refused: number;
  durationMs: number;
  verifyMs: number;
  outcomes: MergeOutcome[];
}

/** `ralph.reviewRun`'s result (v4): the diff is from the merge-base of `into` and the branch. */
export interface ReviewBundle {
  change: string;
  runId: string;
  branch: string;
  into: string;
  base: string;
  tip: string;
  files: { status: string; path: string }[];
  diff: string;
  diffTruncated: boolean;
  commits: { commit: string; subject: string }[];
  iterations: { n: number; tasksChecked: number | null; commit: string | null; filesChanged: string[] | null; costUsd: number | null }[];
  verification: VerificationResult[] | null;
  costUsd: number | null;
  state: string;
  branchState: BranchState;
  merge: MergeRecord | null;
}
