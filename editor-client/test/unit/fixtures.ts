import type { ChangeInfo, RunStatus } from "../../src/protocol";

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
