import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  SERVER_SETTING_KEYS,
  baseUrlEntry,
  didChangeConfigurationParams,
  initializationOptions,
  pythonPathSetting,
  sandboxSettings,
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
      prices: {},
      models: {},
      escalation: [],
      escalateAfter: 2,
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
      "review.agent": null,
      "review.model": null,
      "review.maxRounds": 2,
      runner: "local",
      "ray.address": null,
      "ray.resources": {},
      "ray.gitRemote": null,
      sandbox: "auto",
      "validation.strict": false,
      "conformance.require": "auto",
      "conformance.testGlobs": [],
    });
  });

  it("declares every server setting in package.json, and the client's own pythonPath", () => {
    const declared = Object.keys(manifestDefaults());
    for (const key of SERVER_SETTING_KEYS) {
      // The sandbox's lists are parts of the one `ralph.sandbox` (an object in VS Code).
      const owner = key.startsWith("sandbox.") ? "sandbox" : key;
      assert.ok(declared.includes(owner), `ralph.${owner} is not declared`);
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

/** A `WorkspaceConfiguration` with `inspect`: the sandbox's value at each level. */
function levels(sandbox: { defaultValue?: unknown; globalValue?: unknown; workspaceValue?: unknown; workspaceFolderValue?: unknown }) {
  const merged = sandbox.workspaceFolderValue ?? sandbox.workspaceValue ?? sandbox.globalValue ?? sandbox.defaultValue;
  return {
    get: (key: string) => (key === "sandbox" ? merged : key === "agent" ? "demo" : undefined),
    inspect: (key: string) => (key === "sandbox" ? { key: "ralph.sandbox", ...sandbox } : undefined),
  };
}

describe("sandboxSettings (ralph.sandbox, SPEC §10)", () => {
  it("sends the string form as the mode", () => {
    assert.deepEqual(sandboxSettings(levels({ defaultValue: "auto", globalValue: "off" })), { sandbox: "off" });
    assert.deepEqual(sandboxSettings(levels({ defaultValue: "auto" })), { sandbox: "auto" });
  });

  it("flattens the object form into the keys the server reads", () => {
    const globalValue = { mode: "off", allowWrite: ["~/scratch"], denyRead: ["~/private"], allowedDomains: ["example.org"] };
    assert.deepEqual(serverSettings(levels({ defaultValue: "auto", globalValue })), {
      agent: "demo",
      sandbox: "off",
      "sandbox.allowWrite": ["~/scratch"],
      "sandbox.denyRead": ["~/private"],
      "sandbox.allowedDomains": ["example.org"],
    });
  });

  it("reads flat keys VS Code merged into an object, mode absent meaning auto", () => {
    // settings.json: "ralph.sandbox.allowedDomains": [...], "ralph.sandbox.allowWrite": [...]
    const globalValue = { allowedDomains: ["example.org"], allowWrite: ["/srv/out"] };
    assert.deepEqual(sandboxSettings(levels({ defaultValue: "auto", globalValue })), {
      sandbox: "auto",
      "sandbox.allowWrite": ["/srv/out"],
      "sandbox.allowedDomains": ["example.org"],
    });
  });

  it("ignores a workspace's value: a workspace cannot turn off or widen its sandbox", () => {
    const source = levels({
      defaultValue: "auto",
      workspaceValue: "off",
      workspaceFolderValue: { mode: "off", allowWrite: ["/"] },
    });
    assert.deepEqual(sandboxSettings(source), { sandbox: "auto" });
    const user = levels({ defaultValue: "auto", globalValue: { allowedDomains: ["a.test"] }, workspaceValue: { allowedDomains: ["evil.test"] } });
    assert.deepEqual(initializationOptions(user, true), { agent: "demo", sandbox: "auto", "sandbox.allowedDomains": ["a.test"], trusted: true });
  });

  it("passes a wrong type through for the server to report", () => {
    assert.deepEqual(sandboxSettings(levels({ defaultValue: "auto", globalValue: 3 })), { sandbox: 3 });
    assert.deepEqual(sandboxSettings(levels({ defaultValue: "auto", globalValue: ["off"] })), { sandbox: ["off"] });
    assert.deepEqual(sandboxSettings(levels({ defaultValue: "auto", globalValue: { mode: 1, allowWrite: "~/x" } })), {
      sandbox: 1,
      "sandbox.allowWrite": "~/x",
    });
  });
});

/** A `WorkspaceConfiguration` whose `ralph.env` has a value at each level (VS Code merges them). */
function envLevels(env: { globalValue?: Record<string, string>; workspaceValue?: Record<string, string> }, sandbox?: unknown) {
  const merged = { ...env.globalValue, ...env.workspaceValue };
  return {
    get: (key: string) => (key === "env" ? merged : key === "sandbox" ? sandbox : undefined),
    inspect: (key: string) =>
      key === "env" ? { key: "ralph.env", ...env } : key === "sandbox" ? { key: "ralph.sandbox", defaultValue: "auto", globalValue: sandbox } : undefined,
  };
}

describe("base URLs in ralph.env and the sandbox's allowlist (SPEC §10)", () => {
  it("adds the host of a base URL in the User settings' ralph.env to allowedDomains", () => {
    const source = envLevels({ globalValue: { ANTHROPIC_BASE_URL: "https://gw.corp.example/v1", PATH_EXTRA: "x" } }, { allowedDomains: ["a.test"] });
    assert.deepEqual(sandboxSettings(source), { sandbox: "auto", "sandbox.allowedDomains": ["a.test", "gw.corp.example"] });
  });

  it("adds nothing for a workspace's ralph.env: it may be written by the agent itself", () => {
    const source = envLevels({ workspaceValue: { ANTHROPIC_BASE_URL: "http://evil.example", OPENAI_BASE_URL: "https://evil.example:8443" } });
    const sent = serverSettings(source);
    assert.deepEqual(sent["sandbox.allowedDomains"], undefined);
    assert.deepEqual(sent.sandbox, "auto");
    // the agent still gets the workspace's variables: only the allowlist ignores them
    assert.deepEqual(sent.env, { ANTHROPIC_BASE_URL: "http://evil.example", OPENAI_BASE_URL: "https://evil.example:8443" });
    const both = envLevels({ globalValue: { OPENAI_BASE_URL: "http://127.0.0.1:8123/v1" }, workspaceValue: { OPENAI_BASE_URL: "http://evil.example" } });
    assert.deepEqual(sandboxSettings(both)["sandbox.allowedDomains"], ["127.0.0.1:8123"]);
  });

  it("makes the entries as the server does", () => {
    assert.equal(baseUrlEntry("https://gw.example.com:443/v1"), "gw.example.com");
    assert.equal(baseUrlEntry("http://127.0.0.1:8080"), "127.0.0.1:8080");
    assert.equal(baseUrlEntry("http://[::1]:9000"), "[::1]:9000");
    assert.equal(baseUrlEntry("ftp://files.example"), undefined);
    assert.equal(baseUrlEntry("not a url"), undefined);
    assert.equal(baseUrlEntry(3), undefined);
  });

  it("leaves a wrong-typed allowedDomains for the server to report", () => {
    const source = envLevels({ globalValue: { ANTHROPIC_BASE_URL: "https://gw.example" } }, { allowedDomains: "a.test" });
    assert.deepEqual(sandboxSettings(source)["sandbox.allowedDomains"], "a.test");
  });
});
