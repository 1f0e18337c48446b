"""`openspec validate <spec>`: a main spec's rules, with the CLI's messages and levels."""

from __future__ import annotations

from pathlib import Path

from ralph_lsp.bursts import collector_paused
from ralph_lsp.openspec.regular_files import read_regular
from ralph_lsp.openspec.validation import messages as msg
from ralph_lsp.openspec.validation.blocks import extract_requirements_section
from ralph_lsp.openspec.validation.issues import Issue, Report
from ralph_lsp.openspec.validation.markdown import SpecModel, SpecShapeError, parse_spec
from ralph_lsp.openspec.validation.structure import placeholder_line, structure_issues
from ralph_lsp.openspec.validation.text import contains_shall_or_must, js_len, requirement_body

#: The largest spec-tree file read (a 10,000-requirement spec is about 1.4 MB).
MAX_SPEC_BYTES = 64 << 20


def read_text(path: Path) -> str:
    """A file as Node reads it with 'utf-8': bad bytes become U+FFFD, the BOM stays. Only a
    regular file is read: a named pipe or a device under ``openspec/`` (a stranger's
    repository) raises :class:`NotARegularFile`, an OSError, instead of hanging the reader."""
    return read_regular(path, MAX_SPEC_BYTES).decode("utf-8", errors="replace")


def spec_name(path: Path) -> str:
    parts = path.as_posix().split("/")
    for i in range(len(parts) - 1, -1, -1):
        if parts[i] in ("specs", "changes") and i < len(parts) - 1:
            return parts[i + 1]
    stem = parts[-1]
    dot = stem.rfind(".")
    return stem[:dot] if dot > 0 else stem


def validate_spec(file: Path, *, strict: bool = False, content: str | None = None) -> Report:
    """Validate one main spec; `content` stands for the file's text when given (an open editor)."""
    report = Report(strict=strict)
    try:
        text = read_text(file) if content is None else content
    except OSError as err:
        report.issues.append(
            Issue(
                "ERROR",
                "file",
                f"{err.strerror}, open '{file}'",
                "openspec.file.unreadable",
                file=file,
            )
        )
        return report
    report.issues += spec_issues(text, file)
    return report


@collector_paused  # a few objects per line and header, no reference cycle
def spec_issues(text: str, file: Path | None) -> list[Issue]:
    """The findings of one main spec's text, in the CLI's order."""
    return _spec_issues(text, file)


def _spec_issues(text: str, file: Path | None) -> list[Issue]:
    try:
        spec = parse_spec(text)
    except SpecShapeError as err:
        code = (
            "openspec.spec.no-purpose" if "Purpose" in str(err) else "openspec.spec.no-requirements"
        )
        return [
            Issue("ERROR", "file", f"{err}. {msg.GUIDE_MISSING_SPEC_SECTIONS}", code, file=file)
        ]
    issues = _schema_issues(spec, file)
    for s in structure_issues(text):
        code = f"openspec.spec.{s.kind}"
        issues.append(
            Issue("ERROR", "file", s.message, code, line=s.line, file=file, at=s.line - 1)
        )
    issues += _purpose_issues(spec, text, file)
    issues += _requirement_issues(spec, file)
    return issues + _shall_issues(text, file)


def _schema_issues(spec: SpecModel, file: Path | None) -> list[Issue]:
    """What the CLI's zod schema for a spec rejects."""
    issues: list[Issue] = []
    if not spec.requirements:
        code = "openspec.spec.no-requirements"
        issues.append(Issue("ERROR", "requirements", msg.SPEC_NO_REQUIREMENTS, code, file=file))
    for i, req in enumerate(spec.requirements):
        if not req.text:
            where, code = f"requirements.{i}.text", "openspec.requirement.empty"
            issues.append(
                Issue("ERROR", where, msg.REQUIREMENT_EMPTY, code, file=file, at=req.line)
            )
        if req.scenarios == 0:
            where, code = f"requirements.{i}.scenarios", "openspec.requirement.no-scenario"
            text = msg.REQUIREMENT_NO_SCENARIOS
            issues.append(Issue("ERROR", where, text, code, file=file, at=req.line))
    return issues


def _purpose_issues(spec: SpecModel, text: str, file: Path | None) -> list[Issue]:
    is_placeholder, line = placeholder_line(spec.overview, text)
    if is_placeholder:
        at = line - 1 if line is not None else spec.purpose_line
        code = "openspec.purpose.placeholder"
        return [
            Issue(
                "WARNING", "overview", msg.PURPOSE_IS_PLACEHOLDER, code, line=line, file=file, at=at
            )
        ]
    if js_len(spec.overview) < msg.MIN_PURPOSE_LENGTH:
        code = "openspec.purpose.too-brief"
        return [
            Issue(
                "WARNING", "overview", msg.PURPOSE_TOO_BRIEF, code, file=file, at=spec.purpose_line
            )
        ]
    return []


def _requirement_issues(spec: SpecModel, file: Path | None) -> list[Issue]:
    issues: list[Issue] = []
    for i, req in enumerate(spec.requirements):
        if js_len(req.text) > msg.MAX_REQUIREMENT_TEXT_LENGTH:
            code = "openspec.requirement.too-long"
            text = msg.REQUIREMENT_TOO_LONG
            issues.append(Issue("INFO", f"requirements[{i}]", text, code, file=file, at=req.line))
        if req.scenarios == 0:
            text = f"{msg.REQUIREMENT_NO_SCENARIOS}. {msg.GUIDE_SCENARIO_FORMAT}"
            where, code = f"requirements[{i}].scenarios", "openspec.requirement.scenario-format"
            issues.append(Issue("WARNING", where, text, code, file=file, at=req.line))
    return issues


def _shall_issues(text: str, file: Path | None) -> list[Issue]:
    """SHALL/MUST in each requirement's body (the header alone does not count)."""
    issues: list[Issue] = []
    for i, block in enumerate(extract_requirements_section(text).blocks):
        body = requirement_body(block.raw.split("\n")[1:])
        if body and contains_shall_or_must(body):
            continue  # (the usual block: no message to word)
        prefix, where, at = f'Requirement "{block.name}"', f"requirements[{i}]", block.line - 1
        if not body:
            message = msg.missing_shall(prefix, block.name, guidance=False)
            code = "openspec.requirement.no-text"
            issues.append(Issue("ERROR", where, message, code, file=file, at=at))
        elif not contains_shall_or_must(body):
            message = msg.missing_shall(prefix, block.name, guidance=True)
            code = "openspec.requirement.no-shall"
            issues.append(Issue("WARNING", where, message, code, file=file, at=at))
    return issues
