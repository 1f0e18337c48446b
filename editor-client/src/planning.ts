// Planning in the editor (SPEC §14): "Ralph: New change…" asks a name and a description and
// starts a planning run (ralph.planChange); the lenses of a planned change's proposal.md call
// "ralph.revise" (a comment, offered the open questions, becomes the guidance of another
// planning run: ralph.revisePlan) and "ralph.discard" (a modal confirmation, then
// ralph.discardChange moves the folder to the trash). "Approve and run" is ralph.run itself.
import * as vscode from "vscode";
import type { Ctx } from "./ctx";
import type { ChangeRef } from "./protocol";

type Handler = (...args: unknown[]) => Promise<void> | void;

/** What the planning commands need of the palette's helpers (commands.ts). */
export interface PlanningHelpers {
  changeTarget(ctx: Ctx, arg: unknown, title: string): Promise<ChangeRef | undefined>;
  needTrust(ctx: Ctx): Promise<boolean>;
}

/** The CLI's change-name rule (kebab-case), checked while the name is typed. */
export function changeNameProblem(name: string): string | undefined {
  if (name === "") {
    return "A change name is needed, e.g. add-dark-mode";
  }
  return /^[a-z0-9]+(?:-[a-z0-9]+)*$/.test(name) ? undefined : "Lowercase letters, digits and single hyphens only (kebab-case)";
}

/** The open questions a Revise… lens passes, as the comment box's starting text. */
export function revisePrompt(arg: unknown): string {
  const questions = (arg as { questions?: unknown } | undefined)?.questions;
  const list = Array.isArray(questions) ? questions.filter((q): q is string => typeof q === "string") : [];
  return list.map((q) => `${q} → `).join(" ");
}

function newChange(ctx: Ctx, helpers: PlanningHelpers): Handler {
  return async () => {
    if (!(await helpers.needTrust(ctx))) {
      return;
    }
    const name = await vscode.window.showInputBox({
      title: "Ralph: New change (1/2)",
      prompt: "The change's name (its folder under openspec/changes/)",
      placeHolder: "add-dark-mode",
      validateInput: (v) => changeNameProblem(v.trim()),
    });
    if (!name) {
      return;
    }
    const description = await vscode.window.showInputBox({
      title: "Ralph: New change (2/2)",
      prompt: "What should the change do? An agent drafts its proposal, specs, design and tasks from this.",
      validateInput: (v) => (v.trim() ? undefined : "Describe the change"),
    });
    if (!description) {
      return;
    }
    const started = await ctx.execute("ralph.planChange", { change: name.trim(), description });
    ctx.output.info(`Planning ${started.change} (run ${started.runId}): approve it in its proposal.md once it is planned.`);
  };
}

function revise(ctx: Ctx, helpers: PlanningHelpers): Handler {
  return async (arg) => {
    const target = await helpers.changeTarget(ctx, arg, "Ralph: Revise plan");
    if (!target || !(await helpers.needTrust(ctx))) {
      return;
    }
    const text = await vscode.window.showInputBox({
      title: `Ralph: Revise ${target.change}`,
      prompt: "A comment for the next planning round (answers to the open questions, what to change)",
      value: revisePrompt(arg),
      validateInput: (v) => (v.trim() ? undefined : "Say what to change"),
    });
    if (!text) {
      return;
    }
    await ctx.execute("ralph.revisePlan", { ...target, text });
  };
}

function discard(ctx: Ctx, helpers: PlanningHelpers): Handler {
  return async (arg) => {
    const target = await helpers.changeTarget(ctx, arg, "Ralph: Discard change");
    if (!target) {
      return;
    }
    const detail = "Its folder (proposal, specs, design, tasks) is moved to the trash.";
    const choice = await vscode.window.showWarningMessage(`Discard ${target.change}?`, { modal: true, detail }, "Discard");
    if (choice !== "Discard") {
      return;
    }
    await ctx.execute("ralph.discardChange", { ...target, yes: true });
    void vscode.window.showInformationMessage(`Ralph: ${target.change} was moved to the trash.`);
  };
}

export function planningCommands(ctx: Ctx, helpers: PlanningHelpers): Record<string, Handler> {
  return {
    "ralph.newChange": newChange(ctx, helpers),
    "ralph.revise": revise(ctx, helpers),
    "ralph.discard": discard(ctx, helpers),
  };
}
