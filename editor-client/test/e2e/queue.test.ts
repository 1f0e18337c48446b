// A queue of changes (SPEC §9) in a real VS Code: "Ralph: Run changes…" on two changes of
// examples/toolbox runs both, one after the other, and one notification says how the queue ended.
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { after, before, describe, it } from "node:test";
import type { BrowserContext } from "playwright-core";
import { Workbench, countTasks, env, e2eServer, stepper, openBrowser } from "./harness";

const results = env("RALPH_E2E_RESULTS");
const toolbox = path.join(path.dirname(env("RALPH_E2E_EXAMPLE")), "toolbox");
const CHANGES = ["add-slugify", "add-word-count"];

describe("A queue of two changes", () => {
  const server = e2eServer({
    settings: {
      "ralph.server.pythonPath": env("RALPH_E2E_PYTHON"),
      "ralph.agent": "demo",
      "ralph.env": { RALPH_DEMO_DELAY: "0.2" },
    },
  });
  const workspace = server.path("workspace", "toolbox");
  const changesDir = path.join(workspace, "openspec", "changes");
  let browser: BrowserContext | undefined;
  let wb: Workbench;

  const step = stepper("queue-", () => wb);

  before(async () => {
    fs.cpSync(toolbox, workspace, { recursive: true });
    fs.rmSync(path.join(workspace, ".ralph"), { recursive: true, force: true });
    // Two changes: the third is left out of the workspace, so the pick preselects exactly two.
    for (const name of fs.readdirSync(changesDir)) {
      if (name !== "archive" && !CHANGES.includes(name)) {
        fs.rmSync(path.join(changesDir, name), { recursive: true, force: true });
      }
    }
    await server.start();
    ({ browser, wb } = await openBrowser(server));
    await step("open-workspace", () => wb.openFolder(server, workspace, "tasks.md"));
  });

  after(async () => {
    await browser?.close().catch(() => undefined);
    await server.stop();
    server.saveLogs(path.join(results, "logs-queue"));
    server.cleanup();
  });

  it("runs both from Run changes… and ends with one notification", async () => {
    await step("pick", async () => {
      await wb.until("the ▶ Run change lens", async () => (await wb.lenses()).find((l) => l.includes("Run change")));
      await wb.command("Ralph: Run changes…");
      const { rows } = await wb.quickPickRows(CHANGES[1] as string);
      for (const name of CHANGES) {
        assert.ok(rows.some((r) => r.includes(name)), `${name} is offered: ${JSON.stringify(rows)}`);
      }
      await wb.page.keyboard.press("Enter"); // both are preselected (their tasks are open)
      await wb.quickPickRows("Run in this order");
      await wb.screenshot(path.join(results, "70-queue-order.png"));
      await wb.page.keyboard.press("Enter");
    });
    const ended = (n: string) => n.includes("Ralph: queue ended");
    await step("ends", async () => {
      const note = await wb.until("the queue's notification", async () => (await wb.notifications()).find(ended), 240_000);
      assert.match(note, /2\/2 succeeded \(verified\)/);
      await new Promise((r) => setTimeout(r, 2000)); // a second note (or one per change) would show by now
      const notes = await wb.notifications();
      assert.equal(notes.filter(ended).length, 1, `exactly one queue notification: ${JSON.stringify(notes)}`);
      assert.equal(notes.filter((n) => CHANGES.some((c) => n.includes(`Ralph: ${c} succeeded`))).length, 0, "no note per change");
      await wb.screenshot(path.join(results, "71-queue-ended.png"));
    });
    for (const name of CHANGES) {
      const counts = countTasks(fs.readFileSync(path.join(changesDir, name, "tasks.md"), "utf8"));
      assert.equal(counts.done, counts.total, `${name}: every task checked`);
    }
    const queues = path.join(workspace, ".ralph", "queues");
    assert.equal(fs.readdirSync(queues).length, 1, "one queue record");
  });
});
