import type { ChangeInfo, QueueItem, QueueStatus, RunStatus } from "../../src/protocol";

export function status(over: Partial<RunStatus> = {}): RunStatus {
  return {
    runId: "r-1",
    change: "add-x",
    root: "file:///ws",
    state: "running",
    iteration: 2,
    maxIterations: 20,
    completed: 3,
    total: 10,
    reason: null,
    startedAt: "2025-01-01T10:00:00Z",
    updatedAt: "2025-01-01T10:01:00Z",
    costUsd: null,
    ...over,
  };
}

export function change(name: string, over: Partial<ChangeInfo> = {}): ChangeInfo {
  return {
    name,
    root: "file:///ws",
    tasksUri: `file:///ws/openspec/changes/${name}/tasks.md`,
    completed: 0,
    total: 4,
    stories: [],
    run: null,
    ...over,
  };
}

export function queueStatus(over: Partial<QueueStatus> = {}): QueueStatus {
  const item = (change: string, state: string, over: Partial<QueueItem> = {}): QueueItem => ({
    change,
    state,
    reason: null,
    runId: state === "pending" ? null : `r-${change}`,
    iterations: state === "pending" ? 0 : 1,
    completed: 0,
    total: 3,
    costUsd: null,
    startedAt: null,
    endedAt: null,
    durationS: null,
    branch: null,
    ...over,
  });
  return {
    queueId: "q-1",
    root: "file:///w",
    state: "running",
    reason: null,
    startedAt: "2026-11-24T07:00:00Z",
    endedAt: null,
    parallel: 1,
    stopOnFailure: false,
    maxCostUsd: null,
    costUsd: null,
    position: 2,
    total: 3,
    items: [item("a", "succeeded", { completed: 3 }), item("b", "running", { completed: 1 }), item("c", "pending")],
    ...over,
  };
}
