// Human checkpoints in a real VS Code: a person marks a task blocked in the editor, the run does
// the rest and ends stuck naming it; the person deletes the line and runs again with guidance from
// the palette, and the run succeeds.
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { after, before, beforeEach, describe, it } from "node:test";
import type { BrowserContext } from "playwright-core";
import { Workbench, countTasks, discoverChange, env, launchBrowser, e2eServer, stepper, freshBetweenTests } from "./harness";

const results = env("RALPH_E2E_RESULTS");
const example = env("RALPH_E2E_EXAMPLE");
const STATUS_ID = "ralph-lsp.ralph-lsp.ralph.status";
const WHY = "a person must write the docs";

describe("Ralph with a person in the loop", () => {
  const server = e2eServer({
    settings: {
      "ralph.server.pythonPath": env("RALPH_E2E_PYTHON"),
      "ralph.agent": "demo",
      "ralph.env": { RALPH_DEMO_DELAY: "0.1" },
    },
  });
  const workspace = server.path("workspace", path.basename(example));
  const change = discoverChange(example);
  const tasksFile = path.join(workspace, "openspec", "changes", change, "tasks.md");
  let browser: BrowserContext | undefined;
  let wb: Workbench;
  let lastTask = 0; // 1-based line of the last task
  let total = 0;

  const step = stepper("human-", () => wb);

  /** Puts the cursor on a line of the active editor, through the palette's `:line` mode. */
  async function goToLine(line: number): Promise<void> {
    await wb.page.keyboard.press("F1");
    const input = wb.page.locator(".quick-input-widget input").first();
    await input.waitFor();
    await input.fill(`:${line}`);
    await input.press("Enter");
    // Keys typed before the editor has the focus back would be lost: wait for the cursor.
    await wb.page.locator(".quick-input-widget").waitFor({ state: "hidden" });
    await wb.until(`the cursor on line ${line}`, async () =>
      (await wb.page.locator("#status\\.editor\\.selection").innerText()).includes(`Ln ${line},`),
    );
  }

  before(async () => {
    fs.cpSync(example, workspace, { recursive: true });
    fs.rmSync(path.join(workspace, ".ralph"), { recursive: true, force: true });
    const lines = fs.readFileSync(tasksFile, "utf8").split("\n");
    lastTask = lines.map((l, i) => (/^- \[ \]/.test(l) ? i + 1 : 0)).reduce((a, b) => Math.max(a, b));
    total = countTasks(lines.join("\n")).total;
    await server.start();
    browser = await launchBrowser(server.path("browser"), env("RALPH_E2E_CHROMIUM"));
    wb = new Workbench(browser.pages()[0] ?? (await browser.newPage()));
    await step("open-workspace", async () => {
      await wb.open(`http://127.0.0.1:${server.port}/?folder=${encodeURIComponent(workspace)}`);
      await wb.openFile("tasks.md");
      await wb.until("the ▶ Run change lens", async () => (await wb.lenses()).some((l) => l.includes("Run change")));
    });
  });

  after(async () => {
    await browser?.close().catch(() => undefined);
    await server.stop();
    server.saveLogs(path.join(results, "logs-human"));
    server.cleanup();
  });

  beforeEach(freshBetweenTests(() => wb, "tasks.md"));

  it("a blocked task ends the run stuck once the rest is done, naming it", async () => {
    await step("block-in-editor", async () => {
      await goToLine(lastTask);
      await wb.page.keyboard.press("End");
      await wb.page.keyboard.press("Enter");
      await wb.page.keyboard.press("Home"); // whatever indentation the editor carried over
      await wb.page.keyboard.press("Shift+Home");
      await wb.page.keyboard.insertText(`  - blocked: ${WHY}`);
      await wb.page.keyboard.press("Control+S");
      await wb.until("the blocked line on disk", async () => fs.readFileSync(tasksFile, "utf8").includes(`\n  - blocked: ${WHY}`));
      await wb.until("the ⊘ blocked lens", async () => (await wb.lenses()).includes("⊘ blocked"));
    });
    await wb.screenshot(path.join(results, "30-blocked-lens.png"));

    await step("run-to-stuck", async () => {
      await wb.command("Ralph: Run change");
      await wb.quickPickRows(change);
      await wb.page.keyboard.press("Enter");
      await wb.until("the stuck status", async () => (await wb.statusText(STATUS_ID)).includes(`Ralph: ${change} stuck`));
      await wb.statusItem(STATUS_ID).click(); // opens the output
      const out = await wb.until("the stuck reason in the output", async () => {
        const text = await wb.outputText();
        return text.includes(`■ stuck: blocked: `) && text.includes(WHY) && text;
      });
      assert.match(out, new RegExp(`■ stuck: blocked: \\S+ ${WHY}`));
      // The run-end notification names the state and the blocked task's reason.
      const note = await wb.until("the stuck notification", async () =>
        (await wb.notifications()).find((n) => n.includes(`Ralph: ${change} stuck`)),
      );
      assert.match(note, new RegExp(`blocked: \\S+ ${WHY}`));
    });
    const after = countTasks(fs.readFileSync(tasksFile, "utf8"));
    assert.deepEqual(after, { done: total - 1, total }, "every task but the blocked one is done");
    await step("still-blocked", async () => {
      await wb.openFile("tasks.md");
      await goToLine(lastTask);
      await wb.until("the ⊘ blocked lens after the run, the other tasks done", async () => {
        const lenses = await wb.lenses();
        return lenses.includes("⊘ blocked") && !lenses.some((l) => /pending|in progress/.test(l));
      });
    });
    await wb.page.mouse.move(700, 300);
    await wb.screenshot(path.join(results, "31-stuck-on-blocked.png"));
  });

  it("deleting the line and running with guidance succeeds", async () => {
    await step("unblock", async () => {
      await wb.openFile("tasks.md");
      await goToLine(lastTask + 1);
      await wb.page.keyboard.press("Control+Shift+K"); // delete the line
      await wb.page.keyboard.press("Control+S");
      await wb.until("the line gone from disk", async () => !fs.readFileSync(tasksFile, "utf8").includes("blocked:"));
      await wb.until("no ⊘ blocked lens", async () => !(await wb.lenses()).includes("⊘ blocked"));
    });
    await step("run-with-guidance", async () => {
      await goToLine(1);
      await wb.until("the ✎ Run with guidance lens", async () => (await wb.lenses()).some((l) => l.includes("Run with guidance")));
      // The palette command the lens runs (clicking a lens in the first line's zone races with
      // Monaco's scrolling in a headless browser).
      await wb.command("Ralph: Run change with guidance…");
      await wb.quickPickRows(change);
      await wb.page.keyboard.press("Enter");
      const box = wb.page.locator(".quick-input-widget", { hasText: `guidance for ${change}` });
      const input = box.locator("input").first();
      await input.waitFor();
      await input.fill("Write the docs in plain English");
      await input.press("Enter");
      await wb.until("the success status", async () => {
        const text = await wb.statusText(STATUS_ID);
        return text.includes(`Ralph: ${change} succeeded ${total}/${total}`) && text;
      });
    });
    assert.deepEqual(countTasks(fs.readFileSync(tasksFile, "utf8")), { done: total, total });
    await step("lenses-done", () =>
      wb.until("every lens done", async () => {
        const lenses = await wb.lenses();
        return lenses.some((l) => l.includes(`${total}/${total}`)) && !lenses.some((l) => /pending|blocked|in progress/.test(l));
      }),
    );
    const runs = fs.readdirSync(path.join(workspace, ".ralph", "runs")).sort();
    const record = JSON.parse(fs.readFileSync(path.join(workspace, ".ralph", "runs", runs[runs.length - 1] as string, "record.json"), "utf8"));
    assert.equal(record.state, "succeeded");
    assert.deepEqual(
      record.guidance.map((g: { text: string; deliveredIn: number }) => [g.text, g.deliveredIn]),
      [["Write the docs in plain English", 1]],
    );
    await wb.page.mouse.move(700, 300);
    await wb.screenshot(path.join(results, "32-run-with-guidance-succeeded.png"));
  });
});
