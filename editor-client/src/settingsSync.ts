// Settings and trust, kept in step with the server: a changed `ralph.*` setting is sent to it
// (`workspace/didChangeConfiguration`), unless it changes which interpreter or import strategy
// starts the server, which restarts it; a trust grant restarts it when the interpreter changes.
import * as vscode from "vscode";
import { ralphConfig } from "./client";
import { RESTART_SETTINGS, didChangeConfigurationParams, importStrategySetting } from "./config";
import { messageOf } from "./errors";
import type { ServerProcess } from "./server";

export class SettingsSync implements vscode.Disposable {
  private pushTimer: ReturnType<typeof setTimeout> | undefined;
  private readonly disposables: vscode.Disposable[];

  constructor(
    private readonly server: ServerProcess,
    private readonly output: vscode.LogOutputChannel,
  ) {
    this.disposables = [
      vscode.workspace.onDidChangeConfiguration((e) => this.onConfigurationChanged(e)),
      vscode.workspace.onDidGrantWorkspaceTrust(() => this.onTrustGranted()),
    ];
  }

  private onConfigurationChanged(e: vscode.ConfigurationChangeEvent): void {
    if (!e.affectsConfiguration("ralph")) {
      return;
    }
    // VS Code also reports restricted settings as changed when trust is granted: restart only
    // when the interpreter really changes.
    const restartKey = RESTART_SETTINGS.find((key) => e.affectsConfiguration(key));
    if (!restartKey) {
      this.pushSettings();
      return;
    }
    void this.server.pickInterpreter().then((next) => {
      if (next.command !== this.server.interpreter?.command || importStrategySetting(ralphConfig()) !== this.server.strategy) {
        this.output.info(`${restartKey} changed: restarting the server.`);
        void this.server.restart();
      } else {
        this.pushSettings();
      }
    });
  }

  private onTrustGranted(): void {
    this.output.info("The workspace is now trusted.");
    void this.server.pickInterpreter().then((next) => {
      if (!this.server.hasClient || next.command !== this.server.interpreter?.command) {
        void this.server.restart(); // e.g. the workspace's .venv may be used now
        return;
      }
      this.pushSettings();
    });
  }

  /** Sends the settings soon, once: a trust grant also fires a configuration change. */
  private pushSettings(): void {
    if (this.pushTimer === undefined) {
      this.pushTimer = setTimeout(() => {
        this.pushTimer = undefined;
        this.sendSettings();
      }, 50);
    }
  }

  private sendSettings(): void {
    const client = this.server.runningClient;
    if (!client) {
      return;
    }
    const params = didChangeConfigurationParams(ralphConfig(), vscode.workspace.isTrusted);
    client.sendNotification("workspace/didChangeConfiguration", params).then(
      () => this.output.info("Settings changed: sent them to the server."),
      (err: unknown) => this.output.warn(`Sending settings: ${messageOf(err)}`),
    );
  }

  dispose(): void {
    clearTimeout(this.pushTimer);
    for (const d of this.disposables.splice(0)) {
      d.dispose();
    }
  }
}
