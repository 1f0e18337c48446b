// Planning in a real VS Code (SPEC §14): "Ralph: New change…" with a name and a description
// starts a planning run with the demo agent; its end is the "planned" notification, the planned
// change's proposal.md shows the Approve and run lens, and a click on it runs the change to
// success (every task checked, the status bar says succeeded).
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { after, before, describe, it } from "node:test";
import type { BrowserContext } from "playwright-core";
import { Workbench, countTasks, env, e2eServer, normalize, openBrowser, stepper } from "./harness";

const results = env("RALPH_E2E_RESULTS");
const toolbox = path.join(path.dirname(env("RALPH_E2E_EXAMPLE")), "toolbox");
const STATUS_ID = "ralph-lsp.ralph-lsp.ralph.status";
const NAME = "add-reverse";
const DESCRIPTION = "Reverse a string with toolbox.reverse. Keep combining marks with their base letter. Should emoji be kept whole?";

describe("Planning a new change", () => {
  const server = e2eServer({
    settings: {
      "ralph.server.pythonPath": env("RALPH_E2E_PYTHON"),
      "ralph.agent": "demo",
      "ralph.env": { RALPH_DEMO_DELAY: "0.2" },
    },
  });
  const workspace = server.path("workspace", "toolbox");
  const folder = path.join(workspace, "openspec", "changes", NAME);
  let browser: BrowserContext | undefined;
  let wb: Workbench;

  const step = stepper("plan-", () => wb);

  /** The run records of the change, oldest first. */
  function records(): { kind?: string; state: string; startedAt: string; change: string }[] {
    const runs = path.join(workspace, ".ralph", "runs");
    const all = (fs.existsSync(runs) ? fs.readdirSync(runs) : [])
      .map((id) => path.join(runs, id, "record.json"))
      .filter((f) => fs.existsSync(f))
      .map((f) => JSON.parse(fs.readFileSync(f, "utf8")));
    return all.filter((r) => r.change === NAME).sort((a, b) => String(a.startedAt).localeCompare(String(b.startedAt)));
  }

  /** Types `text` into the open input box (showInputBox) and accepts it. */
  async function answer(title: string, text: string): Promise<void> {
    const widget = wb.page.locator(".quick-input-widget");
    await widget.locator(".quick-input-title", { hasText: title }).waitFor();
    const input = widget.locator("input").first();
    await input.fill(text);
    await input.press("Enter");
  }

  /** Opens `parts` (folders, then the file) by clicking their rows in the Explorer. */
  async function openInExplorer(parts: string[]): Promise<void> {
    const tree = wb.page.locator(".explorer-folders-view");
    for (const [i, part] of parts.entries()) {
      const exact = new RegExp(`^${part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}$`);
      const row = tree.locator(".monaco-list-row", { has: wb.page.locator(".label-name", { hasText: exact }) }).first();
      await row.waitFor();
      if (i === parts.length - 1 || (await row.getAttribute("aria-expanded")) !== "true") {
        await row.click();
      }
    }
  }

  before(async () => {
    fs.cpSync(toolbox, workspace, { recursive: true });
    fs.rmSync(path.join(workspace, ".ralph"), { recursive: true, force: true });
    await server.start();
    ({ browser, wb } = await openBrowser(server));
    await step("open-workspace", () => wb.openFolder(server, workspace, "pyproject.toml"));
  });

  after(async () => {
    await browser?.close().catch(() => undefined);
    await server.stop();
    server.saveLogs(path.join(results, "logs-plan"));
    server.cleanup();
  });

  it("plans from New change…, then Approve and run implements it", async () => {
    await step("new-change", async () => {
      await wb.command("Ralph: New change…");
      await answer("Ralph: New change (1/2)", NAME);
      await answer("Ralph: New change (2/2)", DESCRIPTION);
    });
    const planned = (n: string) => n.includes(`Ralph: ${NAME} is planned`);
    await step("planned", async () => {
      const note = await wb.until("the planned notification", async () => (await wb.notifications()).find(planned), 180_000);
      assert.match(note, /approve it \(Approve and run\)/);
      assert.match(note, /1 open question\(s\): Should emoji be kept whole\?/);
      await wb.screenshot(path.join(results, "90-plan-planned.png"));
    });
    assert.deepEqual(
      records().map((r) => [r.kind, r.state]),
      [["plan", "planned"]],
    );
    for (const file of ["proposal.md", "design.md", "tasks.md", path.join("specs", "reverse", "spec.md")]) {
      assert.ok(fs.existsSync(path.join(folder, file)), `the planner wrote ${file}`);
    }

    await step("approve-lens", async () => {
      await wb.command("Notifications: Clear All Notifications");
      // Through the Explorer, as a person would: Quick Open's file list can miss a file this
      // new on a loaded machine ("No matching results"), the Explorer's tree is told at once.
      await openInExplorer(["openspec", "changes", NAME, "proposal.md"]);
      await wb.page.locator(".tabs-container .tab.active", { hasText: "proposal.md" }).waitFor();
      const lenses = await wb.until("the Approve and run lens", async () => {
        const all = await wb.lenses();
        return all.some((l) => l.includes("Approve and run")) && all;
      });
      assert.ok(lenses.some((l) => l.includes("Revise…")) && lenses.some((l) => l.includes("Discard")), JSON.stringify(lenses));
      await wb.screenshot(path.join(results, "91-plan-approve-lens.png"));
      await wb.page.locator(".monaco-editor .codelens-decoration a", { hasText: "Approve and run" }).first().click();
    });

    const total = countTasks(fs.readFileSync(path.join(folder, "tasks.md"), "utf8")).total;
    assert.ok(total > 0, "the plan has tasks");
    await step("run-succeeds", async () => {
      const ended = (n: string) => n.includes(`Ralph: ${NAME} succeeded (${total}/${total} tasks)`);
      await wb.until("the run's succeeded notification", async () => (await wb.notifications()).find(ended), 240_000);
      await wb.until("the succeeded status", async () => {
        const text = normalize(await wb.statusText(STATUS_ID));
        return text.includes(`Ralph: ${NAME} succeeded ${total}/${total}`) && text;
      });
      await wb.screenshot(path.join(results, "92-plan-run-succeeded.png"));
    });
    const counts = countTasks(fs.readFileSync(path.join(folder, "tasks.md"), "utf8"));
    assert.equal(counts.done, counts.total, "every task is checked");
    assert.deepEqual(
      records().map((r) => [r.kind ?? "run", r.state]),
      [
        ["plan", "planned"],
        ["run", "succeeded"],
      ],
    );
  });
});
