"""A delta spec applied to its main spec in memory, as ``openspec archive`` 1.13.2 does (SPEC §11).

The CLI's ``buildUpdatedSpec``: the pre-checks, the target's checks and RENAMED → REMOVED →
MODIFIED → ADDED on the ``## Requirements`` blocks are the one delta application of
:mod:`ralph_lsp.openspec.validation.delta_apply` (validation's dry run collects what it raises);
this module adds the new spec's skeleton and Purpose, the warnings archive prints, and the spec
put back together around its requirements section (:func:`around_requirements`) with its blank
runs collapsed outside fences. A refusal is a :class:`SpecUpdateError` carrying the CLI's message.

Pure: texts in, text out. Writing is ``archiving/``'s job.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ralph_lsp.openspec.archive_checks import main_spec_structure_issues, parse_spec_overview
from ralph_lsp.openspec.validation.blocks import (
    Block,
    DeltaPlan,
    extract_requirements_section,
    normalize_name,
    parse_delta_spec,
)
from ralph_lsp.openspec.validation.delta_apply import Counts as Counts
from ralph_lsp.openspec.validation.delta_apply import SpecUpdateError as SpecUpdateError
from ralph_lsp.openspec.validation.delta_apply import (
    apply_operations,
    check_plan,
    refuse_invalid_target,
    refuse_new_spec_edits,
)
from ralph_lsp.openspec.validation.text import S as WS
from ralph_lsp.openspec.validation.text import fence_mask as build_code_fence_mask
from ralph_lsp.openspec.validation.text import lines_and_mask, normalize_newlines
from ralph_lsp.openspec.validation.text import trim as js_trim
from ralph_lsp.openspec.validation.text import trim_end as js_trim_end

MIN_PURPOSE_LENGTH = 50
PURPOSE_PLACEHOLDER_PREFIX = "TBD - created by archiving change "
PURPOSE_PLACEHOLDER_SUFFIX = ". Update Purpose after archive."


@dataclass
class BuiltSpec:
    """A rebuilt main spec, what it took, and the warnings the CLI would print."""

    rebuilt: str
    counts: Counts
    warnings: list[str] = field(default_factory=list)
    no_requirement_blocks: bool = False


def build_updated_spec(
    spec_id: str, delta_text: str, target_text: str | None, change_name: str, target_path: str = ""
) -> BuiltSpec:
    """Apply one delta spec to its main spec (``None``: the spec does not exist yet).

    ``target_path`` is the main spec's absolute path, which one warning names.
    """
    plan = parse_delta_spec(delta_text)
    warnings: list[str] = []
    _precheck(spec_id, plan, warnings)
    target, is_new = _base_target(spec_id, plan, delta_text, target_text, change_name, warnings)
    warnings[:] = [w.replace("{TARGET}", target_path) for w in warnings]
    refuse_invalid_target(spec_id, target)
    return _apply(spec_id, plan, target, is_new, warnings)


def _precheck(spec_id: str, plan: DeltaPlan, warnings: list[str]) -> None:
    check_plan(spec_id, plan)
    for orphan in plan.orphans:
        where = (
            f'under "## {orphan.section}"' if orphan.section else 'above the first "## " section'
        )
        warnings.append(
            f'{spec_id} - requirement "{orphan.name}" (line {orphan.line}) is {where}, which is '
            "not a delta section, so it was not applied. Move it under "
            "ADDED/MODIFIED/REMOVED/RENAMED Requirements."
        )


def _base_target(
    spec_id: str,
    plan: DeltaPlan,
    delta_text: str,
    target_text: str | None,
    change_name: str,
    warnings: list[str],
) -> tuple[str, bool]:
    delta_purpose = extract_purpose_section(delta_text)
    if target_text is not None:
        if delta_purpose:
            existing = extract_purpose_section(target_text)
            if existing and existing != delta_purpose:
                warnings.append(
                    f"{spec_id} - delta Purpose ignored; {spec_id} already has one. "
                    "Edit {TARGET} directly to change it."
                )
        return target_text, False
    refuse_new_spec_edits(spec_id, plan)
    if plan.removed:
        warnings.append(
            f"{spec_id} - {len(plan.removed)} REMOVED requirement(s) ignored for new spec "
            "(nothing to remove)."
        )
    target = build_spec_skeleton(spec_id, change_name, delta_purpose)
    overview = _readable_overview(target, spec_id) if delta_purpose else None
    if delta_purpose and not overview:
        target = build_spec_skeleton(spec_id, change_name)
        warnings.append(
            f"{spec_id} - delta Purpose ignored (it would leave the new spec unreadable); wrote "
            "the placeholder Purpose instead."
        )
    elif overview and len(overview) < MIN_PURPOSE_LENGTH:
        warnings.append(
            f"{spec_id} - carried Purpose is under {MIN_PURPOSE_LENGTH} characters; "
            "openspec validate --strict reports it as too brief."
        )
    return target, True


def build_spec_skeleton(spec_id: str, change_name: str, purpose: str | None = None) -> str:
    """The text of a brand-new main spec before its ADDED requirements."""
    body = (purpose and js_trim(purpose)) or (
        f"{PURPOSE_PLACEHOLDER_PREFIX}{change_name}{PURPOSE_PLACEHOLDER_SUFFIX}"
    )
    return f"# {spec_id} Specification\n\n## Purpose\n{body}\n\n## Requirements\n"


def _readable_overview(skeleton: str, spec_id: str) -> str | None:
    if "<!--" in skeleton or main_spec_structure_issues(skeleton):
        return None
    overview = parse_spec_overview(skeleton)
    return js_trim(overview) if overview and js_trim(overview) else None


def _mask_html_comments(content: str) -> str:
    out: list[str] = []
    index = 0
    while True:
        start = content.find("<!--", index)
        if start == -1:
            out.append(content[index:])
            return "".join(out)
        out.append(content[index:start])
        ends = [e for e in (_end_at(content, start, "-->"), _end_at(content, start, "--!>")) if e]
        if not ends:
            out.append(re.sub(r"[^\n]", " ", content[start:]))
            return "".join(out)
        close = min(ends)
        out.append(re.sub(r"[^\n]", " ", content[start:close]))
        index = close


def _end_at(content: str, start: int, terminator: str) -> int | None:
    found = content.find(terminator, start + 4)
    return None if found == -1 else found + len(terminator)


_PURPOSE_TITLE = re.compile(f"^##{WS}+Purpose{WS}*$", re.IGNORECASE)
_TOP = re.compile(f"^##{WS}+")


def extract_purpose_section(content: str) -> str | None:
    """The body of ``## Purpose``, ignoring fences and HTML comments; None when absent or empty."""
    normalized = content.replace("\r\n", "\n").replace("\r", "\n")
    lines = normalized.split("\n")
    masked = _mask_html_comments(normalized).split("\n")
    fence = build_code_fence_mask(masked)
    start = next((i for i, m in enumerate(masked) if not fence[i] and _PURPOSE_TITLE.match(m)), -1)
    if start == -1:
        return None
    end = next(
        (i for i in range(start + 1, len(masked)) if not fence[i] and _TOP.match(masked[i])),
        len(masked),
    )
    prose = "\n".join(masked[i] for i in range(start + 1, end) if not fence[i])
    if not js_trim(prose):
        return None
    return js_trim("\n".join(lines[start + 1 : end])) or None


# --- applying the operations ----------------------------------------------------------------


def _normalize_raw(raw: str) -> str:
    return js_trim(normalize_newlines(raw))


def _apply(
    spec_id: str, plan: DeltaPlan, target: str, is_new: bool, warnings: list[str]
) -> BuiltSpec:
    section = extract_requirements_section(target)
    blocks = {normalize_name(block.name): block for block in section.blocks}
    order = [normalize_name(b.name) for b in section.blocks]
    counts = apply_operations(spec_id, plan, blocks, order, is_new=is_new, warnings=warnings)
    kept: list[Block] = []
    seen: set[str] = set()
    for index, block in enumerate(section.blocks):
        key = order[index]
        replacement = blocks.get(key)
        if replacement is not None:
            kept.append(replacement)
            seen.add(key)
        if replacement is not block:
            _warn_foreign_tail(spec_id, block, replacement, warnings)
    kept += [b for k, b in blocks.items() if k not in seen]
    before, header_line, preamble, after = around_requirements(target)
    preamble_part = [js_trim_end(preamble)] if js_trim(preamble) else []
    body = js_trim_end("\n\n".join(preamble_part + [b.raw for b in kept]))
    pieces = [js_trim_end(before), header_line, body, js_trim(after)]
    rebuilt = js_trim_end(_collapse_blank_runs("\n\n".join(p for p in pieces if p != ""))) + "\n"
    return BuiltSpec(rebuilt, counts, warnings, no_requirement_blocks=not kept)


def around_requirements(content: str) -> tuple[str, str, str, str]:
    """The text of a main spec before its ``## Requirements`` section, the header line, the
    preamble above the first block and the text after the section (the CLI's
    ``RequirementsSectionParts`` but the blocks; an empty section at the end when it has none)."""
    section = extract_requirements_section(content)
    if not section.found:
        before = js_trim_end(content)
        return (before + "\n\n" if before else ""), "## Requirements", "", "\n"
    lines, _mask = lines_and_mask(content)
    header, end = section.header, section.end
    first_block = section.blocks[0].line - 1 if section.blocks else end
    before = "\n".join(lines[:header])
    after = "\n".join(lines[end:])
    return (
        before + "\n" if js_trim_end(before) else before,
        lines[header],
        js_trim_end("\n".join(lines[header + 1 : first_block])),
        after if after.startswith("\n") else "\n" + after,
    )


_FOREIGN_HEADING = re.compile(r"^ {0,3}#{1,3}(?:[ \t]|$)")


def _foreign_tail(raw: str) -> tuple[str, str] | None:
    lines = raw.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    mask = build_code_fence_mask(lines)
    for index in range(1, len(lines)):
        if not mask[index] and _FOREIGN_HEADING.match(lines[index]):
            return js_trim(lines[index]), js_trim_end("\n".join(lines[index:]))
    return None


def _count(haystack: str, needle: str) -> int:
    if not needle:
        return 0
    count = start = 0
    while (start := haystack.find(needle, start)) != -1:
        count += 1
        start += len(needle)
    return count


def _warn_foreign_tail(
    spec_id: str,
    block: Block,
    replacement: Block | None,
    warnings: list[str],
) -> None:
    foreign = _foreign_tail(block.raw)
    if foreign is None:
        return
    tail = _normalize_raw(foreign[1])
    keeps = replacement is not None and _count(_normalize_raw(replacement.raw), tail) >= _count(
        _normalize_raw(block.raw), tail
    )
    if not keeps:
        warnings.append(
            f'{spec_id} - "{foreign[0]}" sits inside requirement "{block.name}" and goes with it. '
            "Move it under its own requirement, or above `## Requirements`, to keep it."
        )


def _collapse_blank_runs(content: str) -> str:
    lines = content.split("\n")
    mask = build_code_fence_mask(lines)
    kept: list[str] = []
    blank_run = 0
    for index, line in enumerate(lines):
        if mask[index] or line != "":
            blank_run = 0
            kept.append(line)
            continue
        blank_run += 1
        if blank_run == 1:
            kept.append(line)
    return "\n".join(kept)
