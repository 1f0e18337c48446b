"""A delta spec applied to its main spec in memory, as ``openspec archive`` 1.13.2 does (SPEC §11).

The port of the CLI's ``buildUpdatedSpec``: the pre-checks (unpaired renames, duplicates,
cross-section conflicts, no operations), the target's structure check, then RENAMED → REMOVED →
MODIFIED → ADDED on the ``## Requirements`` blocks, and the spec put back together with its blank
runs collapsed outside fences. A refusal is a :class:`SpecUpdateError` carrying the CLI's message.

Pure: texts in, text out. Writing is ``archiving/``'s job.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ralph_lsp.openspec.archive_checks import main_spec_structure_issues, parse_spec_overview
from ralph_lsp.openspec.requirement_blocks import (
    REQUIREMENT_HEADER,
    WS,
    DeltaPlan,
    RequirementBlock,
    build_code_fence_mask,
    describe_scenario_balance,
    diff_scenario_names,
    extract_requirements_section,
    fold_requirement_name,
    js_trim,
    js_trim_end,
    normalize_requirement_name,
    parse_delta_spec,
)

MIN_PURPOSE_LENGTH = 50
PURPOSE_PLACEHOLDER_PREFIX = "TBD - created by archiving change "
PURPOSE_PLACEHOLDER_SUFFIX = ". Update Purpose after archive."


class SpecUpdateError(Exception):
    """The CLI's refusal to apply one delta spec (its message is the CLI's)."""


@dataclass
class Counts:
    """Operations that changed the spec."""

    added: int = 0
    modified: int = 0
    removed: int = 0
    renamed: int = 0

    def total(self) -> int:
        return self.added + self.modified + self.removed + self.renamed


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
    issues = main_spec_structure_issues(target)
    if issues:
        details = "\n".join(f"line {line}: {message}" for line, message in issues)
        raise SpecUpdateError(
            f"{spec_id}: target spec is structurally invalid and cannot be updated until fixed:\n"
            f"{details}"
        )
    return _apply(spec_id, plan, target, is_new, warnings)


def _fail(spec_id: str, what: str) -> SpecUpdateError:
    return SpecUpdateError(f"{spec_id} validation failed - {what}")


def _header(name: str) -> str:
    return f'"### Requirement: {name}"'


def _precheck(spec_id: str, plan: DeltaPlan, warnings: list[str]) -> None:
    if plan.unpaired_renames:
        first = plan.unpaired_renames[0]
        missing = "TO" if first.side == "FROM" else "FROM"
        raise _fail(
            spec_id,
            f"RENAMED entry on line {first.line} has no matching {missing}: for header "
            f"{_header(first.name)}. Write each rename as a FROM: line followed immediately by "
            "its TO: line.",
        )
    for orphan in plan.orphaned_requirements:
        where = (
            f'under "## {orphan.section}"' if orphan.section else 'above the first "## " section'
        )
        warnings.append(
            f'{spec_id} - requirement "{orphan.name}" (line {orphan.line}) is {where}, which is '
            "not a delta section, so it was not applied. Move it under "
            "ADDED/MODIFIED/REMOVED/RENAMED Requirements."
        )
    added = _unique(spec_id, "ADDED", [b.name for b in plan.added])
    modified = _unique(spec_id, "MODIFIED", [b.name for b in plan.modified])
    removed = _unique(spec_id, "REMOVED", plan.removed)
    _check_renames(spec_id, plan, added, modified, removed)
    if not (plan.added or plan.modified or plan.removed or plan.renamed):
        raise SpecUpdateError(
            f"Delta parsing found no operations for {spec_id}. "
            "Provide ADDED/MODIFIED/REMOVED/RENAMED sections in change spec."
        )


def _unique(spec_id: str, section: str, names: list[str]) -> list[str]:
    seen: list[str] = []
    for name in names:
        key = normalize_requirement_name(name)
        if key in seen:
            raise _fail(spec_id, f"duplicate requirement in {section} for header {_header(name)}")
        seen.append(key)
    return seen


def _check_renames(
    spec_id: str, plan: DeltaPlan, added: list[str], modified: list[str], removed: list[str]
) -> None:
    froms: set[str] = set()
    tos: set[str] = set()
    for pair in plan.renamed:
        from_key = normalize_requirement_name(pair.from_name)
        to_key = normalize_requirement_name(pair.to_name)
        if from_key in froms:
            raise _fail(spec_id, f"duplicate FROM in RENAMED for header {_header(pair.from_name)}")
        if to_key in tos:
            raise _fail(spec_id, f"duplicate TO in RENAMED for header {_header(pair.to_name)}")
        froms.add(from_key)
        tos.add(to_key)
    conflicts = [
        c
        for n in modified
        for c in ([(n, "MODIFIED", "REMOVED")] if n in removed else [])
        + ([(n, "MODIFIED", "ADDED")] if n in added else [])
    ]
    conflicts += [(n, "ADDED", "REMOVED") for n in added if n in removed]
    for pair in plan.renamed:
        from_key = normalize_requirement_name(pair.from_name)
        folded = fold_requirement_name(from_key)
        match = next((r for r in removed if fold_requirement_name(r) == folded), None)
        if match is not None:
            spelled = "" if match == from_key else f' (REMOVED spells it "{match}")'
            raise _fail(
                spec_id,
                "requirement present in multiple sections (RENAMED and REMOVED) for header "
                f"{_header(pair.from_name)}{spelled}",
            )
        if from_key in modified:
            raise _fail(
                spec_id,
                "when a rename exists, MODIFIED must reference the NEW header "
                f"{_header(pair.to_name)}",
            )
        if normalize_requirement_name(pair.to_name) in added:
            raise _fail(
                spec_id, f"RENAMED TO header collides with ADDED for {_header(pair.to_name)}"
            )
    if conflicts:
        name, a, b = conflicts[0]
        raise _fail(
            spec_id,
            f"requirement present in multiple sections ({a} and {b}) for header {_header(name)}",
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
    if plan.modified or plan.renamed:
        raise SpecUpdateError(
            f"{spec_id}: target spec does not exist; only ADDED requirements are allowed for new "
            "specs. MODIFIED and RENAMED operations require an existing spec."
        )
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
    return js_trim(raw.replace("\r\n", "\n").replace("\r", "\n"))


def _near(blocks: dict[str, RequirementBlock], name: str, skip: str | None = None) -> str | None:
    folded = fold_requirement_name(name)
    return next((k for k in blocks if k != skip and fold_requirement_name(k) == folded), None)


# Long: the four operations in the CLI's order, each with its own refusals, then the rebuild.
def _apply(
    spec_id: str, plan: DeltaPlan, target: str, is_new: bool, warnings: list[str]
) -> BuiltSpec:
    parts = extract_requirements_section(target)
    blocks: dict[str, RequirementBlock] = {}
    for block in parts.body_blocks:
        blocks[normalize_requirement_name(block.name)] = block
    order = [normalize_requirement_name(b.name) for b in parts.body_blocks]
    counts = Counts()
    counts.renamed = _apply_renames(spec_id, plan, blocks, order)
    for name in plan.removed:
        key = normalize_requirement_name(name)
        if key not in blocks:
            if not is_new:
                near = _near(blocks, key)
                if near is not None:
                    raise SpecUpdateError(
                        f"{spec_id} REMOVED failed for header {_header(name)} - not found, but "
                        f"{_header(blocks[near].name)} exists; fix the header to match it exactly"
                    )
                warnings.append(
                    f'{spec_id} - REMOVED requirement "{name}" is not in the current spec; '
                    "treating it as already removed."
                )
            continue
        del blocks[key]
        counts.removed += 1
    counts.modified = _apply_modified(spec_id, plan, blocks)
    for add in plan.added:
        key = normalize_requirement_name(add.name)
        existing = blocks.get(key)
        if existing is not None:
            if _normalize_raw(existing.raw) == _normalize_raw(add.raw):
                continue
            raise SpecUpdateError(
                f"{spec_id} ADDED failed for header {_header(add.name)} - already exists"
            )
        near = _near(blocks, key)
        if near is not None:
            raise SpecUpdateError(
                f"{spec_id} ADDED failed for header {_header(add.name)} - "
                f"{_header(blocks[near].name)} already exists and differs only in case or "
                "spacing; use MODIFIED with that exact header to change it, or choose a distinct "
                "name"
            )
        blocks[key] = add
        counts.added += 1
    kept: list[RequirementBlock] = []
    seen: set[str] = set()
    for index, block in enumerate(parts.body_blocks):
        key = order[index]
        replacement = blocks.get(key)
        if replacement is not None:
            kept.append(replacement)
            seen.add(key)
        if replacement is not block:
            _warn_foreign_tail(spec_id, block, replacement, warnings)
    kept += [b for k, b in blocks.items() if k not in seen]
    preamble = [js_trim_end(parts.preamble)] if js_trim(parts.preamble) else []
    body = js_trim_end("\n\n".join(preamble + [b.raw for b in kept]))
    pieces = [js_trim_end(parts.before), parts.header_line, body, js_trim(parts.after)]
    rebuilt = js_trim_end(_collapse_blank_runs("\n\n".join(p for p in pieces if p != ""))) + "\n"
    return BuiltSpec(rebuilt, counts, warnings, no_requirement_blocks=not kept)


def _apply_renames(
    spec_id: str, plan: DeltaPlan, blocks: dict[str, RequirementBlock], order: list[str]
) -> int:
    applied = 0
    for pair in plan.renamed:
        old, new = (
            normalize_requirement_name(pair.from_name),
            normalize_requirement_name(pair.to_name),
        )
        failed = f"{spec_id} RENAMED failed for header"
        if old not in blocks:
            if new in blocks:
                near = _near(blocks, old, skip=new)
                if near is not None:
                    raise SpecUpdateError(
                        f"{failed} {_header(pair.from_name)} - source not found, but "
                        f"{_header(blocks[near].name)} exists; fix the header to match it exactly"
                    )
                continue
            raise SpecUpdateError(f"{failed} {_header(pair.from_name)} - source not found")
        if new in blocks:
            raise SpecUpdateError(f"{failed} {_header(pair.to_name)} - target already exists")
        near = _near(blocks, new, skip=old)
        if near is not None:
            raise SpecUpdateError(
                f"{failed} {_header(pair.to_name)} - {_header(blocks[near].name)} already exists "
                "and differs only in case or spacing; choose a distinct name"
            )
        header = f"### Requirement: {new}"
        raw_lines = blocks[old].raw.split("\n")
        raw_lines[0] = header
        del blocks[old]
        blocks[new] = RequirementBlock(header, new, "\n".join(raw_lines))
        if old in order:
            order[order.index(old)] = new
        applied += 1
    return applied


def _apply_modified(spec_id: str, plan: DeltaPlan, blocks: dict[str, RequirementBlock]) -> int:
    applied = 0
    for mod in plan.modified:
        key = normalize_requirement_name(mod.name)
        failed = f"{spec_id} MODIFIED failed for header {_header(mod.name)}"
        current = blocks.get(key)
        if current is None:
            raise SpecUpdateError(f"{failed} - not found")
        header = REQUIREMENT_HEADER.match(mod.raw.split("\n")[0])
        if not header or normalize_requirement_name(header.group(1)) != key:
            raise SpecUpdateError(f"{failed} - header mismatch in content")
        diff = diff_scenario_names(current, mod)
        if diff.missing:
            names = ", ".join(f'"{n}"' for n in diff.missing)
            raise SpecUpdateError(
                f"{failed} - current spec contains scenario(s) not present in the modified block: "
                f"{names}. {describe_scenario_balance(diff)} Refresh the change spec before "
                "archiving to avoid dropping scenarios."
            )
        if _normalize_raw(current.raw) != _normalize_raw(mod.raw):
            applied += 1
        blocks[key] = mod
    return applied


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
    block: RequirementBlock,
    replacement: RequirementBlock | None,
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
