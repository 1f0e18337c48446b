// OpenSpec authoring as a new user meets it: a delta spec with a scenario under `###` shows the
// CLI's message as a squiggle on that line (hover and the Problems panel), the quick fix (Ctrl+.)
// makes it a `####` scenario, and the squiggles go away.
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { after, before, describe, it } from "node:test";
import type { BrowserContext } from "playwright-core";
import { Workbench, discoverChange, env, e2eServer, stepper, openBrowser, normalize } from "./harness";

const results = env("RALPH_E2E_RESULTS");
const example = env("RALPH_E2E_EXAMPLE");
const FIX = "Make the scenario a level-4 header";

/** The example's first delta spec (relative to the change), e.g. specs/greeting/spec.md. */
function firstDelta(change: string): string {
  const specs = path.join(change, "specs");
  const capability = fs.readdirSync(specs).sort()[0] as string;
  return path.join(specs, capability, "spec.md");
}

describe("OpenSpec authoring", () => {
  const server = e2eServer({ settings: { "ralph.server.pythonPath": env("RALPH_E2E_PYTHON") } });
  const workspace = server.path("workspace", path.basename(example));
  let browser: BrowserContext | undefined;
  let wb: Workbench;
  let file = "";
  let line = 0; // 0-based line of the scenario written under ###
  let scenario = "";

  const step = stepper("openspec-", () => wb);

  before(async () => {
    fs.cpSync(example, workspace, { recursive: true });
    file = firstDelta(path.join(workspace, "openspec", "changes", discoverChange(example)));
    const lines = fs.readFileSync(file, "utf8").split("\n");
    // The last scenario: its requirement has no other, so the CLI reports both the skipped
    // header (info) and the requirement without a scenario (error).
    line = lines.map((l) => l.startsWith("#### Scenario:")).lastIndexOf(true);
    assert.ok(line > 0, `no scenario in ${file}`);
    lines[line] = (lines[line] as string).slice(1); // "### Scenario: …"
    scenario = lines[line] as string;
    fs.writeFileSync(file, lines.join("\n"));
    await server.start();
    ({ browser, wb } = await openBrowser(server));
    await step("open-workspace", () => wb.openFolder(server, workspace, "spec.md"));
  });

  after(async () => {
    await browser?.close().catch(() => undefined);
    await server.stop();
    server.saveLogs(path.join(results, "logs-openspec"));
    server.cleanup();
  });

  const squiggles = async (): Promise<number> =>
    wb.page.locator(".monaco-editor .squiggly-error, .monaco-editor .squiggly-warning, .monaco-editor .squiggly-info").count();

  it("shows the CLI's message on the line, and the quick fix clears it", async () => {
    const message = `Header "${scenario}" in ADDED Requirements is not a "### Requirement:" header`;
    await step("squiggle", () => wb.until("the squiggles", async () => (await squiggles()) >= 2));
    await step("problems", async () => {
      await wb.page.locator(".monaco-editor").first().click();
      await wb.page.keyboard.press("Control+Shift+M");
      const panel = wb.page.locator(".markers-panel");
      await wb.until("the CLI's message on its line in the Problems panel", async () => {
        const rows = (await panel.locator(".monaco-list-row").allInnerTexts()).map(normalize);
        return rows.find((r) => r.includes(message) && r.includes(`[Ln ${line + 1}, Col 1]`));
      });
    });
    await wb.screenshot(path.join(results, "40-openspec-problems.png"));
    await step("hover", async () => {
      // The text above the squiggle takes the pointer: move the mouse over it, as a person does.
      let nudge = 0;
      await wb.until("the hover with the message", async () => {
        const box = await wb.page.locator(".monaco-editor .squiggly-info").first().boundingBox();
        if (box) {
          nudge = (nudge + 1) % 4;
          await wb.page.mouse.move(box.x + 8 + nudge, box.y + box.height / 2);
        }
        const hover = wb.page.locator(".monaco-hover");
        return (await hover.count()) > 0 && normalize(await hover.first().innerText()).includes(message);
      });
    });
    await step("quick-fix", async () => {
      await wb.page.keyboard.press("Escape");
      await wb.page.locator(".monaco-editor").first().click();
      await wb.page.keyboard.press("Control+P");
      await wb.page.locator(".quick-input-widget input").first().fill(`:${line + 1}`);
      await wb.page.keyboard.press("Enter");
      // Ctrl+. as a person would; the light bulb, then the palette's Quick Fix, if the key is lost.
      const action = wb.page.getByText(FIX).first();
      let attempt = 0;
      await wb.until("the quick fix menu", async () => {
        if (await action.isVisible()) {
          return true;
        }
        attempt++;
        if (attempt % 12 === 1) {
          await wb.page.keyboard.press("Control+.");
        } else if (attempt % 12 === 5) {
          await wb.page.locator(".lightBulbWidget, .codicon-lightbulb, .codicon-lightbulb-autofix").first().click({ timeout: 2000 }).catch(() => undefined);
        } else if (attempt % 12 === 9) {
          await wb.command("Quick Fix...").catch(() => undefined);
        }
        return false;
      });
      await wb.screenshot(path.join(results, "41-openspec-quick-fix.png"));
      await action.click();
    });
    await step("gone", () => wb.until("the squiggles to go", async () => (await squiggles()) === 0));
    await step("saved", async () => {
      await wb.page.keyboard.press("Control+S");
      await wb.until("the fix on disk", async () => fs.readFileSync(file, "utf8").split("\n")[line] === `#${scenario}`);
    });
    const rows = (await wb.page.locator(".markers-panel .monaco-list-row").allInnerTexts()).map(normalize);
    assert.equal(rows.filter((r) => r.includes("Scenario")).length, 0, rows.join("\n"));
    await wb.screenshot(path.join(results, "42-openspec-fixed.png"));
  });
});
