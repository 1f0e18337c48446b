// The `ralph.*` settings as the server receives them (SPEC §5). Pure: callers pass in anything with
// a `get(key)` and, optionally, an `inspect(key)` (a `vscode.WorkspaceConfiguration` for the
// section "ralph" fits).

export interface SettingsSource {
  get(key: string): unknown;
  /** The value of each level (VS Code's `WorkspaceConfiguration.inspect`). */
  inspect?(key: string): { defaultValue?: unknown; globalValue?: unknown } | undefined;
}

/** The settings the server reads, in the order of SPEC §5 (the client's own live under `server.`). */
export const SERVER_SETTING_KEYS = [
  "agent",
  "agentCommand",
  "agentArgs",
  "maxIterations",
  "maxCostUsd",
  "maxTokens",
  "modelPrices",
  "prices",
  "models",
  "escalation",
  "escalateAfter",
  "stuckAfter",
  "iterationScope",
  "verifyCommands",
  "verifyWhen",
  "verifyTimeoutSeconds",
  "stopGraceSeconds",
  "iterationTimeoutSeconds",
  "finishGraceSeconds",
  "historyKeepRuns",
  "env",
  "checkpoints",
  "isolation",
  "allowedTools",
  "agentUserConfig",
  "queueParallel",
  "queueMaxCostUsd",
  "onRunEnd",
  "runsOutliveEditor",
  "archiveOnSuccess",
  "review.agent",
  "review.model",
  "review.maxRounds",
  "runner",
  "ray.address",
  "ray.resources",
  "ray.gitRemote",
  "sandbox",
  "sandbox.allowWrite",
  "sandbox.denyRead",
  "sandbox.allowedDomains",
  "validation.strict",
  "conformance.require",
  "conformance.testGlobs",
] as const;
export type ServerSettingKey = (typeof SERVER_SETTING_KEYS)[number];

/** Settings of the client itself that only take effect when the server restarts. */
export const RESTART_SETTINGS = ["ralph.server.pythonPath", "ralph.server.importStrategy"] as const;

export type ServerSettings = Partial<Record<ServerSettingKey, unknown>>;

/**
 * The server's settings: every key VS Code knows a value for (its defaults mirror the server's),
 * except an empty `agentCommand`, which means "use the preset" and is left out so that it cannot
 * be read as an override. Values pass through as they are: the server checks their types and
 * reports a wrong one once.
 */
export function serverSettings(source: SettingsSource): ServerSettings {
  const out: ServerSettings = sandboxSettings(source);
  for (const key of SERVER_SETTING_KEYS) {
    if (key === "sandbox" || key.startsWith("sandbox.")) {
      continue;
    }
    const value = source.get(key);
    if (value === undefined) {
      continue;
    }
    if (key === "agentCommand" && Array.isArray(value) && value.length === 0) {
      continue;
    }
    out[key] = value;
  }
  return out;
}

const SANDBOX_LISTS = ["allowWrite", "denyRead", "allowedDomains"] as const;

/**
 * `ralph.sandbox` (SPEC §10) as the flat keys the server reads (`sandbox`, `sandbox.allowWrite`,
 * …). VS Code declares one setting, `"auto"`/`"off"` or `{ mode, allowWrite, denyRead,
 * allowedDomains }`; flat keys a person writes in settings.json (`"ralph.sandbox.allowWrite"`)
 * reach it merged into that object. Read from the User settings only (`globalValue`, else the
 * default): a workspace can never turn off or widen its own sandbox, not even through a key
 * VS Code does not know. The hosts of the base URLs in the User settings' `ralph.env` join
 * `sandbox.allowedDomains`. A value of the wrong type passes through for the server to report.
 */
export function sandboxSettings(source: SettingsSource): ServerSettings {
  return withUserBaseUrls(sandboxValue(source), userBaseUrlHosts(source));
}

function sandboxValue(source: SettingsSource): ServerSettings {
  let value: unknown;
  if (source.inspect) {
    const levels = source.inspect("sandbox");
    value = levels?.globalValue ?? levels?.defaultValue;
  } else {
    value = source.get("sandbox");
  }
  if (value === undefined) {
    return {};
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return { sandbox: value };
  }
  const object = value as Record<string, unknown>;
  const out: ServerSettings = { sandbox: object.mode ?? "auto" };
  for (const list of SANDBOX_LISTS) {
    if (object[list] !== undefined) {
      out[`sandbox.${list}`] = object[list];
    }
  }
  return out;
}

/** The variables whose URL's host an agent connects to (the server's `BASE_URL_VARS`). */
export const BASE_URL_VARS = ["ANTHROPIC_BASE_URL", "OPENAI_BASE_URL", "GOOGLE_GEMINI_BASE_URL", "GOOGLE_VERTEX_BASE_URL"];

/**
 * The allowlist entry of a base URL (`https://gw.example.com/v1` → `gw.example.com`,
 * `http://127.0.0.1:8080` → `127.0.0.1:8080`), as the server's `base_url_entry` makes it; undefined
 * when it names no http(s) host.
 */
export function baseUrlEntry(url: unknown): string | undefined {
  if (typeof url !== "string") {
    return undefined;
  }
  let parsed: URL;
  try {
    parsed = new URL(url.trim());
  } catch {
    return undefined;
  }
  if ((parsed.protocol !== "http:" && parsed.protocol !== "https:") || !parsed.hostname) {
    return undefined;
  }
  const port = parsed.port; // "" for the scheme's own
  return port === "" || port === "443" || port === "80" ? parsed.hostname : `${parsed.hostname}:${port}`;
}

/**
 * The hosts of the base URLs in the User settings' `ralph.env` (`globalValue`): the server never
 * lets `ralph.env` widen the allowlist, since a workspace's settings set it too, so the client
 * sends the User's own as `ralph.sandbox.allowedDomains` entries. None without `inspect`.
 */
function userBaseUrlHosts(source: SettingsSource): string[] {
  const env = source.inspect?.("env")?.globalValue;
  if (typeof env !== "object" || env === null || Array.isArray(env)) {
    return [];
  }
  const values = env as Record<string, unknown>;
  return BASE_URL_VARS.map((name) => baseUrlEntry(values[name])).filter((e): e is string => e !== undefined);
}

function withUserBaseUrls(out: ServerSettings, hosts: string[]): ServerSettings {
  const listed = out["sandbox.allowedDomains"];
  if (hosts.length === 0 || (listed !== undefined && !Array.isArray(listed))) {
    return out; // a wrong type passes through for the server to report
  }
  return { ...out, "sandbox.allowedDomains": [...new Set([...(listed ?? []), ...hosts])] };
}

/** `initializationOptions`: the settings plus the workspace's trust. */
export function initializationOptions(source: SettingsSource, trusted: boolean): ServerSettings & { trusted: boolean } {
  return { ...serverSettings(source), trusted };
}

/** `workspace/didChangeConfiguration` params: the section "ralph", trust included. */
export function didChangeConfigurationParams(
  source: SettingsSource,
  trusted: boolean,
): { settings: { ralph: ServerSettings & { trusted: boolean } } } {
  return { settings: { ralph: initializationOptions(source, trusted) } };
}

export function pythonPathSetting(source: SettingsSource): string {
  const v = source.get("server.pythonPath");
  return typeof v === "string" ? v : "";
}

export function importStrategySetting(source: SettingsSource): "useBundled" | "fromEnvironment" {
  return source.get("server.importStrategy") === "fromEnvironment" ? "fromEnvironment" : "useBundled";
}
