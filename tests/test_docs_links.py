"""The front door holds together: the README stays a short front page, every relative link and
image in the README, the user guide (docs/guide/), the other docs and the extension's README
points at a file that exists (and, with a ``#fragment``, at a heading of it, as GitHub makes
heading anchors), every guide page is in the guide's index, and no code or doc still points at a
README section that moved to the guide."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
GUIDE = ROOT / "docs" / "guide"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _documents() -> list[Path]:
    docs = [README, ROOT / "editor-client" / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    return [d for d in docs if d.is_file()]


def _prose(text: str) -> str:
    """The text outside fenced code blocks and inline code spans (links there are examples)."""
    text = re.sub(r"(?ms)^```.*?^```", "", text)
    return re.sub(r"`[^`\n]*`", "", text)


def _links(text: str) -> list[str]:
    """The targets of Markdown links and images: ``[text](target)`` and ``![alt](target)``."""
    return re.findall(r"\]\(([^)\s]+)\)", _prose(text))


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = re.sub(r"(?ms)^```.*?^```", "", path.read_text())
    return {_slug(h) for h in re.findall(r"(?m)^#{1,6} (.+)$", text)}


def _relative(target: str) -> bool:
    return not re.match(r"[a-z][a-z0-9+.-]*:", target)


@pytest.mark.parametrize("doc", _documents(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_and_anchor_resolves(doc: Path) -> None:
    broken = []
    for target in _links(doc.read_text()):
        if not _relative(target):
            continue
        path_part, _, fragment = target.partition("#")
        dest = (doc.parent / path_part).resolve() if path_part else doc
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif fragment and dest.suffix == ".md" and fragment not in _anchors(dest):
            broken.append(f"{target}: no heading #{fragment} in {dest.relative_to(ROOT)}")
    assert not broken, f"{doc.relative_to(ROOT)}: {broken}"


def test_the_readme_is_a_short_front_page_with_a_picture() -> None:
    text = README.read_text()
    assert len(text.splitlines()) < 200
    images = re.findall(r"!\[[^\]]+\]\(([^)]+)\)", text)
    assert "docs/images/run-in-progress.png" in images, images
    for image in images:
        assert (ROOT / image).read_bytes().startswith(PNG_MAGIC), f"{image} is not a PNG"
    # The two quick start commands, as the Makefile has them.
    makefile = (ROOT / "Makefile").read_text()
    for target in ("demo", "test", "screenshots"):
        assert f"make {target}" in text
        assert re.search(rf"(?m)^{target}:", makefile), f"no make {target}"


def test_the_extensions_readme_shows_the_same_screenshots() -> None:
    """Its images are the README's own files in docs/images/ (one copy of each picture), linked
    relatively: the .vsix is built offline with them as they are (build.sh)."""
    client = ROOT / "editor-client"
    images = re.findall(r"!\[[^\]]+\]\(([^)]+)\)", (client / "README.md").read_text())
    front = re.findall(r"!\[[^\]]+\]\(([^)]+)\)", README.read_text())
    assert images, "the Marketplace page has no picture"
    shown = sorted((client / i).resolve() for i in images)
    assert shown == sorted((ROOT / i).resolve() for i in front)
    assert "--no-rewrite-relative-links" in (client / "scripts" / "build.sh").read_text()


def test_every_guide_page_is_in_the_index() -> None:
    index = set(_links((GUIDE / "README.md").read_text()))
    pages = {p.name for p in GUIDE.glob("*.md")} - {"README.md"}
    assert pages, "no guide pages"
    assert pages <= index, f"not in docs/guide/README.md: {sorted(pages - index)}"


def test_nothing_points_at_a_readme_section_that_moved() -> None:
    """`README "Security model"` style references: the README's sections are few now."""
    headings = {h.strip().lower() for h in re.findall(r"(?m)^#+ (.+)$", README.read_text())}
    sources = [*ROOT.joinpath("ralph_lsp").rglob("*.py"), *_documents()]
    sources.append(ROOT / "editor-client" / "package.json")
    stale = []
    for source in sources:
        for name in re.findall(r"README(?:'s)?,? \"([^\"]+)\"", source.read_text()):
            if name.strip().lower() not in headings:
                stale.append(f"{source.relative_to(ROOT)}: README {name!r}")
    assert not stale, stale
