// A run on a Ray cluster (issue 31, SPEC §9) in a real VS Code: `ralph.runner: "ray"` and the
// cluster's address in the User settings, a git copy of examples/toolbox whose origin is a bare
// repository on this machine, "Ralph: Run change" on one change. While the job runs, the change's
// tasks.md lenses follow it (a task turns done although the user's file does not change); it ends
// succeeded with one notification; its branch is on the remote; the history page shows an
// iteration's diff. The cluster is a real single-node Ray head on 127.0.0.1 only, started by
// `python -m tests.ray.cluster serve` and ended whatever happens. Skipped when the server's
// python cannot import ray.
import assert from "node:assert/strict";
import { execFileSync, spawn, spawnSync, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { after, before, describe, it } from "node:test";
import type { BrowserContext } from "playwright-core";
import { Workbench, countTasks, env, normalize, e2eServer, stepper, openBrowser } from "./harness";

const results = env("RALPH_E2E_RESULTS");
const python = env("RALPH_E2E_PYTHON");
// The repository: examples/<name> is two levels below it (the cluster script is its tests/ray).
const repo = path.resolve(path.dirname(env("RALPH_E2E_EXAMPLE")), "..");
const toolbox = path.join(repo, "examples", "toolbox");
const CHANGE = "add-slugify";
const STATUS_ID = "ralph-lsp.ralph-lsp.ralph.status";

/** Why this test cannot run here, or undefined. */
function missing(): string | undefined {
  if (!fs.existsSync(path.join(repo, "tests", "ray", "cluster.py"))) {
    return `no tests/ray/cluster.py under ${repo}`;
  }
  const probe = spawnSync(python, ["-c", "import ray"], { encoding: "utf8", timeout: 60_000 });
  if (probe.status !== 0) {
    return `the server's python (${python}) cannot import ray: pip install 'ralph-lsp[ray]'`;
  }
  return undefined;
}
const skip = missing();

/** `python -m tests.ray.cluster serve`: its address once up; ended by closing its stdin. */
class Cluster {
  private proc: ChildProcess | undefined;
  private log: string[] = [];

  async start(timeoutMs = 120_000): Promise<string> {
    const proc = spawn(python, ["-m", "tests.ray.cluster", "serve"], { cwd: repo, stdio: ["pipe", "pipe", "pipe"] });
    this.proc = proc;
    proc.stderr?.on("data", (b: Buffer) => this.log.push(b.toString()));
    return new Promise((resolve, reject) => {
      let out = "";
      const timer = setTimeout(() => reject(new Error(`the Ray cluster did not start in time: ${this.stderr()}`)), timeoutMs);
      proc.stdout?.on("data", (b: Buffer) => {
        out += b.toString();
        const nl = out.indexOf("\n");
        if (nl >= 0) {
          clearTimeout(timer);
          try {
            const address = String(JSON.parse(out.slice(0, nl)).address);
            assert.match(address, /^http:\/\/127\.0\.0\.1:\d+$/, "the cluster is on loopback only");
            resolve(address);
          } catch (err) {
            reject(err);
          }
        }
      });
      proc.once("exit", (code) => {
        clearTimeout(timer);
        reject(new Error(`the Ray cluster exited with ${code}: ${this.stderr()}`));
      });
    });
  }

  stderr(): string {
    return this.log.join("").slice(-3000);
  }

  /** Closes its stdin (it ends the cluster's process group), then SIGTERM, then SIGKILL. */
  async stop(): Promise<void> {
    const proc = this.proc;
    this.proc = undefined;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) {
      return;
    }
    const exited = new Promise<void>((r) => proc.once("exit", () => r()));
    // Its timer cleared once it has exited: a pending one would keep this test file alive.
    const within = async (ms: number): Promise<boolean> => {
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<boolean>((r) => (timer = setTimeout(() => r(false), ms)));
      try {
        return await Promise.race([exited.then(() => true), late]);
      } finally {
        clearTimeout(timer);
      }
    };
    proc.stdin?.end();
    if (await within(60_000)) {
      return;
    }
    proc.kill("SIGTERM");
    if (!(await within(30_000))) {
      proc.kill("SIGKILL");
    }
  }
}

describe("A run on a Ray cluster", { skip: skip ?? false }, () => {
  const cluster = new Cluster();
  const server = e2eServer({
    settings: {
      "ralph.server.pythonPath": python,
      "ralph.agent": "demo",
      // One task per iteration, a few seconds each: the job lasts long enough (≈ 10-20 s) that
      // its progress shows while it runs (Ray delivers a job's log in batches, ≈ 2.5 s late).
      "ralph.env": { RALPH_DEMO_DELAY: "3", RALPH_DEMO_TASKS_PER_RUN: "1" },
      "ralph.runner": "ray",
    },
  });
  const workspace = server.path("workspace", "toolbox");
  const bare = server.path("remote.git");
  const tasksFile = path.join(workspace, "openspec", "changes", CHANGE, "tasks.md");
  const runsDir = path.join(workspace, ".ralph", "runs");
  let original = "";
  let browser: BrowserContext | undefined;
  let wb: Workbench;

  const step = stepper("ray-", () => wb);

  const git = (cwd: string, ...args: string[]): string =>
    execFileSync("git", ["-c", "user.name=e2e", "-c", "user.email=e2e@localhost", ...args], { cwd, encoding: "utf8" }).trim();

  before(async () => {
    const started = Date.now();
    // The cluster starts (≈ 15 s) while the workspace is made and code-server starts.
    const address = cluster.start();
    address.catch(() => undefined); // awaited below; no unhandled rejection meanwhile
    fs.cpSync(toolbox, workspace, { recursive: true });
    fs.rmSync(path.join(workspace, ".ralph"), { recursive: true, force: true });
    original = fs.readFileSync(tasksFile, "utf8");
    // Git is the data plane: the workspace is a repository whose origin is a bare one here.
    git(workspace, "init", "-q", "-b", "main");
    git(workspace, "add", "-A");
    git(workspace, "commit", "-q", "-m", "the example");
    git(server.path(), "init", "-q", "--bare", bare);
    git(workspace, "remote", "add", "origin", bare);
    git(workspace, "push", "-q", "origin", "main");
    await server.start();
    const url = await address;
    // Where a person puts them: the User settings (the harness puts only the interpreter path
    // in the remote's Machine settings).
    server.writeSettings({ "ralph.ray.address": url });
    const user = JSON.parse(fs.readFileSync(path.join(server.userDataDir, "User", "settings.json"), "utf8"));
    assert.equal(user["ralph.runner"], "ray");
    assert.equal(user["ralph.ray.address"], url);
    console.log(`cluster at ${url}, code-server up after ${((Date.now() - started) / 1000).toFixed(1)} s`);
    ({ browser, wb } = await openBrowser(server));
    await step("open-workspace", () => wb.openFolder(server, workspace, "tasks.md"));
  });

  after(async () => {
    const t0 = Date.now();
    try {
      await browser?.close().catch(() => undefined);
      await server.stop();
      // The run's local follower outlives the editor by design: end it, by its pid.
      const live = path.join(workspace, ".ralph", "live");
      for (const file of fs.existsSync(live) ? fs.readdirSync(live) : []) {
        try {
          process.kill(JSON.parse(fs.readFileSync(path.join(live, file), "utf8")).pid, "SIGTERM");
        } catch {
          // not a live file, or gone already
        }
      }
      server.saveLogs(path.join(results, "logs-ray"));
      if (fs.existsSync(runsDir)) {
        fs.cpSync(runsDir, path.join(results, "ray-runs"), { recursive: true });
      }
    } finally {
      const t1 = Date.now();
      await cluster.stop();
      console.log(`after: code-server and logs ${((t1 - t0) / 1000).toFixed(1)} s, the cluster's end ${((Date.now() - t1) / 1000).toFixed(1)} s`);
      fs.writeFileSync(path.join(results, "ray-cluster.log"), cluster.stderr());
      server.cleanup();
    }
  });

  it("runs a change as a Ray job: live lenses, one notification, its branch on the remote, diffs in the history", async () => {
    const started = Date.now();
    const total = countTasks(original).total;
    await step("run", async () => {
      await wb.until("the ▶ Run change lens", async () => (await wb.lenses()).find((l) => l.includes("Run change")));
      assert.ok(!(await wb.lenses()).includes("✓ done"), "no task is done before the run");
      await wb.command("Ralph: Run change");
      await wb.quickPickRows(CHANGE);
      await wb.page.keyboard.press("Enter");
    });

    // Live progress: a task's lens turns done while the job still runs, read from the run (the
    // user's own tasks.md does not change: the work is on the run's branch).
    const live = await step("live-lens", async () =>
      wb.until(
        "a ✓ done task lens while the job runs",
        async () => {
          // A run that could not start or ended early says so in a notification: fail now.
          const early = (await wb.notifications()).find((n) => /Ralph: .*(refused|failed|error|interrupted|stopped)/i.test(n));
          if (early) {
            return { early };
          }
          const status = await wb.statusText(STATUS_ID);
          const lenses = await wb.lenses();
          const done = lenses.filter((l) => l === "✓ done").length;
          return done > 0 && done < total && !/succeeded|failed|stopped|interrupted|stuck|exhausted/.test(status) && { status, lenses };
        },
        120_000,
      ),
    );
    assert.ok(!("early" in live), `the run did not go on: ${"early" in live ? live.early : ""}`);
    console.log(`live, after ${((Date.now() - started) / 1000).toFixed(1)} s: ${live.status} · ${JSON.stringify(live.lenses)}`);
    await wb.screenshot(path.join(results, "90-ray-live-lens.png"));
    assert.equal(fs.readFileSync(tasksFile, "utf8"), original, "the user's tasks.md is untouched while the job runs");

    const ended = (n: string) => n.includes(`Ralph: ${CHANGE} `) && /succeeded|failed|stopped|interrupted|stuck|exhausted/.test(n);
    const note = await step("ends", async () => {
      const n = await wb.until("the run-end notification", async () => (await wb.notifications()).find(ended), 180_000);
      await new Promise((r) => setTimeout(r, 2000)); // a second one would show by now
      const notes = await wb.notifications();
      assert.equal(notes.filter(ended).length, 1, `exactly one run-end notification: ${JSON.stringify(notes)}`);
      await wb.screenshot(path.join(results, "91-ray-run-ended.png"));
      return n;
    });
    console.log(`ended after ${((Date.now() - started) / 1000).toFixed(1)} s: ${note}`);
    assert.match(note, new RegExp(`Ralph: ${CHANGE} succeeded`));

    const runs = fs.readdirSync(runsDir).filter((f) => !f.startsWith("."));
    assert.equal(runs.length, 1, `one run: ${runs.join(", ")}`);
    const runId = runs[0] as string;
    const record = JSON.parse(fs.readFileSync(path.join(runsDir, runId, "record.json"), "utf8"));
    assert.equal(record.state, "succeeded", JSON.stringify(record.reason));
    const branch = `ralph/${CHANGE}/${runId}`;
    assert.equal(record.worktree?.branch, branch);
    // The branch is on the bare remote, one commit per iteration above the base.
    const subjects = git(bare, "log", "--format=%s", `refs/heads/${branch}`).split("\n");
    assert.equal(subjects.length, record.iterations.length + 1, JSON.stringify(subjects));
    assert.ok(record.iterations.length > 1, `more than one iteration: ${record.iterations.length}`);
    // The review the notification names works here: its ref is this repository's (the fetched
    // run branch), not a branch of the worker's clone.
    const review = /review: git diff HEAD\.\.\.(\S+)\)/.exec(note)?.[1];
    assert.ok(review, `the notification says how to review the work: ${note}`);
    assert.equal(git(workspace, "rev-parse", "--verify", "--quiet", `${review}^{commit}`), git(bare, "rev-parse", `refs/heads/${branch}`), `${review} is the run branch, fetched here`);
    assert.match(git(workspace, "diff", "--stat", `HEAD...${review}`), /tasks\.md/);
    // The user's work tree, HEAD and branches are as they were.
    assert.equal(git(workspace, "status", "--porcelain"), "");
    assert.equal(git(workspace, "branch", "--list", "--format=%(refname:short)"), "main");
    assert.equal(fs.readFileSync(tasksFile, "utf8"), original);

    const frame = wb.page.frameLocator("iframe.webview.ready").frameLocator("iframe#active-frame");
    await step("history", async () => {
      await wb.page.locator(".notifications-toasts .notification-toast", { hasText: "succeeded" }).getByRole("button", { name: "Show history" }).click();
      await wb.page.locator(".tabs-container .tab.active", { hasText: `Ralph: ${CHANGE} runs` }).waitFor();
      await frame.locator('a[data-action="diff"][data-iteration="1"]').waitFor();
      await wb.command("Notifications: Clear All Notifications");
    });
    await step("diff", async () => {
      await frame.locator('a[data-action="diff"][data-iteration="1"]').click();
      // Several files changed: a pick first; tasks.md is one of them.
      const diffTab = wb.page.locator(".tabs-container .tab.active", { hasText: "(iteration 1)" });
      await wb.until("the diff editor or the pick of changed files", async () =>
        (await diffTab.count()) > 0 || (await wb.page.locator(".quick-input-widget .quick-input-list .monaco-list-row").count()) > 0,
      );
      if ((await diffTab.count()) === 0) {
        await wb.quickPick("tasks.md", "tasks.md");
      }
      await diffTab.waitFor();
      const editor = wb.page.locator(".monaco-diff-editor").first();
      await editor.waitFor();
      const before = async () => normalize(await editor.locator(".editor.original .view-lines").innerText());
      const after = async () => normalize(await editor.locator(".editor.modified .view-lines").innerText());
      const title = await diffTab.innerText();
      if (title.includes("tasks.md")) {
        // Iteration 1 checked the first task: unchecked before, checked after.
        await wb.until("1.1 unchecked before and checked after", async () => /\[ \] 1\.1/.test(await before()) && /\[x\] 1\.1/.test(await after()));
      } else {
        await wb.until("the iteration's change in the diff", async () => (await before()) !== (await after()));
      }
      await wb.screenshot(path.join(results, "92-ray-history-diff.png"));
    });
    console.log(`done after ${((Date.now() - started) / 1000).toFixed(1)} s`);
  });
});
