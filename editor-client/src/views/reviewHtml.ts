// What sits beside a review's diff (SPEC §12) as an HTML page for a webview, as the history page
// is: the task → iteration → commit table reads as a table, not as Markdown source. Pure: no
// `vscode` import; the panel passes in the nonce and the webview's CSP source. No script, nothing
// loaded from anywhere; colours come from VS Code's theme variables. Every text of the bundle
// (file paths, commit subjects, commands) comes from the repository, so each one is escaped.
import { usd } from "../money";
import type { ReviewBundle } from "../protocol";
import { escapeHtml } from "./html";

export interface ReviewPage {
  bundle: ReviewBundle;
  nonce: string;
  cspSource: string;
}

const short = (commit: string | null | undefined): string => (commit ? `<code>${escapeHtml(commit.slice(0, 12))}</code>` : "—");

function header(b: ReviewBundle): string {
  const lines = [
    `<p><code>${escapeHtml(b.branch)}</code> against <code>${escapeHtml(b.into)}</code>, from the merge-base ${short(b.base)} to the tip ${short(b.tip)}. ` +
      `Run <span class="state">${escapeHtml(b.state)}</span>${b.branchState ? `; branch ${escapeHtml(b.branchState)}` : ""}.</p>`,
  ];
  if (b.merge) {
    lines.push(`<p>Last merge into <code>${escapeHtml(b.merge.into)}</code>: ${b.merge.commit ? short(b.merge.commit) : "none"}: ${escapeHtml(b.merge.reason)}</p>`);
  }
  if (typeof b.costUsd === "number" && b.costUsd > 0) {
    lines.push(`<p class="cost">Cost: ${escapeHtml(usd(b.costUsd))}</p>`);
  }
  return lines.join("\n");
}

function iterationTable(b: ReviewBundle): string {
  const rows = b.iterations.map((it) => {
    const files = (it.filesChanged ?? []).map((f) => `<code>${escapeHtml(f)}</code>`).join(", ") || "—";
    return `<tr><td>${escapeHtml(it.n)}</td><td>${it.tasksChecked ?? "—"}</td><td>${short(it.commit)}</td><td>${files}</td></tr>`;
  });
  return `<h2>Tasks → iterations → commits</h2>
<table class="iterations"><thead><tr><th>iteration</th><th>tasks checked</th><th>commit</th><th>files</th></tr></thead>
<tbody>${rows.join("\n")}</tbody></table>`;
}

function verification(b: ReviewBundle): string {
  if (!b.verification) {
    return "<h2>Verification</h2>\n<p>The run did not verify.</p>";
  }
  if (b.verification.length === 0) {
    return "<h2>Verification</h2>\n<p>Nothing ran.</p>";
  }
  const items = b.verification.map((v) => {
    const ok = v.exitCode === 0 ? `<span class="ok">passed</span>` : `<span class="bad">failed (exit ${escapeHtml(v.exitCode ?? "—")})</span>`;
    return `<li><code>${escapeHtml(v.command)}</code>: ${ok}</li>`;
  });
  return `<h2>Verification</h2>\n<ul>${items.join("\n")}</ul>`;
}

function filesAndCommits(b: ReviewBundle): string {
  const files = b.files.map((f) => `<li>${escapeHtml(f.status)} <code>${escapeHtml(f.path)}</code></li>`);
  const out = [`<h2>${b.files.length} file(s)</h2>\n<ul>${files.join("\n")}</ul>`];
  if (b.commits.length > 0) {
    const commits = b.commits.map((c) => `<li>${short(c.commit)} ${escapeHtml(c.subject)}</li>`);
    out.push(`<h2>Commits</h2>\n<ul>${commits.join("\n")}</ul>`);
  }
  return out.join("\n");
}

/** The page: the header, the task → iteration → commit table, the verification, the files and
 * the commits since the merge-base (the same content `ralph-lsp review` prints). */
export function reviewHtml(page: ReviewPage): string {
  const { bundle: b, nonce, cspSource } = page;
  const csp = `default-src 'none'; style-src ${cspSource} 'nonce-${nonce}';`;
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Review: ${escapeHtml(b.change)}</title>
<style nonce="${nonce}">
body { color: var(--vscode-foreground); background: var(--vscode-editor-background); font-family: var(--vscode-font-family); font-size: var(--vscode-font-size); padding: 0 16px 24px; }
h1 { font-size: 1.3em; font-weight: 600; }
h2 { font-size: 1.05em; font-weight: 600; margin: 1.4em 0 0.3em; }
code { font-family: var(--vscode-editor-font-family); }
table { border-collapse: collapse; }
th, td { text-align: left; padding: 2px 12px 2px 0; border-bottom: 1px solid var(--vscode-editorWidget-border, transparent); vertical-align: top; }
th { color: var(--vscode-descriptionForeground); font-weight: normal; }
ul { padding-left: 1.2em; margin: 0.2em 0; }
.ok { color: var(--vscode-testing-iconPassed, var(--vscode-charts-green)); }
.bad { color: var(--vscode-errorForeground, var(--vscode-charts-red)); }
</style></head>
<body>
<h1>Review: ${escapeHtml(b.change)}, run ${escapeHtml(b.runId)}</h1>
${header(b)}
${iterationTable(b)}
${verification(b)}
${filesAndCommits(b)}
</body></html>`;
}
