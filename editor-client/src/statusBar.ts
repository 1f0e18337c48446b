// The status bar item: what the run board shows (status.ts decides the text, tooltip and tone),
// or why the server is down, or that it is starting. It only draws; ctx.ts says when.
import * as vscode from "vscode";
import type { StatusView } from "./status";

export class StatusBar implements vscode.Disposable {
  private readonly item: vscode.StatusBarItem;

  constructor() {
    this.item = vscode.window.createStatusBarItem("ralph.status", vscode.StatusBarAlignment.Left, 10);
    this.item.name = "Ralph";
    this.item.command = "ralph.showOutput";
  }

  show(): void {
    this.item.show();
  }

  /** The board's view, unless the server could not start (`problem`) or is starting. */
  render(board: StatusView, problem: string | undefined, starting: boolean): void {
    let view = board;
    if (problem) {
      view = { text: "$(error) Ralph", tooltip: `Ralph: ${problem}\n\nClick to show the output.`, tone: "error" };
    } else if (starting) {
      view = { ...view, tooltip: `Starting the Ralph server…\n\n${view.tooltip}` };
    }
    this.item.text = view.text;
    this.item.tooltip = view.tooltip;
    this.item.backgroundColor =
      view.tone === "error"
        ? new vscode.ThemeColor("statusBarItem.errorBackground")
        : view.tone === "warning"
          ? new vscode.ThemeColor("statusBarItem.warningBackground")
          : undefined;
  }

  dispose(): void {
    this.item.dispose();
  }
}
