"""The checks ``openspec archive`` 1.13.2 runs before it writes (SPEC §11), read-only.

- :func:`main_spec_structure_issues`: the CLI's ``findMainSpecStructureIssues`` (delta headers in
  a main spec, requirements outside ``## Requirements``, duplicate requirement names);
- :func:`spec_content_errors`: the errors of ``validateSpecContent`` (non-strict), which archive
  puts every rebuilt spec through;
- :func:`delta_spec_errors`: the errors of ``validateChangeDeltaSpecs`` as archive calls it
  (without the main specs), which decide ``archive_validation_failed``;
- :func:`find_unread_delta_files`: the CLI's walk of ``specs/`` for delta files it never merges
  (the walk for ``spec.md`` files, ``discover_spec_files``, is validation's, re-exported here).

Only what decides archive's verdict is here: messages of the full ``validate`` command are the
validate port's.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from ralph_lsp.openspec.tasks import read_regular
from ralph_lsp.openspec.validation.blocks import extract_requirements_section, parse_delta_spec
from ralph_lsp.openspec.validation.blocks import fold_name as fold_requirement_name
from ralph_lsp.openspec.validation.blocks import normalize_name as normalize_requirement_name
from ralph_lsp.openspec.validation.discovery import discover_spec_files as discover_spec_files
from ralph_lsp.openspec.validation.markdown import (
    Section,
    SpecShapeError,
    find_section,
    parse_sections,
    parse_spec,
)
from ralph_lsp.openspec.validation.structure import structure_issues
from ralph_lsp.openspec.validation.text import count_scenarios, lines_and_mask
from ralph_lsp.openspec.validation.text import requirement_body as extract_requirement_body
from ralph_lsp.openspec.validation.text import requirement_text as extract_requirement_text
from ralph_lsp.openspec.validation.text import trim as js_trim

#: The largest delta or main spec archive reads.
MAX_SPEC_BYTES = 64 << 20


def read_spec_text(path: Path) -> str:
    """A spec as ``Path.read_text`` reads it (UTF-8, bad bytes replaced, universal newlines),
    only when it is a regular file: a named pipe never hangs archive or its preview."""
    text = read_regular(path, MAX_SPEC_BYTES).decode("utf-8", errors="replace")
    return text.replace("\r\n", "\n").replace("\r", "\n")


def main_spec_structure_issues(content: str) -> list[tuple[int, str]]:
    """``(line, message)`` for each structural problem of a main spec, fenced lines ignored
    (validation's reading: one port of the CLI's check serves both)."""
    return [(issue.line, issue.message) for issue in structure_issues(content)]


# --- the CLI's MarkdownParser, as far as a spec's verdict needs it ---------------------------


def _sections(content: str) -> list[Section]:
    return parse_sections(*lines_and_mask(content))


def parse_spec_overview(content: str) -> str | None:
    """The spec's Purpose as the CLI's parser reads it (None when it would refuse the spec)."""
    try:
        return parse_spec(content).overview
    except SpecShapeError:
        return None


def spec_content_errors(content: str) -> int:
    """How many errors ``validateSpecContent`` (non-strict) finds; 0 means archive may write it."""
    sections = _sections(content)
    purpose = find_section(sections, "Purpose")
    requirements = find_section(sections, "Requirements")
    if not purpose or not purpose.content or requirements is None:
        return 1
    errors = 0 if requirements.children else 1
    for child in requirements.children:
        text = extract_requirement_text(child.title, child.content.split("\n"))
        if not text:
            errors += 1
        if not any(js_trim(s.content) for s in child.children):
            errors += 1
    errors += len(main_spec_structure_issues(content))
    for block in extract_requirements_section(content).blocks:
        if not extract_requirement_body(block.raw.split("\n")[1:]):
            errors += 1
    return errors


# --- the change's delta specs ----------------------------------------------------------------


def _walk_files(root: Path) -> Iterator[tuple[list[str], Path]]:
    """``(folders, entry)`` for every entry under ``root`` that is no folder to walk into, as the
    CLI's walks of ``specs/`` go: dot entries skipped, linked folders not followed."""
    try:
        entries = list(root.iterdir())
    except (FileNotFoundError, NotADirectoryError):
        return
    for entry in entries:
        if entry.name.startswith("."):
            continue
        if entry.is_dir() and not entry.is_symlink():
            for segments, found in _walk_files(entry):
                yield [entry.name, *segments], found
        else:
            yield [], entry


def find_unread_delta_files(specs_root: Path) -> list[str]:
    """Files under ``specs/`` other than ``spec.md`` that carry delta sections (never merged)."""
    found: list[str] = []
    for segments, entry in _walk_files(specs_root):
        if entry.name == "spec.md" or not entry.name.lower().endswith(".md"):
            continue
        if not entry.is_file():
            continue
        if any(parse_delta_spec(read_spec_text(entry)).presence.values()):
            found.append("/".join([*segments, entry.name]))
    return sorted(found)


def _block_errors(raw: str) -> int:
    body = raw.split("\n")[1:]
    return (0 if extract_requirement_body(body) else 1) + (0 if count_scenarios(body) else 1)


def _name_errors(keys: list[str]) -> tuple[set[str], int]:
    seen: set[str] = set()
    errors = 0
    for key in keys:
        errors += key in seen
        seen.add(key)
    return seen, errors


def delta_spec_errors(change_dir: Path) -> int:
    """How many errors archive's delta-spec validation finds in a change (0: it may go on)."""
    specs = change_dir / "specs"
    errors = 1 if (specs / "spec.md").is_file() else 0
    total = 0
    for _spec_id, path in discover_spec_files(specs):
        plan = parse_delta_spec(read_spec_text(path))
        errors += len(plan.unpaired_renames)
        counted = len(plan.added) + len(plan.modified) + len(plan.removed) + len(plan.renamed)
        total += counted
        errors += 1 if counted == 0 else 0  # no sections, or sections with no entries
        added, dup_a = _name_errors([normalize_requirement_name(b.name) for b in plan.added])
        modified, dup_m = _name_errors([normalize_requirement_name(b.name) for b in plan.modified])
        removed, dup_r = _name_errors([normalize_requirement_name(r.name) for r in plan.removed])
        froms, dup_f = _name_errors([normalize_requirement_name(f.name) for f, _ in plan.renamed])
        _tos, dup_t = _name_errors([normalize_requirement_name(t.name) for _, t in plan.renamed])
        errors += dup_a + dup_m + dup_r + dup_f + dup_t
        errors += sum(_block_errors(b.raw) for b in [*plan.added, *plan.modified])
        errors += len(modified & removed) + len(modified & added) + len(added & removed)
        for old, new in plan.renamed:
            from_key = normalize_requirement_name(old.name)
            errors += from_key in modified
            errors += normalize_requirement_name(new.name) in added
            folded = fold_requirement_name(from_key)
            errors += any(fold_requirement_name(r) == folded for r in removed)
        del froms
    unread = find_unread_delta_files(specs)
    errors += len(unread)
    if total == 0 and not (specs / "spec.md").is_file() and not unread:
        errors += 1  # a change must have at least one delta
    return errors
