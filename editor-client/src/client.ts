// The language client of one start of the server, as rust-analyzer's client.ts builds its own:
// how the server is spawned (the launcher, never from the workspace), what goes with
// `initialize`, where its stdout and stderr go, the settings it pulls, and how a lens command's
// error is shown. server.ts owns the lifecycle (when to start, restart and report); this only builds.
import * as readline from "node:readline";
import * as vscode from "vscode";
import {
  LanguageClient,
  RevealOutputChannelOn,
  type ErrorHandler,
  type LanguageClientOptions,
  type ServerOptions,
} from "vscode-languageclient/node";
import { initializationOptions } from "./config";

/** The default ralph.conformance.testGlobs (ralph_lsp/conformance/globs.py), as VS Code globs. */
export const TEST_FILE_PATTERNS = [
  "**/test_*.py",
  "**/*_test.py",
  "**/tests/**/*.py",
  "**/test/**/*.py",
  "**/*.{test,spec}.{js,jsx,mjs,cjs,ts,tsx,mts,cts}",
  "**/__tests__/**/*.{js,jsx,mjs,cjs,ts,tsx,mts,cts}",
  "**/*_test.go",
  "**/tests/**/*.rs",
  "**/src/test/**/*.java",
  "**/*{Test,Tests}.java",
];

export const ralphConfig = (scope?: vscode.ConfigurationScope): vscode.WorkspaceConfiguration =>
  vscode.workspace.getConfiguration("ralph", scope);

/**
 * The language client, minus its own error pop-ups ("couldn't create connection to server", …):
 * they still go to the output, and the context reports each problem once, in its own words.
 */
class RalphLanguageClient extends LanguageClient {
  override error(message: string, data?: unknown, _showNotification?: boolean | "force"): void {
    super.error(message, data, false);
  }
}

/** One start of the server: did it ever run, and the last lines it wrote to stderr. */
export interface StartAttempt {
  running: boolean;
  stderr: string[];
}

export interface ClientSetup {
  /** The interpreter, and the launcher it runs (`bundled/tool/ralph_server.py`). */
  command: string;
  launcher: string;
  /** Never a workspace folder: the extension's own folder. */
  cwd: string;
  env: NodeJS.ProcessEnv;
  output: vscode.LogOutputChannel;
  /** Filled in by the client: the server's last stderr lines, for start-up errors. */
  attempt: StartAttempt;
  errorHandler: ErrorHandler;
  maxRestartCount: number;
  trusted: () => boolean;
  /** Shows a command's error (the server's text) instead of the client's generic one. */
  showError: (err: unknown, command: string) => void;
}

export function createClient(setup: ClientSetup): LanguageClient {
  const serverOptions: ServerOptions = {
    command: setup.command,
    args: [setup.launcher],
    options: { cwd: setup.cwd, env: setup.env },
  };
  const clientOptions: LanguageClientOptions = {
    // tasks.md, a task file a change's schema names, proposal.md (archive lenses), and the specs,
    // proposals and metadata (OpenSpec diagnostics and authoring help, SPEC §11).
    documentSelector: [
      { scheme: "file", pattern: "**/tasks.md" },
      { scheme: "file", pattern: "**/openspec/**/*.md" },
      { scheme: "file", pattern: "**/openspec/**/.openspec.yaml" },
      { scheme: "file", pattern: "**/openspec/config.yaml" },
      // Test files (the usual ralph.conformance.testGlobs): an unsaved edit that names a scenario
      // moves its lens at once (SPEC §13); the server reads no other file's buffer.
      ...TEST_FILE_PATTERNS.map((pattern) => ({ scheme: "file", pattern })),
    ],
    outputChannel: setup.output,
    revealOutputChannelOn: RevealOutputChannelOn.Never,
    initializationOptions: () => initializationOptions(ralphConfig(), setup.trusted()),
    // Never retried: the failure is reported once, from the rejected start.
    initializationFailedHandler: () => false,
    errorHandler: setup.errorHandler,
    stdioOptions: stdio(setup.output, setup.attempt),
    connectionOptions: { maxRestartCount: setup.maxRestartCount },
    middleware: {
      workspace: {
        // A server that pulls its settings gets the same shape as the pushed ones, trust included.
        configuration: async (params, token, next) => {
          const result = await next(params, token);
          if (!Array.isArray(result)) {
            return result;
          }
          return params.items.map((item, i) => {
            if (item.section !== "ralph") {
              return result[i];
            }
            const scope = item.scopeUri ? vscode.Uri.parse(item.scopeUri) : undefined;
            return initializationOptions(ralphConfig(scope), setup.trusted());
          });
        },
      },
      // Commands run from code lenses: show the server's error text instead of a generic one.
      executeCommand: async (command, args, next) => {
        try {
          return await next(command, args);
        } catch (err) {
          setup.showError(err, command);
          return undefined;
        }
      },
    },
  };
  return new RalphLanguageClient("ralph", "Ralph", serverOptions, clientOptions);
}

/** The server's stdout and stderr go to the output; its last stderr lines into `attempt`. */
function stdio(output: vscode.LogOutputChannel, attempt: StartAttempt): LanguageClientOptions["stdioOptions"] {
  return {
    stdout: (input) => {
      readline.createInterface({ input, crlfDelay: Infinity, terminal: false }).on("line", (line) => output.info(line));
    },
    stderr: (input) => {
      readline.createInterface({ input, crlfDelay: Infinity, terminal: false }).on("line", (line) => {
        output.error(line);
        if (line.trim() !== "") {
          attempt.stderr.push(line.trim());
          attempt.stderr.splice(0, attempt.stderr.length - 20);
        }
      });
    },
  };
}
