// Workspace trust: a restricted workspace shows progress but cannot run; trusting it (without a
// reload) lets the run go, because the client tells the server. The workspace also ships a hostile
// `ralph_lsp/` package: neither starting the server nor the run may ever import it.
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { after, before, beforeEach, describe, it } from "node:test";
import type { BrowserContext } from "playwright-core";
import { Workbench, discoverChange, env, e2eServer, stepper, openBrowser, freshBetweenTests } from "./harness";

const results = env("RALPH_E2E_RESULTS");
const example = env("RALPH_E2E_EXAMPLE");
const STATUS_ID = "ralph-lsp.ralph-lsp.ralph.status";

describe("Ralph in a restricted workspace", () => {
  const server = e2eServer({
    workspaceTrust: true,
    settings: {
      "ralph.server.pythonPath": env("RALPH_E2E_PYTHON"),
      "ralph.agent": "demo",
      "ralph.env": { RALPH_DEMO_DELAY: "0.2" },
    },
  });
  const workspace = server.path("workspace", path.basename(example));
  const marker = server.path("hostile-package-ran");
  let browser: BrowserContext | undefined;
  let wb: Workbench;

  const step = stepper("", () => wb);

  before(async () => {
    fs.cpSync(example, workspace, { recursive: true });
    // Python puts the working folder first on sys.path for `-c` and `-m`: a server or agent started
    // in the workspace would import this package instead of the installed one.
    const hostile = path.join(workspace, "ralph_lsp");
    const payload = `open(${JSON.stringify(marker)}, "a").write(__name__ + "\\n")\n`;
    // What the server, the demo preset and the watchdog import, at today's paths and at v2's.
    const planted = ["__init__.py", "__main__.py", "demo_agent.py", "watchdog.py", "demo/__init__.py",
      "demo/agent.py", "proc/__init__.py", "proc/watchdog.py", "cli/__init__.py", "server/__init__.py"];
    for (const name of planted) {
      fs.mkdirSync(path.dirname(path.join(hostile, name)), { recursive: true });
      fs.writeFileSync(path.join(hostile, name), payload);
    }
    await server.start();
    ({ browser, wb } = await openBrowser(server));
    await step("open-workspace", () => wb.openFolder(server, workspace, "tasks.md"));
  });

  after(async () => {
    await browser?.close().catch(() => undefined);
    await server.stop();
    server.saveLogs(path.join(results, "logs-trust"));
    server.cleanup();
  });

  beforeEach(freshBetweenTests(() => wb, "tasks.md"));

  it("shows lenses but refuses to run while restricted", async () => {
    await step("lenses", () =>
      wb.until("the ▶ Run change lens", async () => (await wb.lenses()).find((l) => l.includes("Run change"))),
    );
    await step("palette-refused", async () => {
      await wb.command("Ralph: Run change");
      await wb.until("the trust warning", async () =>
        (await wb.notifications()).find((n) => n.includes("needs a trusted workspace")),
      );
    });
    await step("lens-refused", async () => {
      await wb.command("Notifications: Clear All Notifications");
      await wb.page.locator(".codelens-decoration a", { hasText: "Run change" }).first().click();
      // The server's own refusal, shown with its text and a way to trust the folder.
      const note = await wb.until("the server's refusal", async () =>
        (await wb.notifications()).find((n) => n.includes("Manage Workspace Trust")),
      );
      assert.match(note, /trust/i);
    });
    assert.match(server.extensionLog(), /interpreter from the setting/);
    assert.ok(!fs.existsSync(marker), "the workspace's own ralph_lsp package ran");
    await wb.screenshot(path.join(results, "20-restricted.png"));
  });

  it("runs once the workspace is trusted, without a reload", async () => {
    await step("grant-trust", async () => {
      await wb.command("Notifications: Clear All Notifications");
      await wb.command("Workspaces: Manage Workspace Trust");
      await wb.page.locator(".workspace-trust-editor .monaco-button", { hasText: /^Trust( Folder)?$/ }).first().click();
      await wb.until("the client to hear of it", async () => server.extensionLog().includes("The workspace is now trusted."));
      // The trust editor opens as a modal editor: close it.
      await wb.page.locator('.modal-editor-part a[aria-label^="Close Modal Editor"]').first().click();
      await wb.page.locator(".workspace-trust-editor").waitFor({ state: "hidden" });
      await wb.until("the settings, trust included, to reach the server", async () =>
        server.extensionLog().includes("Settings changed: sent them to the server."),
      );
    });
    await step("run", async () => {
      await wb.command("Ralph: Run change");
      await wb.quickPickRows(discoverChange(example));
      await wb.page.keyboard.press("Enter");
      await wb.until("the success status", async () => (await wb.statusText(STATUS_ID)).includes("succeeded"));
    });
    assert.doesNotMatch(server.extensionLog(), /restarting the server/, "trust needs no restart");
    assert.ok(!fs.existsSync(marker), "the workspace's own ralph_lsp package ran");
    await wb.screenshot(path.join(results, "21-trusted-run.png"));
  });
});
