import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  SERVER_SETTING_KEYS,
  didChangeConfigurationParams,
  initializationOptions,
  pythonPathSetting,
  serverSettings,
} from "../../src/config";
import { readFileSync } from "node:fs";
import * as path from "node:path";

const source = (values: Record<string, unknown>) => ({ get: (key: string) => values[key] });

/** The defaults declared in package.json, as VS Code would return them. */
function manifestDefaults(): Record<string, unknown> {
  const manifest = JSON.parse(readFileSync(path.join(__dirname, "..", "package.json"), "utf8")) as {
    contributes: { configuration: { properties: Record<string, { default: unknown }> } };
  };
  const out: Record<string, unknown> = {};
  for (const [key, prop] of Object.entries(manifest.contributes.configuration.properties)) {
    out[key.replace(/^ralph\./, "")] = prop.default;
  }
  return out;
}

describe("serverSettings", () => {
  it("maps the declared defaults to the server's defaults (SPEC §5)", () => {
    assert.deepEqual(serverSettings(source(manifestDefaults())), {
      agent: "claude",
      agentArgs: ["--permission-mode", "acceptEdits"],
      maxIterations: 20,
      maxCostUsd: null,
      maxTokens: null,
      modelPrices: {},
      stuckAfter: 3,
      iterationScope: "story",
      verifyCommands: [],
      allowedTools: [],
      verifyWhen: "final",
      verifyTimeoutSeconds: 900,
      stopGraceSeconds: 5,
      iterationTimeoutSeconds: null,
      finishGraceSeconds: 60,
      historyKeepRuns: 50,
      env: {},
      checkpoints: null,
      isolation: "none",
      agentUserConfig: "isolate",
      queueParallel: 1,
      queueMaxCostUsd: null,
      onRunEnd: "",
      runsOutliveEditor: true,
      archiveOnSuccess: false,
      runner: "local",
      "ray.address": null,
      "ray.resources": {},
      "ray.gitRemote": null,
      sandbox: "auto",
      "sandbox.allowWrite": [],
      "sandbox.denyRead": [],
      "sandbox.allowedDomains": [],
      "validation.strict": false,
    });
  });

  it("declares every server setting in package.json, and the client's own pythonPath", () => {
    const declared = Object.keys(manifestDefaults());
    for (const key of SERVER_SETTING_KEYS) {
      assert.ok(declared.includes(key), `ralph.${key} is not declared`);
    }
    assert.ok(declared.includes("server.pythonPath"));
  });

  it("passes values through, drops unknown keys, and an empty agentCommand", () => {
    const s = serverSettings(source({ agent: "demo", agentCommand: [], maxIterations: "7", server: { pythonPath: "x" } }));
    assert.deepEqual(s, { agent: "demo", maxIterations: "7" });
    assert.deepEqual(serverSettings(source({ agentCommand: ["my-agent", "{prompt}"] })), {
      agentCommand: ["my-agent", "{prompt}"],
    });
  });

  it("adds trust to initializationOptions and to pushed settings", () => {
    assert.deepEqual(initializationOptions(source({ agent: "demo" }), false), { agent: "demo", trusted: false });
    assert.deepEqual(didChangeConfigurationParams(source({ agent: "demo" }), true), {
      settings: { ralph: { agent: "demo", trusted: true } },
    });
  });

  it("reads the interpreter setting", () => {
    assert.equal(pythonPathSetting(source({ "server.pythonPath": "/py" })), "/py");
    assert.equal(pythonPathSetting(source({})), "");
  });
});
