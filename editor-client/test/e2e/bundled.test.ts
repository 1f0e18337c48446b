// One-step install: the platform .vsix alone runs the demo on a machine whose python3 has no
// ralph-lsp (no venv, no pip install), with every setting in the User settings as a person sets
// them. The workspace ships its own `ralph_lsp/` package: starting the server never runs it.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { after, before, beforeEach, describe, it } from "node:test";
import type { BrowserContext } from "playwright-core";
import { Workbench, countTasks, discoverChange, env, e2eServer, stepper, openBrowser, freshBetweenTests } from "./harness";

const results = env("RALPH_E2E_RESULTS");
const example = env("RALPH_E2E_EXAMPLE");
const STATUS_ID = "ralph-lsp.ralph-lsp.ralph.status";

describe("Ralph from the .vsix alone", () => {
  const server = e2eServer({
    // No ralph.server.pythonPath: the interpreter is python3 from PATH.
    settings: {
      "ralph.agent": "demo",
      "ralph.env": { RALPH_DEMO_DELAY: "0.1" },
      "ralph.maxIterations": 10,
      "ralph.verifyWhen": "final",
    },
  });
  const workspace = server.path("workspace", path.basename(example));
  const change = discoverChange(example);
  const tasksFile = path.join(workspace, "openspec", "changes", change, "tasks.md");
  const marker = server.path("hostile-package-ran");
  let browser: BrowserContext | undefined;
  let wb: Workbench;

  const step = stepper("bundled-", () => wb);

  before(async () => {
    // The premise: this machine's python3 has no ralph-lsp of its own.
    const probe = (() => {
      try {
        execFileSync("python3", ["-c", "import ralph_lsp"], { cwd: server.path(), stdio: "ignore" });
        return "importable";
      } catch {
        return "missing";
      }
    })();
    assert.equal(probe, "missing", "python3 on PATH must not have ralph_lsp installed for this test");
    fs.cpSync(example, workspace, { recursive: true });
    fs.rmSync(path.join(workspace, ".ralph"), { recursive: true, force: true });
    const hostile = path.join(workspace, "ralph_lsp");
    fs.mkdirSync(hostile);
    for (const name of ["__init__.py", "__main__.py"]) {
      fs.writeFileSync(path.join(hostile, name), `open(${JSON.stringify(marker)}, "a").write(__name__ + "\\n")\n`);
    }
    await server.start();
    ({ browser, wb } = await openBrowser(server));
    await step("open-workspace", () => wb.openFolder(server, workspace, "tasks.md"));
  });

  after(async () => {
    await browser?.close().catch(() => undefined);
    await server.stop();
    server.saveLogs(path.join(results, "logs-bundled"));
    server.cleanup();
  });

  beforeEach(freshBetweenTests(() => wb, "tasks.md"));

  it("runs the demo to success with the bundled server and python3", async () => {
    const total = countTasks(fs.readFileSync(tasksFile, "utf8")).total;
    await step("lenses", () =>
      wb.until("the ▶ Run change lens", async () => (await wb.lenses()).find((l) => l.includes("Run change"))),
    );
    const log = server.extensionLog();
    assert.match(log, /Server: python3 \(interpreter from PATH/);
    assert.match(log, /ralph-lsp \S+, bundled with the extension/);
    await step("run", async () => {
      await wb.command("Ralph: Run change");
      await wb.quickPickRows(change);
      await wb.page.keyboard.press("Enter");
      await wb.until("the success status", async () => {
        const text = await wb.statusText(STATUS_ID);
        return text.includes(`Ralph: ${change} succeeded ${total}/${total}`) && text;
      });
    });
    assert.deepEqual(countTasks(fs.readFileSync(tasksFile, "utf8")), { done: total, total });
    const runs = fs.readdirSync(path.join(workspace, ".ralph", "runs"));
    const record = JSON.parse(fs.readFileSync(path.join(workspace, ".ralph", "runs", runs[0] as string, "record.json"), "utf8"));
    assert.match(record.reason, /verification passed \(make test\)/); // the User setting verifyWhen
    assert.ok(!fs.existsSync(marker), "the workspace's own ralph_lsp package ran");
    await wb.page.mouse.move(700, 300);
    await wb.screenshot(path.join(results, "40-bundled-run-succeeded.png"));
  });

  it("the editor-title ▶ runs this file's change at once, and ■ stops it", async () => {
    const titleAction = (label: string) => wb.page.locator(`.editor-actions .action-label[aria-label*="${label}"]`);
    await step("reset", async () => {
      // A slow agent, so that the run is surely going when ■ is clicked (the folder's settings).
      const folderSettings = path.join(workspace, ".vscode", "settings.json");
      fs.mkdirSync(path.dirname(folderSettings), { recursive: true });
      fs.writeFileSync(folderSettings, JSON.stringify({ "ralph.env": { RALPH_DEMO_DELAY: "20" } }));
      await wb.until("the settings to reach the server", async () => server.extensionLog().includes("Settings changed"));
      fs.writeFileSync(tasksFile, fs.readFileSync(path.join(example, "openspec", "changes", change, "tasks.md"), "utf8"));
      await wb.until("the reset lenses", async () => (await wb.lenses()).some((l) => /Run change · 0\//.test(l)));
    });
    await step("title-run", async () => {
      await titleAction("Run change").first().click();
      // No picker: the button acts on the file's own change.
      await wb.until("a running status", async () => (await wb.statusText(STATUS_ID)).includes(`Ralph: ${change} · it `));
      assert.equal(await wb.page.locator(".quick-input-widget .quick-input-list .monaco-list-row").filter({ visible: true }).count(), 0);
    });
    await step("title-stop", async () => {
      await wb.until("the ■ title button", async () => (await titleAction("Stop run").count()) > 0);
      assert.equal(await titleAction("Run change").count(), 0, "▶ is hidden while this change runs");
      await wb.screenshot(path.join(results, "41-title-stop-button.png"));
      await titleAction("Stop run").first().click();
      await wb.until("the stopped status", async () => (await wb.statusText(STATUS_ID)).includes(`Ralph: ${change} stopped`));
      await wb.until("▶ back in the title", async () => (await titleAction("Run change").count()) > 0);
    });
  });

  it("shows the verifying phase in the status bar and the ■ lens", async () => {
    await step("slow-checks", async () => {
      // Checks that take a few seconds (the example's own, after a pause), set per folder.
      const slow = 'python3 -c "import subprocess, sys, time; time.sleep(4); sys.exit(subprocess.call([\'make\', \'test\']))"';
      const folderSettings = path.join(workspace, ".vscode", "settings.json");
      const before = server.extensionLog().split("Settings changed").length;
      fs.writeFileSync(folderSettings, JSON.stringify({ "ralph.env": { RALPH_DEMO_DELAY: "0" }, "ralph.verifyCommands": [slow] }));
      await wb.until("the settings to reach the server", async () => server.extensionLog().split("Settings changed").length > before);
      fs.writeFileSync(tasksFile, fs.readFileSync(path.join(example, "openspec", "changes", change, "tasks.md"), "utf8"));
      await wb.until("the reset lenses", async () => (await wb.lenses()).some((l) => /Run change · 0\//.test(l)));
    });
    await step("verifying", async () => {
      await wb.command("Ralph: Run change");
      await wb.quickPickRows(change);
      await wb.page.keyboard.press("Enter");
      await wb.until("the verifying status", async () => (await wb.statusText(STATUS_ID)).includes(`Ralph: ${change} · verifying`));
      await wb.until("the ■ Stop · verifying lens", async () => (await wb.lenses()).some((l) => /■ Stop · verifying · (\d+)\/\1 tasks/.test(l)));
      await wb.page.mouse.move(700, 300);
      await wb.screenshot(path.join(results, "42-verifying.png"));
      await wb.until("the success status", async () => (await wb.statusText(STATUS_ID)).includes(`Ralph: ${change} succeeded`), 90_000);
    });
  });
});
