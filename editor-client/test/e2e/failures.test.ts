// When the server cannot start: one clear message saying what to set, no restart loop, and
// recovery once a working interpreter is configured, without reloading the window.
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { after, before, beforeEach, describe, it } from "node:test";
import type { BrowserContext } from "playwright-core";
import { Workbench, env, e2eServer, stepper, openBrowser, freshBetweenTests } from "./harness";

const results = env("RALPH_E2E_RESULTS");
const example = env("RALPH_E2E_EXAMPLE");
const STATUS_ID = "ralph-lsp.ralph-lsp.ralph.status";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function script(file: string, body: string): string {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, `#!/bin/sh\n${body}\n`, { mode: 0o755 });
  return file;
}

const count = (text: string, needle: string): number => text.split(needle).length - 1;

describe("Ralph when the server cannot start", () => {
  const server = e2eServer({
    settings: { "ralph.agent": "demo" },
  });
  // An interpreter that is not there (a typo in the setting, a removed virtualenv).
  const missing = server.path("py", "removed-venv", "bin", "python");
  // One where the launcher's check passes but the server dies at once.
  const crashing = script(
    server.path("py", "crashing", "python"),
    'if [ "$2" != "--check" ]; then echo "simulated crash of the server" >&2; exit 1; fi\nexit 0',
  );
  // One that runs the real server and notes its pid, so that the test can kill each one it starts.
  const realPython = env("RALPH_E2E_PYTHON");
  const dyingPids = server.path("py", "dying", "pids");
  const dying = script(
    server.path("py", "dying", "python"),
    `if [ "$2" != "--check" ]; then echo $$ >> '${dyingPids}'; fi\nexec '${realPython}' "$@"`,
  );
  const workspace = server.path("workspace", path.basename(example));
  let browser: BrowserContext | undefined;
  let wb: Workbench;

  const step = stepper("", () => wb);

  before(async () => {
    fs.cpSync(example, workspace, { recursive: true });
    server.writeSettings({ "ralph.server.pythonPath": missing });
    await server.start();
    server.writeSettings({ "ralph.server.pythonPath": missing });
    ({ browser, wb } = await openBrowser(server));
    await step("open-workspace", () => wb.openFolder(server, workspace, "tasks.md"));
  });

  after(async () => {
    await browser?.close().catch(() => undefined);
    await server.stop();
    server.saveLogs(path.join(results, "logs-failures"));
    server.cleanup();
  });

  beforeEach(freshBetweenTests(() => wb, "tasks.md"));

  it("says once that the interpreter is not there, and what to set", async () => {
    const isMissing = (n: string) => n.includes(`the Python interpreter "${missing}"`) && n.includes("was not found");
    await step("missing-message", () =>
      wb.until("the interpreter-not-found message", async () => (await wb.notifications()).find(isMissing)),
    );
    await sleep(3_000); // time enough for a restart loop to show itself
    assert.equal((await wb.notifications()).filter(isMissing).length, 1);
    assert.equal(count(server.extensionLog(), "was not found"), 1, server.extensionLog());
    assert.equal(await wb.statusText(STATUS_ID), "Ralph");
    assert.deepEqual(await wb.lenses(), []);

    await step("command-while-down", async () => {
      await wb.command("Ralph: Run change");
      await wb.until("a command's error while the server is down", async () =>
        (await wb.notifications()).find((n) => n.includes("the Ralph server is not running")),
      );
    });
    await wb.screenshot(path.join(results, "10-interpreter-not-found.png"));
  });

  it("reports a server that dies while starting once, with its last error line", async () => {
    await wb.command("Notifications: Clear All Notifications");
    server.writeSettings({ "ralph.server.pythonPath": crashing });
    await step("crash-message", () =>
      wb.until("the start-up failure message", async () =>
        (await wb.notifications()).find((n) => n.includes("the server exited while starting: simulated crash of the server")),
      ),
    );
    await sleep(3_000);
    // Its stderr line is logged once per start (the message quoting it is not counted).
    assert.equal(count(server.extensionLog(), "[error] simulated crash of the server"), 1, "started once, not restarted");
    const notes = await wb.notifications();
    assert.equal(notes.length, 1, `one message, not the client's own too: ${JSON.stringify(notes)}`);
    await wb.screenshot(path.join(results, "11-crashing-server.png"));
  });

  it("stops restarting a server that keeps dying", async () => {
    await wb.command("Notifications: Clear All Notifications");
    const startedBefore = count(server.extensionLog(), "Server started.");
    server.writeSettings({ "ralph.server.pythonPath": dying });
    // Kill each server this interpreter starts (by the pid it noted), once the first one runs.
    await wb.until("the server to start", async () => count(server.extensionLog(), "Server started.") > startedBefore);
    const pids = (): number[] =>
      fs.existsSync(dyingPids) ? fs.readFileSync(dyingPids, "utf8").split("\n").filter(Boolean).map(Number) : [];
    const killed = new Set<number>();
    const gaveUp = async () => (await wb.notifications()).find((n) => n.includes("will not be restarted"));
    await step("gave-up-message", () =>
      wb.until("the gave-up message", async () => {
        for (const pid of pids().filter((p) => !killed.has(p))) {
          killed.add(pid);
          try {
            process.kill(pid, "SIGKILL");
          } catch {
            // already gone
          }
        }
        return killed.size <= 10 && gaveUp();
      }),
    );
    const restarts = count(server.extensionLog(), "The server stopped; restarting it.");
    assert.equal(restarts, 3, server.extensionLog());
    assert.equal(killed.size, 4, "started once and restarted three times");
    await sleep(3_000);
    assert.equal(pids().length, 4, "no start after giving up");
    const notes = await wb.notifications();
    assert.equal(notes.length, 1, `one message: ${JSON.stringify(notes)}`);
    assert.equal(await wb.statusText(STATUS_ID), "Ralph");
  });

  it("recovers when a working interpreter is set", async () => {
    await wb.command("Notifications: Clear All Notifications");
    server.writeSettings({ "ralph.server.pythonPath": env("RALPH_E2E_PYTHON") });
    await step("recover", () =>
      wb.until("the ▶ Run change lens", async () => (await wb.lenses()).find((l) => l.includes("Run change"))),
    );
    assert.deepEqual(
      (await wb.notifications()).filter((n) => n.includes("Ralph:")),
      [],
      "no error once the server runs",
    );
  });
});
