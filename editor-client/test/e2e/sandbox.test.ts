// The sandbox's settings in a real VS Code (SPEC §10): the lists written as flat keys in the User
// settings, as a person writes them (`"ralph.sandbox.allowWrite": [...]`), reach the server and
// widen the sandbox of a run started from the palette; the status and the history page say so.
// The workspace's own settings try to turn the sandbox off and widen it: they are ignored.
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { after, before, describe, it } from "node:test";
import type { BrowserContext } from "playwright-core";
import { Workbench, discoverChange, env, e2eServer, stepper, openBrowser, normalize } from "./harness";

const results = env("RALPH_E2E_RESULTS");
const example = env("RALPH_E2E_EXAMPLE");
const STATUS_ID = "ralph-lsp.ralph-lsp.ralph.status";

describe("ralph.sandbox in a real VS Code", () => {
  const settings: Record<string, unknown> = {
    "ralph.server.pythonPath": env("RALPH_E2E_PYTHON"),
    "ralph.agent": "demo",
    "ralph.env": { RALPH_DEMO_DELAY: "0.2" },
    // Flat keys, as a person writes them in settings.json (VS Code merges them into an object).
    "ralph.sandbox.allowedDomains": ["example.org"],
  };
  const server = e2eServer({ settings });
  const writable = server.path("scratch-for-the-agent");
  settings["ralph.sandbox.allowWrite"] = [writable];
  const workspace = server.path("workspace", path.basename(example));
  const change = discoverChange(example);
  let browser: BrowserContext | undefined;
  let wb: Workbench;
  const step = stepper("sandbox-", () => wb);

  before(async () => {
    fs.mkdirSync(writable, { recursive: true });
    fs.cpSync(example, workspace, { recursive: true });
    fs.rmSync(path.join(workspace, ".ralph"), { recursive: true, force: true });
    // A hostile workspace: its own settings try to turn the sandbox off and to widen it.
    fs.mkdirSync(path.join(workspace, ".vscode"), { recursive: true });
    fs.writeFileSync(
      path.join(workspace, ".vscode", "settings.json"),
      JSON.stringify({ "ralph.sandbox": "off", "ralph.sandbox.allowedDomains": ["evil.example"], "ralph.sandbox.allowWrite": ["/"] }),
    );
    await server.start();
    ({ browser, wb } = await openBrowser(server));
    await step("open-workspace", () => wb.openFolder(server, workspace, "tasks.md"));
  });

  after(async () => {
    await browser?.close().catch(() => undefined);
    await server.stop();
    server.saveLogs(path.join(results, "logs-sandbox"));
    server.cleanup();
  });

  it("runs from the palette in a sandbox widened by the User settings' flat keys", async () => {
    await step("run", async () => {
      await wb.command("Ralph: Run change");
      await wb.quickPickRows(change);
      await wb.page.keyboard.press("Enter");
      await wb.until("the success status", async () => (await wb.statusText(STATUS_ID)).includes("succeeded"));
    });
    const runs = path.join(workspace, ".ralph", "runs");
    const [record] = fs.readdirSync(runs).map((id) => JSON.parse(fs.readFileSync(path.join(runs, id, "record.json"), "utf8")));
    const box = record.sandbox as { kind: string; writable: string[]; allowedDomains: string[] } | null;
    assert.ok(box, `the run was not sandboxed: ${JSON.stringify(record.sandbox)}`);
    assert.equal(box.kind, "bwrap");
    assert.ok(box.writable.includes(writable), `${writable} not writable: ${JSON.stringify(box.writable)}`);
    assert.ok(!box.writable.includes("/"), "the workspace widened its own sandbox");
    assert.deepEqual(box.allowedDomains, ["example.org"]);

    await step("history", async () => {
      // The run-end notification's button, as a person would.
      await wb.until("the run-end notification", async () => (await wb.notifications()).find((n) => n.includes("succeeded")));
      await wb.page.locator(".notifications-toasts .notification-toast", { hasText: "succeeded" }).getByRole("button", { name: "Show history" }).click();
      await wb.page.locator("iframe.webview.ready").first().waitFor();
      const frame = wb.page.frameLocator("iframe.webview.ready").frameLocator("iframe#active-frame");
      const said = await wb.until("the history page's sandbox line", async () => {
        const lines = await frame.locator("p.sandbox").allInnerTexts().catch(() => [] as string[]);
        return lines.map(normalize).find((t) => t.includes("sandbox: bwrap"));
      });
      assert.match(said, /example\.org/);
      assert.ok(said.includes(writable), said);
      assert.doesNotMatch(said, /evil\.example/);
      await wb.screenshot(path.join(results, "80-sandbox-history.png"));
    });
    await step("status-tooltip", async () => {
      await wb.statusItem(STATUS_ID).first().hover();
      await wb.until("the tooltip saying the sandbox", async () => {
        const hovers = await wb.page.locator(".monaco-hover, .workbench-hover, [role='tooltip']").allInnerTexts();
        return hovers.map(normalize).find((t) => t.includes("sandbox: bwrap") && t.includes("example.org") && t.includes(writable));
      });
    });
  });
});
