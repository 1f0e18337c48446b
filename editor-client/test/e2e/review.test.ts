// Review and merge a run's branch in a real VS Code (SPEC §12): a worktree run of examples/hello
// with the demo agent, then from its run-end notification: Review run (the multi-file diff), a
// comment on a line, "Run again with comments" (its guidance names the path and line), and
// Merge run (the target branch moves; one merge notification).
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { after, before, describe, it } from "node:test";
import type { BrowserContext } from "playwright-core";
import { Workbench, discoverChange, env, e2eServer, openBrowser, stepper } from "./harness";

const results = env("RALPH_E2E_RESULTS");
const example = env("RALPH_E2E_EXAMPLE");
const COMMENT = "Say hello in French here too.";

function git(cwd: string, ...args: string[]): string {
  const who = { GIT_AUTHOR_NAME: "e2e", GIT_AUTHOR_EMAIL: "e2e@example.com", GIT_COMMITTER_NAME: "e2e", GIT_COMMITTER_EMAIL: "e2e@example.com" };
  return execFileSync("git", args, { cwd, encoding: "utf8", env: { ...process.env, ...who } }).trim();
}

describe("Review and merge a run in a real VS Code", () => {
  const server = e2eServer({
    settings: {
      "ralph.server.pythonPath": env("RALPH_E2E_PYTHON"),
      "ralph.agent": "demo",
      "ralph.isolation": "worktree",
      "ralph.env": { RALPH_DEMO_DELAY: "0.2" },
    },
  });
  const workspace = server.path("workspace", path.basename(example));
  const change = discoverChange(example);
  const runsDir = path.join(workspace, ".ralph", "runs");
  let browser: BrowserContext | undefined;
  let wb: Workbench;
  const step = stepper("review-", () => wb);

  /** The run records, oldest first. */
  function records(): { runId: string; state: string; startedAt: string; guidance: { text: string }[] }[] {
    const ids = fs.existsSync(runsDir) ? fs.readdirSync(runsDir).filter((f) => !f.startsWith(".")) : [];
    const all = ids
      .filter((id) => fs.existsSync(path.join(runsDir, id, "record.json")))
      .map((id) => JSON.parse(fs.readFileSync(path.join(runsDir, id, "record.json"), "utf8")));
    return all.sort((a, b) => String(a.startedAt).localeCompare(String(b.startedAt)));
  }

  const toast = (text: string) => wb.page.locator(".notifications-toasts .notification-toast", { hasText: text });

  before(async () => {
    fs.cpSync(example, workspace, { recursive: true });
    fs.rmSync(path.join(workspace, ".ralph"), { recursive: true, force: true });
    fs.appendFileSync(path.join(workspace, ".gitignore"), ".ralph/\n");
    git(workspace, "init", "-q", "-b", "main");
    git(workspace, "add", "-A");
    git(workspace, "commit", "-q", "-m", "start");
    await server.start();
    ({ browser, wb } = await openBrowser(server));
    await step("open-workspace", () => wb.openFolder(server, workspace, "tasks.md"));
  });

  after(async () => {
    await browser?.close().catch(() => undefined);
    await server.stop();
    server.saveLogs(path.join(results, "logs-review"));
    server.cleanup();
  });

  it("reviews the branch and runs again with a comment on a line", async () => {
    const ended = (n: string) => n.includes(`Ralph: ${change} succeeded`);
    await step("run", async () => {
      await wb.until("the ▶ Run change lens", async () => (await wb.lenses()).find((l) => l.includes("Run change")));
      await wb.command("Ralph: Run change");
      await wb.quickPickRows(change);
      await wb.page.keyboard.press("Enter");
      await wb.until("the run-end notification", async () => (await wb.notifications()).find(ended), 180_000);
    });
    const [first] = records();
    assert.equal(first?.state, "succeeded");
    const branch = `ralph/${change}`;
    const tip = git(workspace, "rev-parse", branch);
    const changed = git(workspace, "diff", "--name-only", `main...${branch}`).split("\n").filter(Boolean);
    assert.ok(changed.length > 0, "the run committed on its branch");

    await step("review", async () => {
      await toast("succeeded").getByRole("button", { name: "Review" }).click();
      await wb.page.locator(".tabs-container .tab", { hasText: `Review ${change}` }).first().waitFor();
      await wb.page.locator(".tabs-container .tab", { hasText: `Ralph: ${change} review` }).first().waitFor();
      // The page beside the diff is rendered, as the history page is: its map is a table.
      const page = wb.page.frameLocator("iframe.webview.ready").first().frameLocator("iframe#active-frame");
      await wb.until("the review page's iteration table", async () => (await page.locator("table.iterations tbody tr").count()) >= 1);
      // the multi-file diff editor: one header per changed file, each with a diff editor (it
      // lays out the files in view only); the page beside it names every changed file
      await wb.until("a diff editor in the review", async () => (await wb.page.locator(".monaco-diff-editor").count()) > 0);
      const listed = (await page.locator("body").innerText()).replace(/\u00a0/g, " ");
      for (const file of changed) {
        assert.ok(listed.includes(file), `the review names ${file}`);
      }
      await wb.screenshot(path.join(results, "80-review-diff.png"));
    });

    let line = 0;
    let file = "";
    await step("comment", async () => {
      const modified = wb.page.locator(".monaco-diff-editor .editor.modified").first();
      const target = modified.locator(".view-line").nth(2);
      await target.click();
      // The comment glyph (+) shows in the gutter of a commentable line on hover; click it.
      const line3 = await target.boundingBox();
      const margin = await modified.locator(".margin").first().boundingBox();
      assert.ok(line3 && margin, "the modified side is laid out");
      const at = { x: margin.x + margin.width - 8, y: line3.y + line3.height / 2 };
      await wb.page.mouse.move(at.x, at.y);
      await new Promise((r) => setTimeout(r, 700)); // the glyph shows on hover
      await wb.screenshot(path.join(results, "81-review-hover.png"));
      // The glyph is a line decoration (`.comment-range-glyph`) of that line: click on it.
      const glyphs = await modified.locator(".comment-range-glyph").evaluateAll((els) =>
        els.map((e) => {
          const r = e.getBoundingClientRect();
          return { x: r.x, y: r.y, w: r.width, h: r.height, c: e.className };
        }),
      );
      const onLine = glyphs.find((g) => g.w > 0 && g.y <= at.y && at.y <= g.y + g.h);
      const spot = onLine ? { x: onLine.x + onLine.w / 2, y: at.y } : at;
      await wb.page.mouse.move(spot.x, spot.y);
      await wb.page.mouse.click(spot.x, spot.y);
      // The comment box is a small editor of its own: click in it and type.
      const box = wb.page.locator(".review-widget .comment-form .monaco-editor").first();
      await box.waitFor();
      await box.click();
      await wb.page.keyboard.type(COMMENT);
      const button = wb.page.locator(".review-widget .monaco-button", { hasText: /^Comment$/ }).first();
      if ((await button.count()) > 0) {
        await button.click();
      } else {
        await wb.page.keyboard.press("Control+Enter"); // the comment box's own "submit"
      }
      await wb.until("the comment in its thread", async () => (await wb.page.locator(".review-widget .review-comment").count()) > 0);
      await wb.screenshot(path.join(results, "82-review-comment.png"));
    });

    await step("run-again", async () => {
      await wb.command("Notifications: Clear All Notifications");
      await wb.command("Ralph: Run again with comments");
      await wb.until("the second run's end", async () => {
        const all = records();
        return all.length === 2 && all[1]?.state !== "running" && all[1];
      }, 180_000);
      const second = records()[1];
      assert.equal(second?.state, "succeeded");
      const guidance = (second?.guidance ?? []).map((g) => g.text).join("\n");
      const named = /^1\. (\S+) line (\d+):/m.exec(guidance);
      assert.ok(named, `the guidance names a path and line: ${guidance}`);
      file = named[1] as string;
      line = Number(named[2]);
      assert.ok(changed.includes(file), `${file} is a reviewed file`);
      assert.ok(guidance.includes(COMMENT), guidance);
      // the commented line, quoted as the reviewed tip has it
      const code = (git(workspace, "show", `${tip}:${file}`).split("\n")[line - 1] ?? "").trimEnd();
      assert.ok(code !== "" && guidance.includes(`    > ${code}`), `the guidance quotes line ${line} (${code}): ${guidance}`);
      git(workspace, "merge-base", "--is-ancestor", tip, branch); // the same branch, moved on
    });
    assert.ok(file && line > 0);
  });

  it("merges the run from its notification: the target moves, one merge notification", async () => {
    const branch = `ralph/${change}`;
    const mainBefore = git(workspace, "rev-parse", "main");
    assert.notEqual(git(workspace, "rev-parse", branch), mainBefore, "the branch has the run's work");
    await step("merge", async () => {
      // From the follow-up run's end notification when it is there, else from the palette.
      const fromNote = toast("succeeded").getByRole("button", { name: "Merge" });
      if ((await fromNote.count()) > 0) {
        console.log("merge: from the follow-up run's end notification");
        await fromNote.first().click();
      } else {
        console.log("merge: from the palette (no run-end notification showing)");
        await wb.command("Ralph: Merge run");
        await wb.quickPickRows(change);
        await wb.page.keyboard.press("Enter");
      }
      const merged = (n: string) => n.includes(`Ralph: ${change}: merged`);
      await wb.until("the merge notification", async () => (await wb.notifications()).find(merged), 180_000);
      await new Promise((r) => setTimeout(r, 1500)); // a second one would show by now
      assert.equal((await wb.notifications()).filter((n) => n.includes(`Ralph: ${change}:`)).length, 1, "one merge notification");
      await wb.screenshot(path.join(results, "83-merged.png"));
    });
    const mainAfter = git(workspace, "rev-parse", "main");
    assert.notEqual(mainAfter, mainBefore, "main moved");
    git(workspace, "merge-base", "--is-ancestor", git(workspace, "rev-parse", branch), "main");
  });
});
