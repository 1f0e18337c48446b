// "Restore to here" in a real VS Code (issue 25, SPEC §8): run the demo change in a git work tree,
// open its history page, click "Restore to here" on iteration 1, confirm the modal, and find
// tasks.md as iteration 1 left it, with the undo named in the notification.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { after, before, describe, it } from "node:test";
import type { BrowserContext } from "playwright-core";
import { Workbench, countTasks, discoverChange, env, e2eServer, stepper, openBrowser } from "./harness";

const results = env("RALPH_E2E_RESULTS");
const example = env("RALPH_E2E_EXAMPLE");
const STATUS_ID = "ralph-lsp.ralph-lsp.ralph.status";

describe("Restore to here, from the history page", () => {
  const server = e2eServer({
    settings: {
      "ralph.server.pythonPath": env("RALPH_E2E_PYTHON"),
      "ralph.agent": "demo",
      "ralph.env": { RALPH_DEMO_DELAY: "0.2" },
    },
  });
  const workspace = server.path("workspace", path.basename(example));
  const change = discoverChange(example);
  const tasksFile = path.join(workspace, "openspec", "changes", change, "tasks.md");
  let browser: BrowserContext | undefined;
  let wb: Workbench;

  const step = stepper("restore-", () => wb);

  const git = (...args: string[]): string =>
    execFileSync("git", ["-c", "user.name=e2e", "-c", "user.email=e2e@localhost", ...args], { cwd: workspace, encoding: "utf8" });

  before(async () => {
    fs.cpSync(example, workspace, { recursive: true });
    fs.rmSync(path.join(workspace, ".ralph"), { recursive: true, force: true });
    // Checkpoints need a git work tree: the example as a fresh repository with one commit.
    git("init", "-q");
    git("add", "-A");
    git("commit", "-q", "-m", "the example");
    await server.start();
    ({ browser, wb } = await openBrowser(server));
    await step("open-workspace", () => wb.openFolder(server, workspace, "tasks.md"));
  });

  after(async () => {
    await browser?.close().catch(() => undefined);
    await server.stop();
    server.saveLogs(path.join(results, "logs-restore"));
    server.cleanup();
  });

  it("puts tasks.md back as iteration 1 left it, after a modal, and names the undo", async () => {
    const total = countTasks(fs.readFileSync(tasksFile, "utf8")).total;
    await step("run", async () => {
      await wb.until("the ▶ Run change lens", async () => (await wb.lenses()).find((l) => l.includes("Run change")));
      await wb.command("Ralph: Run change");
      await wb.quickPickRows(change);
      await wb.page.keyboard.press("Enter");
      await wb.until("the success status", async () => (await wb.statusText(STATUS_ID)).includes(`Ralph: ${change} succeeded ${total}/${total}`));
    });
    assert.deepEqual(countTasks(fs.readFileSync(tasksFile, "utf8")), { done: total, total });
    // What iteration 1 left, as its checkpoint holds it (the record names the checkpoint).
    const runs = fs.readdirSync(path.join(workspace, ".ralph", "runs"));
    assert.equal(runs.length, 1, `one run: ${runs.join(", ")}`);
    const record = JSON.parse(fs.readFileSync(path.join(workspace, ".ralph", "runs", runs[0] as string, "record.json"), "utf8"));
    assert.ok(record.iterations.length > 1, `more than one iteration, so that restoring iteration 1 shows: ${record.iterations.length}`);
    // The record holds the checkpoint's commit (docs/lsp-extensions.md shows {ref, commit}: both read).
    const first = record.iterations[0].checkpoint;
    const commit: unknown = typeof first === "string" ? first : first?.commit;
    assert.ok(typeof commit === "string" && commit, `iteration 1 has a checkpoint: ${JSON.stringify(record.iterations[0])}`);
    const expected = git("show", `${commit}:openspec/changes/${change}/tasks.md`);
    const done1 = countTasks(expected).done;
    assert.ok(done1 > 0 && done1 < total, `iteration 1 checked some tasks, not all: ${done1}/${total}`);

    const frame = wb.page.frameLocator("iframe.webview.ready").frameLocator("iframe#active-frame");
    await step("history", async () => {
      // The run-end notification's own button, as a person would.
      await wb.page.locator(".notifications-toasts .notification-toast", { hasText: "succeeded" }).getByRole("button", { name: "Show history" }).click();
      await wb.page.locator(".tabs-container .tab.active", { hasText: `Ralph: ${change} runs` }).waitFor();
      const buttons = frame.locator("button.restore");
      await wb.until("a Restore to here per iteration", async () => (await buttons.count()) === record.iterations.filter((i: { checkpoint?: unknown }) => i.checkpoint).length);
      await wb.command("Notifications: Clear All Notifications");
    });
    await step("click-and-confirm", async () => {
      await frame.locator('button.restore[data-iteration="1"]').click();
      const dialog = wb.page.locator(".monaco-dialog-box");
      await dialog.waitFor();
      const text = await dialog.innerText();
      assert.match(text, new RegExp(`iteration 1 of run ${record.runId}`));
      assert.match(text, /undo checkpoint/);
      await wb.screenshot(path.join(results, "60-restore-modal.png"));
      await dialog.locator(".monaco-button", { hasText: /^Restore$/ }).click();
    });
    await step("restored", async () => {
      await wb.until("tasks.md as iteration 1 left it", async () => fs.readFileSync(tasksFile, "utf8") === expected);
      const note = await wb.until("the notification naming the undo", async () =>
        (await wb.notifications()).find((n) => n.includes(`restored ${change} to iteration 1`) && n.includes("/@undo/")),
      );
      assert.match(note, /Undo restore/);
    });
    await wb.screenshot(path.join(results, "61-restored-to-iteration-1.png"));
    await step("editor", async () => {
      // The editor shows the restored file: tasks left pending again.
      await wb.openFile("tasks.md");
      await wb.until("pending tasks in tasks.md's lenses", async () => (await wb.lenses()).some((l) => /pending/.test(l)));
    });
    await wb.screenshot(path.join(results, "62-tasks-md-restored.png"));
  });
});
