// A stranger's repository, tried literally (issue: round four of reliability): a clone whose
// committed `.ralph/` carries forged live files (run ids and changes that are paths outside, a
// socket outside) and a `.ralph/locks` link to a folder outside. Opened untrusted, then trusted,
// then run from the palette: the run is refused naming the link, and once a person removes the
// link it goes. After every stage no file around the clone has changed.
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as net from "node:net";
import * as path from "node:path";
import { after, before, beforeEach, describe, it } from "node:test";
import type { BrowserContext } from "playwright-core";
import { Workbench, discoverChange, env, e2eServer, stepper, openBrowser, freshBetweenTests } from "./harness";

const results = env("RALPH_E2E_RESULTS");
const example = env("RALPH_E2E_EXAMPLE");
const python = env("RALPH_E2E_PYTHON");
const STATUS_ID = "ralph-lsp.ralph-lsp.ralph.status";
const RUN_ID = "r-20200101-000000-1abcde";
/** A real-looking dead queue, sorted after the forged ones: once it is gone, the server's look for
 * live queues has seen every forged file. */
const SENTINEL = "q-20200101-000000-1abcde";

function git(cwd: string, ...args: string[]): string {
  return execFileSync("git", ["-c", "user.name=e2e", "-c", "user.email=e2e@localhost", ...args], { cwd, encoding: "utf8" });
}

/** A pid that was a process and is no more. */
function deadPid(): number {
  const done = spawnSync("true");
  assert.ok(done.pid, "could not start `true`");
  return done.pid;
}

function forgedLive(root: string, runId: string, change: string, socket = "/nonexistent/x.sock"): string {
  return JSON.stringify({
    pid: deadPid(),
    pidStartedAt: "2000-01-01T00:00:00Z",
    runId,
    change,
    root,
    socket,
    startedAt: "2020-01-01T00:00:00Z",
    lastSeen: "2020-01-01T00:00:00Z",
    status: { state: "running" },
  });
}

function write(file: string, text: string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, text);
}

/** Every entry under `folder` (relative path → a file's hash, a link's target, a folder, a socket),
 * leaving out the entries under any of `skip` (relative paths). */
function tree(folder: string, skip: string[] = []): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (rel: string): void => {
    for (const name of fs.readdirSync(path.join(folder, rel)).sort()) {
      const r = rel ? path.join(rel, name) : name;
      if (skip.some((s) => r === s || r.startsWith(s + path.sep))) {
        continue;
      }
      const full = path.join(folder, r);
      const st = fs.lstatSync(full);
      if (st.isSymbolicLink()) {
        out[r] = `link:${fs.readlinkSync(full)}`;
      } else if (st.isDirectory()) {
        out[r] = "dir";
        walk(r);
      } else if (st.isSocket()) {
        out[r] = "socket";
      } else {
        out[r] = crypto.createHash("sha256").update(fs.readFileSync(full)).digest("hex");
      }
    }
  };
  walk("");
  return out;
}

describe("A cloned stranger's repository", () => {
  const server = e2eServer({
    workspaceTrust: true,
    settings: {
      "ralph.server.pythonPath": python,
      "ralph.agent": "demo",
      "ralph.env": { RALPH_DEMO_DELAY: "0.2" },
    },
  });
  const change = discoverChange(example);
  // base/origin: the stranger's repository; base/work/clone: ours; base/canary: a folder outside
  // that the links and forged paths aim at. base/work holds files of its own too.
  const base = server.path("stranger");
  const origin = path.join(base, "origin");
  const canary = path.join(base, "canary");
  const work = path.join(base, "work");
  const clone = path.join(work, "clone");
  const lockLink = path.join(clone, ".ralph", "locks");
  let browser: BrowserContext | undefined;
  let wb: Workbench;
  let socketServer: net.Server | undefined;
  let socketContacts = 0;
  let canaryBefore: Record<string, string> = {};
  let workBefore: Record<string, string> = {};
  let cloneBefore: Record<string, string> = {};

  const step = stepper("stranger-", () => wb);

  /** Nothing around the clone changed: the canary folder, and the clone's parent but the clone. */
  const assertAroundUnchanged = (stage: string): void => {
    assert.deepEqual(tree(canary), canaryBefore, `${stage}: the canary folder changed`);
    assert.deepEqual(tree(work, ["clone"]), workBefore, `${stage}: the clone's parent changed`);
    assert.equal(socketContacts, 0, `${stage}: something connected to the socket a forged file names`);
  };

  /** The stranger's repository: examples/hello with a committed, hostile `.ralph/`. */
  const buildOrigin = (): void => {
    fs.cpSync(example, origin, { recursive: true, filter: (src) => !/(^|\/)(\.ralph|__pycache__)$/.test(src) });
    const live = path.join(origin, ".ralph", "live");
    // The forged files name the clone's own path as their root: a stranger can guess it.
    const queues = path.join(live, "queues");
    const targets = [
      path.join(canary, "q-abs"), // absolute
      "../../../q-rel3", // climbing out of .ralph/live/queues (or .ralph/runs) by 3, 4 and 5
      "../../../../q-rel4",
      "../../../../../canary/q-rel5",
    ];
    targets.forEach((t, n) => write(path.join(queues, `a${n}.json`), forgedLive(clone, t, "queue")));
    write(path.join(queues, `${SENTINEL}.json`), forgedLive(clone, SENTINEL, SENTINEL));
    // Run live files: a change that is a path outside (its record says running, so the run looks
    // interrupted), a run id that climbs out, and one that names a socket outside.
    write(path.join(origin, ".ralph", "runs", RUN_ID, "record.json"), JSON.stringify({ runId: RUN_ID, change, state: "running" }));
    write(path.join(live, "a.json"), forgedLive(clone, RUN_ID, path.join(canary, "victim")));
    write(path.join(live, "b.json"), forgedLive(clone, RUN_ID, "../../../canary/victim"));
    write(path.join(live, "c.json"), forgedLive(clone, "../../../../canary/run", change));
    write(path.join(live, "d.json"), forgedLive(clone, RUN_ID, change, path.join(canary, "runner.sock")));
    // .ralph/locks → base/canary (relative, as a committed link would be).
    fs.symlinkSync("../../../canary", path.join(origin, ".ralph", "locks"));
    git(origin, "init", "-q");
    git(origin, "add", "-A");
    git(origin, "add", "-f", ".ralph");
    git(origin, "commit", "-q", "-m", "a stranger's repository");
  };

  /** Files the forged paths aim at, in the canary folder and beside the clone. */
  const plantCanary = async (): Promise<void> => {
    write(path.join(canary, "Cargo.lock"), "# the user's lock file\nversion = 3\n");
    write(path.join(canary, `${change}.lock`), "mine\n");
    write(path.join(canary, "settings.json"), '{"editor.fontSize": 14}\n');
    for (const name of ["victim.json", "q-abs.json", "q-rel5.json", "run.json"]) {
      write(path.join(canary, name), "{}\n");
    }
    for (const name of ["q-rel3.json", "q-rel4.json", "notes.txt"]) {
      write(path.join(work, name), "keep me\n");
    }
    socketServer = net.createServer((conn) => {
      socketContacts += 1;
      conn.destroy();
    });
    await new Promise<void>((resolve) => socketServer?.listen(path.join(canary, "runner.sock"), resolve));
  };

  before(async () => {
    await plantCanary();
    buildOrigin();
    git(work, "clone", "-q", origin, clone);
    assert.ok(fs.lstatSync(lockLink).isSymbolicLink(), "the clone carries the .ralph/locks link");
    assert.ok(fs.existsSync(path.join(clone, ".ralph", "live", "queues", `${SENTINEL}.json`)));
    canaryBefore = tree(canary);
    workBefore = tree(work, ["clone"]);
    cloneBefore = tree(clone, [".ralph", ".git"]);
    await server.start();
    ({ browser, wb } = await openBrowser(server));
    await step("open-workspace", () => wb.openFolder(server, clone, "tasks.md"));
  });

  after(async () => {
    await browser?.close().catch(() => undefined);
    await server.stop();
    socketServer?.close();
    server.saveLogs(path.join(results, "logs-stranger"));
    server.cleanup();
  });

  beforeEach(freshBetweenTests(() => wb, "tasks.md"));

  it("opened untrusted: the server looks for live runs and nothing around it changes", async () => {
    await step("lenses", () =>
      wb.until("the ▶ Run change lens", async () => (await wb.lenses()).find((l) => l.includes("Run change"))),
    );
    await step("looked-for-live-runs", () =>
      wb.until("the dead queue handled", async () => !fs.existsSync(path.join(clone, ".ralph", "live", "queues", `${SENTINEL}.json`))),
    );
    assertAroundUnchanged("untrusted");
    assert.deepEqual(tree(clone, [".ralph", ".git"]), cloneBefore, "the clone's own files changed");
    await wb.screenshot(path.join(results, "80-stranger-untrusted.png"));
  });

  it("trusted: `ralph-lsp runs` and a run from the palette are refused naming the link", async () => {
    await step("grant-trust", async () => {
      await wb.command("Workspaces: Manage Workspace Trust");
      await wb.page.locator(".workspace-trust-editor .monaco-button", { hasText: /^Trust( Folder)?$/ }).first().click();
      await wb.until("the client to hear of it", async () => server.extensionLog().includes("The workspace is now trusted."));
      await wb.page.locator('.modal-editor-part a[aria-label^="Close Modal Editor"]').first().click();
      await wb.page.locator(".workspace-trust-editor").waitFor({ state: "hidden" });
      await wb.until("the settings, trust included, to reach the server", async () =>
        server.extensionLog().includes("Settings changed: sent them to the server."),
      );
    });
    const runs = spawnSync(python, ["-m", "ralph_lsp", "runs", "--root", clone], { encoding: "utf8", timeout: 60_000 });
    assert.equal(runs.status, 0, `ralph-lsp runs: ${runs.stdout}${runs.stderr}`);
    assertAroundUnchanged("ralph-lsp runs");
    const note = await step("run-refused", async () => {
      await wb.command("Ralph: Run change");
      await wb.quickPickRows(change);
      await wb.page.keyboard.press("Enter");
      return wb.until("the refusal naming the link", async () =>
        (await wb.notifications()).find((n) => n.includes(".ralph/locks is a symbolic link")),
      );
    });
    assert.ok(note.includes(lockLink), `the notification names ${lockLink}: ${note}`);
    assert.ok(fs.lstatSync(lockLink).isSymbolicLink());
    assertAroundUnchanged("refused run");
    assert.deepEqual(tree(clone, [".ralph", ".git"]), cloneBefore, "a refused run changed the clone's files");
    await wb.screenshot(path.join(results, "81-stranger-refused.png"));
  });

  it("runs once a person removes the link, and still nothing around it changes", async () => {
    fs.unlinkSync(lockLink); // as the refusal says
    await step("run", async () => {
      await wb.command("Ralph: Run change");
      await wb.quickPickRows(change);
      await wb.page.keyboard.press("Enter");
      await wb.until("the success status", async () => (await wb.statusText(STATUS_ID)).includes("succeeded"));
    });
    assert.ok(fs.statSync(lockLink).isDirectory() && !fs.lstatSync(lockLink).isSymbolicLink());
    assertAroundUnchanged("the run");
    await wb.screenshot(path.join(results, "82-stranger-ran.png"));
  });
});
