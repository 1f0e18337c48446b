// Conformance where the author looks (SPEC §13), in a real VS Code: a delta spec of
// examples/hello's change shows a lens above each scenario; before any test names one it says so,
// and a run with the demo agent (which writes tests/test_cli.py, each test naming its scenario)
// turns it `✓ verified · <test>` once the run's verification has passed.
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { after, before, describe, it } from "node:test";
import type { BrowserContext } from "playwright-core";
import { Workbench, discoverChange, env, e2eServer, openBrowser, stepper } from "./harness";

const results = env("RALPH_E2E_RESULTS");
const example = env("RALPH_E2E_EXAMPLE");
const STATUS_ID = "ralph-lsp.ralph-lsp.ralph.status";
const UNLINKED = "○ no test names this scenario";

describe("scenario lenses", () => {
  const server = e2eServer({
    settings: {
      "ralph.server.pythonPath": env("RALPH_E2E_PYTHON"),
      "ralph.agent": "demo",
      "ralph.env": { RALPH_DEMO_DELAY: "0.3" },
    },
  });
  const workspace = server.path("workspace", path.basename(example));
  const change = discoverChange(example);
  let scenarios = 0;
  let browser: BrowserContext | undefined;
  let wb: Workbench;
  const step = stepper("conformance-", () => wb);

  before(async () => {
    fs.cpSync(example, workspace, { recursive: true });
    fs.rmSync(path.join(workspace, ".ralph"), { recursive: true, force: true });
    // The change as it starts, before its tests exist: no test names any scenario yet.
    fs.rmSync(path.join(workspace, "tests"), { recursive: true, force: true });
    const specs = path.join(workspace, "openspec", "changes", change, "specs");
    for (const capability of fs.readdirSync(specs)) {
      const text = fs.readFileSync(path.join(specs, capability, "spec.md"), "utf8");
      scenarios += text.split("\n").filter((l) => l.startsWith("#### Scenario:")).length;
    }
    assert.ok(scenarios > 0, `no scenario under ${specs}`);
    await server.start();
    ({ browser, wb } = await openBrowser(server));
    await step("open-spec", () => wb.openFolder(server, workspace, "spec.md"));
  });

  after(async () => {
    await browser?.close().catch(() => undefined);
    await server.stop();
    server.saveLogs(path.join(results, "logs-conformance"));
    server.cleanup();
  });

  it("says no test names a scenario, then a demo run turns it verified", async () => {
    await step("unlinked-lenses", () =>
      wb.until(`a "${UNLINKED}" lens`, async () => (await wb.lenses()).some((l) => l === UNLINKED)),
    );

    await step("run-change", async () => {
      await wb.command("Ralph: Run change");
      await wb.quickPickRows(change);
      await wb.page.keyboard.press("Enter");
    });

    const verified = await step("verified-lens", () =>
      wb.until(
        "a ✓ verified lens",
        async () => (await wb.lenses()).find((l) => /^✓ verified · tests\/test_cli\.py::\S+$/.test(l)),
        180_000,
      ),
    );
    assert.match(verified, /^✓ verified · tests\/test_cli\.py::/);

    await step("every-scenario-verified", async () => {
      await wb.until("the run's end", async () => /succeeded/.test(await wb.statusText(STATUS_ID)), 180_000);
      await wb.until(
        `${scenarios} ✓ verified lenses`,
        async () => (await wb.lenses()).filter((l) => l.startsWith("✓ verified · ")).length === scenarios,
      );
      await wb.screenshot(path.join(results, "conformance-verified.png"));
    });
  });
});
