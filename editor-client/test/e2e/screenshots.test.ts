// The pictures of the README and the extension's Marketplace page, taken in a real VS Code so
// they never go stale (`make screenshots` copies them to docs/images/): a run of examples/hello
// in progress (the task lenses, the Ralph view, the Output panel streaming the agent, the status
// bar), then the change's history page once it has succeeded. The review picture comes from
// review.test.ts. Each picture is taken only once what it must show is on the screen.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { after, before, describe, it } from "node:test";
import type { BrowserContext } from "playwright-core";
import { Workbench, countTasks, discoverChange, env, e2eServer, openBrowser, stepper } from "./harness";

const results = env("RALPH_E2E_RESULTS");
const example = env("RALPH_E2E_EXAMPLE");
const STATUS_ID = "ralph-lsp.ralph-lsp.ralph.status";

function git(cwd: string, ...args: string[]): void {
  const who = { GIT_AUTHOR_NAME: "e2e", GIT_AUTHOR_EMAIL: "e2e@example.com", GIT_COMMITTER_NAME: "e2e", GIT_COMMITTER_EMAIL: "e2e@example.com" };
  execFileSync("git", args, { cwd, env: { ...process.env, ...who }, stdio: "ignore" });
}

describe("The README's screenshots", () => {
  const server = e2eServer({
    settings: {
      "ralph.server.pythonPath": env("RALPH_E2E_PYTHON"),
      "ralph.agent": "demo",
      // Slow enough that the run is surely seen half done: about 1.5 s a task.
      "ralph.env": { RALPH_DEMO_DELAY: "1.5" },
    },
  });
  const workspace = server.path("workspace", path.basename(example));
  const change = discoverChange(example);
  const tasksFile = path.join(workspace, "openspec", "changes", change, "tasks.md");
  let total = 0;
  let browser: BrowserContext | undefined;
  let wb: Workbench;
  const step = stepper("screenshots-", () => wb);

  before(async () => {
    fs.cpSync(example, workspace, { recursive: true });
    fs.rmSync(path.join(workspace, ".ralph"), { recursive: true, force: true });
    // A git work tree, so the history page links each iteration's diff.
    fs.appendFileSync(path.join(workspace, ".gitignore"), ".ralph/\n");
    git(workspace, "init", "-q", "-b", "main");
    git(workspace, "add", "-A");
    git(workspace, "commit", "-q", "-m", "start");
    total = countTasks(fs.readFileSync(tasksFile, "utf8")).total;
    await server.start();
    ({ browser, wb } = await openBrowser(server));
    await step("open-workspace", () => wb.openFolder(server, workspace, "tasks.md"));
  });

  after(async () => {
    await browser?.close().catch(() => undefined);
    await server.stop();
    server.saveLogs(path.join(results, "logs-screenshots"));
    server.cleanup();
  });

  it("a run in progress, then its history page", async () => {
    await step("ralph-view", async () => {
      await wb.page.locator('.activitybar [aria-label^="Ralph"]').first().click();
      await wb.page.mouse.move(700, 300); // the activity bar's tooltip gone before the picture
      await wb.until("the change in the Ralph view", async () =>
        (await wb.page.locator(".part.sidebar .monaco-list-row", { hasText: change }).count()) > 0,
      );
    });
    await step("run", async () => {
      await wb.until("the ▶ Run change lens", async () => (await wb.lenses()).find((l) => l.includes("Run change")));
      await wb.command("Ralph: Run change");
      await wb.quickPickRows(change);
      await wb.page.keyboard.press("Enter");
      await wb.command("Ralph: Show output");
    });

    await step("in-progress", async () => {
      // Half done: some tasks checked, some not, an iteration going, the agent's edits in the
      // output. The demo agent checks a task every 1.5 s, so this holds for a few seconds.
      await wb.until("a run half done", async () => {
        const lenses = await wb.lenses();
        const done = lenses.filter((l) => l === "✓ done").length;
        const status = await wb.statusText(STATUS_ID);
        const output = await wb.outputText();
        return done >= 2 && done <= total - 2 && /· it \d+/.test(status) && output.includes("→ Edit");
      }, 120_000);
      await wb.page.mouse.move(700, 300); // no tooltip in the picture
      await wb.screenshot(path.join(results, "shot-run-in-progress.png"));
    });

    await step("succeeded", () =>
      wb.until("the success status", async () => (await wb.statusText(STATUS_ID)).includes(`Ralph: ${change} succeeded ${total}/${total}`), 180_000),
    );

    await step("history", async () => {
      await wb.command("Notifications: Clear All Notifications");
      await wb.command("Ralph: Show run history");
      await wb.quickPickRows(change);
      await wb.page.keyboard.press("Enter");
      await wb.page.locator(".tabs-container .tab.active", { hasText: `Ralph: ${change} runs` }).waitFor();
      const frame = wb.page.frameLocator("iframe.webview.ready").frameLocator("iframe#active-frame");
      await wb.until("the chart and the iteration rows", async () =>
        (await frame.locator("svg.chart circle.point").count()) > 0 && (await frame.locator("a", { hasText: /diff/i }).count()) > 0,
      );
      // The sandbox line lists the folders of the machine the picture is taken on (its homes,
      // its temporary folders): a published picture shows the space it takes, not those paths.
      await frame.locator("p.sandbox").evaluateAll((all) => all.forEach((p) => ((p as unknown as { style: { visibility: string } }).style.visibility = "hidden")));
      await wb.page.mouse.move(700, 300);
      await wb.screenshot(path.join(results, "shot-history.png"));
    });
    assert.ok(fs.statSync(path.join(results, "shot-run-in-progress.png")).size > 10_000, "the picture was taken");
    assert.ok(fs.statSync(path.join(results, "shot-history.png")).size > 10_000, "the picture was taken");
  });
});
