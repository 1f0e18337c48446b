"""OpenSpec validation exact to `openspec validate` 1.13.2 (SPEC §11).

`validation/text.py` holds the JavaScript string semantics the CLI's rules are written in
(whitespace, `trim`, UTF-16 lengths) and the fence mask; `validation/blocks.py` reads delta specs
and the requirements section of a main spec (`parse_delta_spec`, `extract_requirements_section`),
and `validation/scenario_diff.py` compares a MODIFIED block's scenarios with the current block's
(`diff_scenarios`);
`validation/markdown.py` is the CLI's section parser for main specs; `validation/spec_rules.py`
validates a main spec (`validate_spec`), with the structure and placeholder-Purpose checks of
`validation/structure.py`; `validation/change_rules.py` validates a change's deltas
(`validate_change`) with the rules for one delta spec file and scenario loss of
`validation/delta_rules.py`, the `.openspec.yaml` `skip_specs` marker as
`validation/metadata.py` reads it, the archive dry run of `validation/archive_check.py` (it
collects the refusals of `validation/delta_apply.py`, the one application of a delta's
operations, which archive raises), `validation/discovery.py`'s walk of `specs/`
(`discover_spec_files`) and the task-file lint of `validation/task_lint.py`;
`validation/proposal.py` holds the proposal rules the CLI applies at archive time;
`validation/items.py` finds the items a project has (`list_change_ids`, `list_spec_ids`,
`nearest_matches`); `validation/targets.py` which items a changed file asks to re-validate
(`targets_of`), for the server's live diagnostics.
Every finding is an `Issue` (`validation/issues.py`): the CLI's level, path and message (its
fixed messages word for word in `validation/messages.py`), our stable rule `code`, and a range in
the file.
The value classes are plain `__slots__` classes (`validation/record.py`'s `Record` gives the
compared ones a dataclass's equality and repr) and patterns compile on first use
(`text.LazyPattern`): a `ralph-lsp validate` call is mostly process start.
Every reader is linear in its input, on crafted input too
(`tests/openspec_validate/test_linear.py`); its caches are `functools` caches, safe in the
worker thread the server runs it in.
**Invariant:** reads files and does nothing else, like the rest of `openspec/`.
"""
