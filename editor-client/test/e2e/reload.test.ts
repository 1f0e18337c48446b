// Runs outlive the editor (SPEC §9): "Developer: Reload Window" during a run, in a real VS Code.
// After the reload the status bar shows the same run, it finishes, and one notification says so.
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { after, before, describe, it } from "node:test";
import type { BrowserContext } from "playwright-core";
import { Workbench, countTasks, discoverChange, env, launchBrowser, e2eServer, stepper } from "./harness";

const results = env("RALPH_E2E_RESULTS");
const example = env("RALPH_E2E_EXAMPLE");
const STATUS_ID = "ralph-lsp.ralph-lsp.ralph.status";

describe("A run outlives a window reload", () => {
  const server = e2eServer({
    settings: {
      "ralph.server.pythonPath": env("RALPH_E2E_PYTHON"),
      "ralph.agent": "demo",
      "ralph.verifyWhen": "off",
      // Slow enough that the run is still going once the reloaded window is up: a reload takes
      // 10-20 s on a loaded 2-core machine, and once (5 s a task, 40 s in all, beside a full
      // pytest run) the run had ended before the new window's server was up. 8 s a task: 64 s.
      "ralph.env": { RALPH_DEMO_DELAY: "8" },
    },
  });
  const workspace = server.path("workspace", path.basename(example));
  const change = discoverChange(example);
  const tasksFile = path.join(workspace, "openspec", "changes", change, "tasks.md");
  const runsDir = path.join(workspace, ".ralph", "runs");
  let total = 0;
  let browser: BrowserContext | undefined;
  let wb: Workbench;

  const step = stepper("reload-", () => wb);

  before(async () => {
    fs.cpSync(example, workspace, { recursive: true });
    fs.rmSync(path.join(workspace, ".ralph"), { recursive: true, force: true });
    total = countTasks(fs.readFileSync(tasksFile, "utf8")).total;
    await server.start();
    browser = await launchBrowser(server.path("browser"), env("RALPH_E2E_CHROMIUM"));
    const page = browser.pages()[0] ?? (await browser.newPage());
    wb = new Workbench(page);
    await step("open-workspace", async () => {
      await wb.open(`http://127.0.0.1:${server.port}/?folder=${encodeURIComponent(workspace)}`);
      await wb.openFile("tasks.md");
    });
  });

  after(async () => {
    // Whatever happened, no runner of this test goes on.
    for (const file of fs.existsSync(path.join(workspace, ".ralph", "live")) ? fs.readdirSync(path.join(workspace, ".ralph", "live")) : []) {
      try {
        const live = JSON.parse(fs.readFileSync(path.join(workspace, ".ralph", "live", file), "utf8"));
        process.kill(live.pid, "SIGTERM");
      } catch {
        // not a live file, or gone already
      }
    }
    await browser?.close().catch(() => undefined);
    await server.stop();
    server.saveLogs(path.join(results, "logs-reload"));
    server.cleanup();
  });

  it("keeps the run going through Developer: Reload Window, then tells once that it ended", async () => {
    await step("run", async () => {
      await wb.until("the ▶ Run change lens", async () => (await wb.lenses()).find((l) => l.includes("Run change")));
      await wb.command("Ralph: Run change");
      await wb.quickPickRows(change);
      await wb.page.keyboard.press("Enter");
      await wb.until("iteration 1 in the status bar", async () => (await wb.statusText(STATUS_ID)).includes(`Ralph: ${change} · it 1`));
    });
    const runId = fs.readdirSync(runsDir)[0] ?? "";
    assert.ok(runId, "a run was recorded");
    const done = () => countTasks(fs.readFileSync(tasksFile, "utf8")).done;
    const before = done();
    assert.ok(before < total, `the run is still going (${before}/${total})`);

    await step("reload", async () => {
      await wb.command("Developer: Reload Window");
      await wb.page.waitForLoadState("domcontentloaded");
      await wb.page.locator(".monaco-workbench").waitFor({ timeout: 60_000 });
      await wb.screenshot(path.join(results, "60-after-reload.png"));
    });

    await step("same-run-after-reload", async () => {
      const text = await wb.until("the same run in the status bar", async () => {
        const t = await wb.statusText(STATUS_ID);
        return /· it \d+/.test(t) && t.includes(change) && t;
      });
      assert.deepEqual(fs.readdirSync(runsDir), [runId], "no second run was started");
      console.log(`after the reload: ${text} (${done()}/${total} tasks on disk)`);
      await wb.screenshot(path.join(results, "61-same-run-after-reload.png"));
    });

    const ended = (n: string) => n.includes(`Ralph: ${change} succeeded`);
    await step("finishes", async () => {
      await wb.until(
        "the success status",
        async () => (await wb.statusText(STATUS_ID)).includes(`Ralph: ${change} succeeded ${total}/${total}`),
        240_000,
      );
      await wb.until("the run-end notification", async () => (await wb.notifications()).find(ended));
      await new Promise((r) => setTimeout(r, 2000)); // a second one would show by now
      assert.equal((await wb.notifications()).filter(ended).length, 1, "exactly one notification");
      await wb.screenshot(path.join(results, "62-reload-run-succeeded.png"));
    });
    const record = JSON.parse(fs.readFileSync(path.join(runsDir, runId, "record.json"), "utf8"));
    assert.equal(record.state, "succeeded");
    assert.equal(done(), total);
    const live = path.join(workspace, ".ralph", "live");
    assert.deepEqual(fs.existsSync(live) ? fs.readdirSync(live).filter((f) => !f.startsWith(".")) : [], [], "the runner is gone");
  });
});
