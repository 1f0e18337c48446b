"""Authoring help for OpenSpec spec files (SPEC §11): what an editor offers while a main spec or a
delta spec is written, as plain data the server turns into LSP answers.

`authoring/outline.py` reads a spec file into its sections, requirements and scenarios with their
lines (`outline`), and the names a delta refers to in the main spec (`Ref`);
`authoring/specs.py` finds the main spec a delta targets (`main_spec_of`) and the requirements of
every main spec (`workspace_requirements`); `authoring/assist.py` holds completion (`complete`),
definition and hover (`reference_at`, `hover_markdown`); `authoring/fixes.py` the code actions
for the validation rules' common errors (`fixes`), each a list of `Edit`s.
**Invariant:** reads files and does nothing else, like the rest of `openspec/`; the readers are the
validation package's (`openspec/validation/blocks.py`), so what is offered agrees with the CLI;
every reader is linear in the text, on crafted input too, since the server calls them on its
event loop (`tests/openspec_validate/test_authoring_linear.py`).
"""
