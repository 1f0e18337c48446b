// Entry point: a context owns everything; activation only wires it up.
import type * as vscode from "vscode";
import { registerCommands } from "./commands";
import { Ctx } from "./ctx";

let ctx: Ctx | undefined;

export function activate(extension: vscode.ExtensionContext): void {
  ctx = new Ctx(extension);
  extension.subscriptions.push(ctx, ...registerCommands(ctx));
  void ctx.start(); // commands wait for it; problems are reported, never thrown
}

export async function deactivate(): Promise<void> {
  await ctx?.stop();
  ctx = undefined;
}
