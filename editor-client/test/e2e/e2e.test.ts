// The extension in a real VS Code: run a change of examples/hello to success with the demo agent,
// then start it again and stop it, all through the command palette as a person would.
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { after, before, beforeEach, describe, it } from "node:test";
import type { BrowserContext } from "playwright-core";
import { Workbench, countTasks, discoverChange, env, launchBrowser, normalize, e2eServer, stepper, freshBetweenTests } from "./harness";

const results = env("RALPH_E2E_RESULTS");
const example = env("RALPH_E2E_EXAMPLE");
const STATUS_ID = "ralph-lsp.ralph-lsp.ralph.status";

describe("Ralph in a real VS Code", () => {
  const server = e2eServer({
    settings: {
      "ralph.server.pythonPath": env("RALPH_E2E_PYTHON"),
      "ralph.agent": "demo",
      "ralph.env": { RALPH_DEMO_DELAY: "0.3" },
    },
  });
  const workspace = server.path("workspace", path.basename(example));
  const change = discoverChange(example);
  const tasksFile = path.join(workspace, "openspec", "changes", change, "tasks.md");
  let original = "";
  let total = 0;
  let browser: BrowserContext | undefined;
  let wb: Workbench;

  /** Runs a step; on failure keeps a screenshot named after it. */
  const step = stepper("", () => wb);

  before(async () => {
    fs.cpSync(example, workspace, { recursive: true });
    fs.rmSync(path.join(workspace, ".ralph"), { recursive: true, force: true });
    original = fs.readFileSync(tasksFile, "utf8");
    total = countTasks(original).total;
    assert.ok(total > 0, `${tasksFile} has no task`);
    await server.start();
    browser = await launchBrowser(server.path("browser"), env("RALPH_E2E_CHROMIUM"));
    const page = browser.pages()[0] ?? (await browser.newPage());
    wb = new Workbench(page);
    await step("open-workspace", async () => {
      await wb.open(`http://127.0.0.1:${server.port}/?folder=${encodeURIComponent(workspace)}`);
      await wb.openFile("tasks.md");
    });
  });

  after(async () => {
    await browser?.close().catch(() => undefined);
    await server.stop();
    server.saveLogs(path.join(results, "logs"));
    server.cleanup();
  });

  beforeEach(freshBetweenTests(() => wb, "tasks.md"));

  it("runs a change to success from the palette", async () => {
    await step("lenses-appear", () =>
      wb.until("the ▶ Run change lens", async () => (await wb.lenses()).find((l) => l.includes("Run change"))),
    );
    assert.match(await wb.statusText(STATUS_ID), /Ralph/);

    await step("run-change", async () => {
      await wb.command("Ralph: Run change");
      const pick = await wb.quickPickRows(change);
      assert.ok(pick.focused?.startsWith(change), `the active editor's change is preselected: ${JSON.stringify(pick)}`);
      assert.ok(pick.focused?.includes(`0/${total}`), `the pick shows progress: ${pick.focused}`);
      await wb.page.keyboard.press("Enter");
    });

    await step("run-succeeds", async () => {
      await wb.until("a running status", async () => /it \d+/.test(await wb.statusText(STATUS_ID)) || /succeeded/.test(await wb.statusText(STATUS_ID)));
      // Every task line's lens is `✓ done` (story headings may say it too), none is pending.
      await wb.until(`${total} ✓ done lenses`, async () => {
        const lenses = await wb.lenses();
        return (
          lenses.filter((l) => l === "✓ done").length >= total &&
          !lenses.some((l) => /pending|in progress/.test(l)) &&
          lenses.some((l) => l.includes(`${total}/${total}`))
        );
      });
      await wb.until("the success status", async () => {
        const text = await wb.statusText(STATUS_ID);
        return text.includes(`Ralph: ${change} succeeded ${total}/${total}`) && text;
      });
    });
    assert.deepEqual(countTasks(fs.readFileSync(tasksFile, "utf8")), { done: total, total });

    await step("run-end-notification", async () => {
      const ended = (n: string) => n.includes(`Ralph: ${change} succeeded (${total}/${total} tasks)`);
      await wb.until("the run-end notification", async () => (await wb.notifications()).find(ended));
      await new Promise((r) => setTimeout(r, 1500)); // a second one would show by now
      assert.equal((await wb.notifications()).filter(ended).length, 1, "one notification per run");
      await wb.screenshot(path.join(results, "04-run-end-notification.png"));
      await wb.page.locator(".notifications-toasts .notification-toast", { hasText: "succeeded" }).getByRole("button", { name: "Show history" }).click();
      await wb.page.locator(".tabs-container .tab.active", { hasText: `Ralph: ${change} runs` }).waitFor();
      await wb.page.locator("iframe.webview.ready").first().waitFor(); // the page has loaded (and taken the focus)
      await wb.command("Notifications: Clear All Notifications");
      await wb.openFile("tasks.md");
    });

    await step("output", async () => {
      await wb.statusItem(STATUS_ID).click(); // opens the output
      // The run ends with the project's own checks (the example's `make test`), so the end of
      // the output is the verification; the agent's lines are above it.
      // The panel shows only the lines in view: the run's last line at the bottom, and the
      // verification a page or so above it (its output and the conformance line between).
      const last = await wb.until("the run's end at the bottom of the Ralph output", async () => {
        const out = await wb.outputText();
        // (a long line wraps in the panel: its parts are read as one)
        const flat = out.replace(/\s+/g, " ");
        return /succeeded: .*verification passed \(make test\); 4\/4 scenarios verified/.test(flat) && out;
      });
      const tail = await wb.until("the verification above it", async () => {
        await wb.scrollOutput(1e6);
        let seen = last;
        for (let page = 0; page < 4; page++) {
          await new Promise((r) => setTimeout(r, 150));
          seen = `${await wb.outputText()}\n${seen}`;
          if (seen.includes("verify $ make test")) {
            return seen;
          }
          await wb.scrollOutput(-150);
        }
        return false;
      });
      // From the top, a page at a time: the panel shows the lines in view only, and the first
      // edit is a dozen lines down (more when the server logs a warning first). Each try starts
      // at the top again: a wheel turned while the panel was still being filled was once lost.
      const head = await wb.until("the agent's lines in the Ralph output", async () => {
        await wb.scrollOutput(-1e6);
        let seen = "";
        for (let page = 0; page < 4; page++) {
          await new Promise((r) => setTimeout(r, 150));
          seen += `\n${await wb.outputText()}`;
          if (seen.includes("→ Edit") && seen.includes("tasks.md")) {
            return seen;
          }
          await wb.scrollOutput(150);
        }
        return false;
      });
      fs.writeFileSync(path.join(results, "output-run.txt"), `${head}\n…\n${tail}`);
      await wb.scrollOutput(1e6);
    });
    await wb.page.mouse.move(700, 300); // no tooltip over the status bar in the picture
    await wb.screenshot(path.join(results, "01-run-succeeded.png"));
  });

  it("stops a run from the palette", async () => {
    await step("reset", async () => {
      await wb.command("Ralph: Show output");
      // A slower demo agent, so that the run is surely still going when it is stopped: set in
      // the folder's settings, which override the User settings (code-server does not notice
      // its User settings file changing under it; a person would use the Settings editor).
      const folderSettings = path.join(workspace, ".vscode", "settings.json");
      const current = fs.existsSync(folderSettings) ? JSON.parse(fs.readFileSync(folderSettings, "utf8")) : {};
      fs.mkdirSync(path.dirname(folderSettings), { recursive: true });
      fs.writeFileSync(folderSettings, JSON.stringify({ ...current, "ralph.env": { RALPH_DEMO_DELAY: "20" } }));
      await wb.until("the settings to reach the server", async () => server.extensionLog().includes("Settings changed"));
      fs.writeFileSync(tasksFile, original);
      await wb.until("the lenses to show the reset file", async () =>
        (await wb.lenses()).some((l) => l.includes(`Run change · 0/${total}`)),
      );
    });

    await step("start-second-run", async () => {
      await wb.command("Ralph: Run change");
      await wb.quickPickRows(change);
      await wb.page.keyboard.press("Enter");
      await wb.until("a running status", async () => (await wb.statusText(STATUS_ID)).includes(`Ralph: ${change} · it `));
      await wb.until("the ■ Stop lens", async () => (await wb.lenses()).some((l) => l.includes("Stop")));
    });

    await step("guide", async () => {
      await wb.command("Ralph: Send guidance");
      const input = wb.page.locator(".quick-input-widget input").first();
      await input.waitFor();
      await input.fill("Keep the greeting format unchanged");
      await input.press("Enter");
      await wb.until("the guidance confirmation", async () =>
        (await wb.notifications()).find((n) => n.includes(`guidance queued for the next iteration of ${change}`)),
      );
    });

    await step("stop", async () => {
      await wb.command("Ralph: Stop run");
      await wb.until("the stopped status", async () => {
        const text = await wb.statusText(STATUS_ID);
        return text.includes(`Ralph: ${change} stopped`) && text;
      });
      await wb.until("the ▶ Run change lens again", async () => (await wb.lenses()).some((l) => l.includes("Run change")));
    });
    await wb.page.mouse.move(700, 300);
    await wb.screenshot(path.join(results, "02-run-stopped.png"));
  });

  it("shows the run history", async () => {
    await step("history", async () => {
      await wb.command("Ralph: Show run history as Markdown");
      await wb.quickPickRows(change);
      await wb.page.keyboard.press("Enter");
      await wb.page.locator(".tabs-container .tab.active", { hasText: `${change} runs.md` }).waitFor();
      const text = await wb.until("both runs in the history", async () => {
        const lines = normalize(await wb.page.locator(".editor-group-container.active .view-lines").first().innerText());
        return /\| stopped \|/.test(lines) && /\| succeeded \|/.test(lines) && lines;
      });
      fs.writeFileSync(path.join(results, "history.md"), text);
    });
    await wb.screenshot(path.join(results, "03-history.png"));
  });

  it("runs from the Ralph view, tells once when it ends, and charts each iteration", async () => {
    // A demo agent slow enough (about 3 s an iteration) that the view's row is surely seen
    // running: the row is refreshed at most every 250 ms, after a round trip to the server.
    const VIEW_ENV = { RALPH_DEMO_DELAY: "1" };
    const folderSettings = path.join(workspace, ".vscode", "settings.json");
    await step("reset-for-view", async () => {
      await wb.command("View: Close All Editors");
      const before = server.extensionLog().split("Settings changed").length;
      fs.writeFileSync(folderSettings, JSON.stringify({ "ralph.env": VIEW_ENV }));
      await wb.until("the settings to reach the server", async () => server.extensionLog().split("Settings changed").length > before);
      fs.writeFileSync(tasksFile, original);
      await wb.command("Notifications: Clear All Notifications");
    });
    const view = wb.page.locator(".part.sidebar .pane", { has: wb.page.locator(".pane-header", { hasText: "Changes" }) });
    const row = view.locator(".monaco-list-row", { hasText: change }).first();
    await step("open-ralph-view", async () => {
      await wb.page.locator('.activitybar [aria-label^="Ralph"]').first().click();
      await wb.until("the change in the Ralph view, not started", async () => /0\/\d+/.test(await row.innerText()));
    });
    await step("inline-run", async () => {
      await wb.recordRowTexts("ralphRow", ".part.sidebar", ".part.sidebar .pane", change);
      await row.hover();
      await row.locator('.action-label[aria-label*="Run change"]').click();
      // Any phase of a running run: the agent's iteration, or the verification after it (which,
      // under load, can take longer than the agent's part, so the iteration alone may be missed).
      // Every render of the row is recorded in the page, so a phase is seen however short.
      const running = /· (iteration \d+|verifying)/;
      await wb
        .until("the running row", async () => (await wb.seenTexts("ralphRow")).some((t) => running.test(t)))
        .catch(async (err: Error) => {
          const seen = await wb.seenTexts("ralphRow").catch(() => []);
          throw new Error(`${err.message}; the row showed ${JSON.stringify(seen)}; status: ${JSON.stringify(await wb.statusText(STATUS_ID))}`);
        })
        .finally(() => wb.stopRecording("ralphRow"));
      await wb.until("the success status", async () => (await wb.statusText(STATUS_ID)).includes(`Ralph: ${change} succeeded ${total}/${total}`));
    });
    const ended = (n: string) => n.includes(`Ralph: ${change} succeeded`);
    await step("one-notification", async () => {
      await wb.until("the run-end notification", async () => (await wb.notifications()).find(ended));
      await new Promise((r) => setTimeout(r, 1500));
      assert.equal((await wb.notifications()).filter(ended).length, 1, "exactly one notification for the run");
    });
    await step("view-done", async () => {
      await wb.until("the change done in the view", async () => (await row.innerText()).includes(`${total}/${total} · done`));
      await row.locator(".monaco-tl-twistie").click();
      await wb.until("its runs under it", async () => (await view.innerText()).includes("succeeded · "));
      await wb.page.mouse.move(900, 500);
      await wb.screenshot(path.join(results, "50-ralph-view.png"));
    });
    await step("history-chart", async () => {
      await row.hover();
      await row.locator('.action-label[aria-label*="Show run history"]').click(); // the row's own action
      await wb.page.locator(".tabs-container .tab.active", { hasText: `Ralph: ${change} runs` }).waitFor();
      const runs = fs.readdirSync(path.join(workspace, ".ralph", "runs")).sort();
      const newest = runs
        .map((id) => JSON.parse(fs.readFileSync(path.join(workspace, ".ralph", "runs", id, "record.json"), "utf8")))
        .sort((a, b) => String(b.startedAt).localeCompare(String(a.startedAt)))[0];
      const frame = wb.page.frameLocator("iframe.webview.ready").frameLocator("iframe#active-frame");
      const chart = frame.locator("section.run").first().locator("svg.chart circle.point");
      await wb.until("the chart's points", async () => (await chart.count()) === newest.iterations.length && newest.iterations.length > 0);
      await wb.screenshot(path.join(results, "51-history-light.png"));
      // The theme set in the folder's settings (code-server reads a User settings file once; the
      // page re-renders with the theme's colours).
      const themes: [string, string, string][] = [
        ["Default Dark Modern", "vs-dark", "52-history-dark.png"],
        ["Default High Contrast", "hc-black", "53-history-high-contrast.png"],
        ["Default Light Modern", "vs", "54-history-light-again.png"],
      ];
      for (const [theme, css, shot] of themes) {
        fs.writeFileSync(folderSettings, JSON.stringify({ "ralph.env": VIEW_ENV, "workbench.colorTheme": theme }));
        await wb.until(`the ${theme} workbench`, async () => (await wb.page.locator(`.monaco-workbench.${css}`).count()) > 0);
        await wb.until("the chart again", async () => (await chart.count()) === newest.iterations.length);
        await wb.screenshot(path.join(results, shot));
      }
    });
    await step("idle-cpu", async () => {
      // Nothing polls: with the Ralph view and the history page open and no run going, record
      // what the extension host and the server cost over 20 s (make bench measures the server
      // alone; this is the same in a real window, views included).
      await new Promise((r) => setTimeout(r, 3000)); // let the theme switch settle
      const who: Record<"extensionHost" | "server", RegExp> = { extensionHost: /--type=extensionHost/, server: /ralph_server\.py|ralph_lsp/ };
      const seconds = 20;
      const before = { extensionHost: server.cpuSeconds(who.extensionHost), server: server.cpuSeconds(who.server) };
      await new Promise((r) => setTimeout(r, seconds * 1000));
      const measure = (k: "extensionHost" | "server") => {
        const after = server.cpuSeconds(who[k]);
        let used = 0;
        for (const [pid, t] of after) {
          used += t - (before[k].get(pid) ?? t);
        }
        return { processes: after.size, cpuPercent: Number(((100 * used) / seconds).toFixed(2)) };
      };
      const idle = { extensionHost: measure("extensionHost"), server: measure("server") };
      fs.writeFileSync(path.join(results, "idle-cpu.json"), JSON.stringify({ seconds, ...idle }, null, 2));
      console.log(`idle CPU over ${seconds} s with the views open: ${JSON.stringify(idle)}`);
      assert.ok(idle.extensionHost.processes > 0 && idle.server.processes > 0, `both processes found: ${JSON.stringify(idle)}`);
    });
  });
});
