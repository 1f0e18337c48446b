"""One delta spec's operations on a main spec's blocks, as ``openspec archive`` 1.13.2 applies
them (the CLI's ``buildUpdatedSpec``, SPEC §11): the one port of them.

- :func:`check_plan`: the pre-checks of a delta on its own (unpaired renames, duplicates,
  cross-section conflicts, no operations);
- :func:`refuse_new_spec_edits`, :func:`refuse_invalid_target`: the checks of the target;
- :func:`apply_operations`: RENAMED → REMOVED → MODIFIED → ADDED on a main spec's blocks by
  normalised name, each with its refusals, counting what changed.

A refusal is a :class:`SpecUpdateError` carrying the CLI's message. Archive lets it propagate
(``openspec/spec_apply.py`` rebuilds the spec from the blocks); validation's dry run
(``validation/archive_check.py``) collects it, one INFO per delta spec. Both read the delta with
:func:`~ralph_lsp.openspec.validation.blocks.parse_delta_spec`, so they refuse alike.

Pure: values in, values out.
"""

from __future__ import annotations

from ralph_lsp.openspec.validation.blocks import (
    REQUIREMENT_HEADER,
    Block,
    DeltaPlan,
    fold_name,
    normalize_name,
)
from ralph_lsp.openspec.validation.scenario_diff import describe_balance, diff_scenarios
from ralph_lsp.openspec.validation.structure import structure_issues
from ralph_lsp.openspec.validation.text import normalize_newlines, trim

H = "### Requirement: "


class SpecUpdateError(Exception):
    """The CLI's refusal to apply one delta spec (its message is the CLI's)."""


class Counts:
    """Operations that changed the spec."""

    __slots__ = ("added", "modified", "removed", "renamed")

    def __init__(self, added: int = 0, modified: int = 0, removed: int = 0, renamed: int = 0):
        self.added, self.modified, self.removed, self.renamed = added, modified, removed, renamed

    def total(self) -> int:
        return self.added + self.modified + self.removed + self.renamed

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Counts) and self._values() == other._values()

    def __repr__(self) -> str:
        added, modified, removed, renamed = self._values()
        return f"Counts({added=}, {modified=}, {removed=}, {renamed=})"

    def _values(self) -> tuple[int, int, int, int]:
        return self.added, self.modified, self.removed, self.renamed


def _header(name: str) -> str:
    return f'"{H}{name}"'


def _fail(spec_id: str, what: str) -> SpecUpdateError:
    return SpecUpdateError(f"{spec_id} validation failed - {what}")


def same_text(a: str, b: str) -> bool:
    """Two blocks' texts are the same once their newlines are normalised and they are trimmed."""
    return trim(normalize_newlines(a)) == trim(normalize_newlines(b))


# --- the pre-checks ----------------------------------------------------------------------------


def check_plan(spec_id: str, plan: DeltaPlan) -> None:
    """Raise :class:`SpecUpdateError` where the CLI refuses the delta before it reads the spec."""
    if plan.unpaired_renames:
        first = plan.unpaired_renames[0]
        missing = "TO" if first.side == "FROM" else "FROM"
        raise _fail(
            spec_id,
            f"RENAMED entry on line {first.line} has no matching {missing}: for header "
            f"{_header(first.name)}. Write each rename as a FROM: line followed immediately by "
            "its TO: line.",
        )
    added = _unique(spec_id, "ADDED", [b.name for b in plan.added])
    modified = _unique(spec_id, "MODIFIED", [b.name for b in plan.modified])
    removed = _unique(spec_id, "REMOVED", [r.name for r in plan.removed])
    _check_renames(spec_id, plan, added, modified, removed)
    if not plan.entries:
        raise SpecUpdateError(
            f"Delta parsing found no operations for {spec_id}. "
            "Provide ADDED/MODIFIED/REMOVED/RENAMED sections in change spec."
        )


def _unique(spec_id: str, section: str, names: list[str]) -> list[str]:
    seen: list[str] = []
    for name in names:
        key = normalize_name(name)
        if key in seen:
            raise _fail(spec_id, f"duplicate requirement in {section} for header {_header(name)}")
        seen.append(key)
    return seen


def _unique_renames(spec_id: str, plan: DeltaPlan) -> None:
    froms: set[str] = set()
    tos: set[str] = set()
    for old, new in plan.renamed:
        from_key, to_key = normalize_name(old.name), normalize_name(new.name)
        if from_key in froms:
            raise _fail(spec_id, f"duplicate FROM in RENAMED for header {_header(old.name)}")
        if to_key in tos:
            raise _fail(spec_id, f"duplicate TO in RENAMED for header {_header(new.name)}")
        froms.add(from_key)
        tos.add(to_key)


def _check_renames(
    spec_id: str, plan: DeltaPlan, added: list[str], modified: list[str], removed: list[str]
) -> None:
    _unique_renames(spec_id, plan)
    conflicts = [
        (n, a, b)
        for n in modified
        for a, b, names in (("MODIFIED", "REMOVED", removed), ("MODIFIED", "ADDED", added))
        if n in names
    ]
    conflicts += [(n, "ADDED", "REMOVED") for n in added if n in removed]
    for old, new in plan.renamed:
        from_key = normalize_name(old.name)
        folded = fold_name(from_key)
        match = next((r for r in removed if fold_name(r) == folded), None)
        if match is not None:
            spelled = "" if match == from_key else f' (REMOVED spells it "{match}")'
            raise _fail(
                spec_id,
                "requirement present in multiple sections (RENAMED and REMOVED) for header "
                f"{_header(old.name)}{spelled}",
            )
        if from_key in modified:
            raise _fail(
                spec_id,
                f"when a rename exists, MODIFIED must reference the NEW header {_header(new.name)}",
            )
        if normalize_name(new.name) in added:
            raise _fail(spec_id, f"RENAMED TO header collides with ADDED for {_header(new.name)}")
    if conflicts:
        name, a, b = conflicts[0]
        raise _fail(
            spec_id,
            f"requirement present in multiple sections ({a} and {b}) for header {_header(name)}",
        )


def refuse_new_spec_edits(spec_id: str, plan: DeltaPlan) -> None:
    """Raise where the delta would change a main spec that does not exist yet."""
    if plan.modified or plan.renamed:
        raise SpecUpdateError(
            f"{spec_id}: target spec does not exist; only ADDED requirements are allowed for new "
            "specs. MODIFIED and RENAMED operations require an existing spec."
        )


def refuse_invalid_target(spec_id: str, target: str) -> None:
    """Raise where the main spec is structurally invalid (the CLI's
    ``findMainSpecStructureIssues``, fenced lines ignored)."""
    issues = structure_issues(target)
    if issues:
        details = "\n".join(f"line {issue.line}: {issue.message}" for issue in issues)
        raise SpecUpdateError(
            f"{spec_id}: target spec is structurally invalid and cannot be updated until fixed:\n"
            f"{details}"
        )


# --- the operations ----------------------------------------------------------------------------


def apply_operations(
    spec_id: str,
    plan: DeltaPlan,
    blocks: dict[str, Block],
    order: list[str],
    *,
    is_new: bool = False,
    warnings: list[str] | None = None,
) -> Counts:
    """Apply RENAMED, REMOVED, MODIFIED and ADDED to ``blocks`` (by normalised name; ``order``,
    the main spec's names in file order, follows the renames), or raise :class:`SpecUpdateError`.
    ``is_new``: the spec is being created (a REMOVED entry is ignored); ``warnings`` takes what
    the CLI would print."""
    counts = Counts()
    counts.renamed = _apply_renames(spec_id, plan, blocks, order)
    counts.removed = _apply_removals(spec_id, plan, blocks, is_new, warnings)
    counts.modified = _apply_modified(spec_id, plan, blocks)
    counts.added = _apply_additions(spec_id, plan, blocks)
    return counts


def _near(blocks: dict[str, Block], name: str, skip: str | None = None) -> str | None:
    folded = fold_name(name)
    return next((k for k in blocks if k != skip and fold_name(k) == folded), None)


def _apply_renames(
    spec_id: str, plan: DeltaPlan, blocks: dict[str, Block], order: list[str]
) -> int:
    applied = 0
    failed = f"{spec_id} RENAMED failed for header"
    for pair in plan.renamed:
        old, new = normalize_name(pair[0].name), normalize_name(pair[1].name)
        if old not in blocks:
            if new in blocks:
                near = _near(blocks, old, skip=new)
                if near is not None:
                    raise SpecUpdateError(
                        f"{failed} {_header(pair[0].name)} - source not found, but "
                        f"{_header(blocks[near].name)} exists; fix the header to match it exactly"
                    )
                continue
            raise SpecUpdateError(f"{failed} {_header(pair[0].name)} - source not found")
        if new in blocks:
            raise SpecUpdateError(f"{failed} {_header(pair[1].name)} - target already exists")
        near = _near(blocks, new, skip=old)
        if near is not None:
            raise SpecUpdateError(
                f"{failed} {_header(pair[1].name)} - {_header(blocks[near].name)} already exists "
                "and differs only in case or spacing; choose a distinct name"
            )
        block = blocks.pop(old)
        raw_lines = block.raw.split("\n")
        raw_lines[0] = H + new
        blocks[new] = Block(H + new, new, "\n".join(raw_lines), block.line)
        if old in order:
            order[order.index(old)] = new
        applied += 1
    return applied


def _apply_removals(
    spec_id: str,
    plan: DeltaPlan,
    blocks: dict[str, Block],
    is_new: bool,
    warnings: list[str] | None,
) -> int:
    applied = 0
    for removed in plan.removed:
        key = normalize_name(removed.name)
        if key in blocks:
            del blocks[key]
            applied += 1
        elif not is_new:
            near = _near(blocks, key)
            if near is not None:
                raise SpecUpdateError(
                    f"{spec_id} REMOVED failed for header {_header(removed.name)} - not found, "
                    f"but {_header(blocks[near].name)} exists; fix the header to match it exactly"
                )
            if warnings is not None:
                warnings.append(
                    f'{spec_id} - REMOVED requirement "{removed.name}" is not in the current '
                    "spec; treating it as already removed."
                )
    return applied


def _apply_modified(spec_id: str, plan: DeltaPlan, blocks: dict[str, Block]) -> int:
    applied = 0
    for mod in plan.modified:
        key = normalize_name(mod.name)
        failed = f"{spec_id} MODIFIED failed for header {_header(mod.name)}"
        current = blocks.get(key)
        if current is None:
            raise SpecUpdateError(f"{failed} - not found")
        header = REQUIREMENT_HEADER.match(mod.raw.split("\n")[0])
        if not header or normalize_name(header.group(1)) != key:
            raise SpecUpdateError(f"{failed} - header mismatch in content")
        diff = diff_scenarios(current, mod)
        if diff.missing:
            names = ", ".join(f'"{n}"' for n in diff.missing)
            raise SpecUpdateError(
                f"{failed} - current spec contains scenario(s) not present in the modified block: "
                f"{names}. {describe_balance(diff)} Refresh the change spec before "
                "archiving to avoid dropping scenarios."
            )
        if not same_text(current.raw, mod.raw):
            applied += 1
        blocks[key] = mod
    return applied


def _apply_additions(spec_id: str, plan: DeltaPlan, blocks: dict[str, Block]) -> int:
    applied = 0
    for add in plan.added:
        key = normalize_name(add.name)
        existing = blocks.get(key)
        if existing is not None:
            if same_text(existing.raw, add.raw):
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
        applied += 1
    return applied
