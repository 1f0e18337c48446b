// How a failure reaches the user: the error type whose message is shown as it is, the text of
// any thrown value, and the error pop-up of a command (with trust offered when that is the cause).
import * as vscode from "vscode";

/** An error whose message is meant for the user as it is (the server's text, or ours). */
export class UserFacingError extends Error {}

export function messageOf(err: unknown): string {
  if (err instanceof Error) {
    return err.message;
  }
  return typeof err === "string" ? err : JSON.stringify(err);
}

/** Shows an error from a command, with the server's text; offers trust when that is the cause. */
export async function showError(output: vscode.LogOutputChannel, err: unknown, command?: string): Promise<void> {
  const text = messageOf(err);
  output.error(command ? `${command}: ${text}` : text);
  const needsTrust = !vscode.workspace.isTrusted && (command === "ralph.run" || command === "ralph.runChange");
  const actions = needsTrust ? ["Manage Workspace Trust", "Show Output"] : ["Show Output"];
  const choice = await vscode.window.showErrorMessage(`Ralph: ${text}`, ...actions);
  if (choice === "Manage Workspace Trust") {
    await vscode.commands.executeCommand("workbench.trust.manage");
  } else if (choice === "Show Output") {
    output.show(true);
  }
}
