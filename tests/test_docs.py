"""The README is a front door (short; the rest in docs/), and every link in it and in docs/ resolves."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
#: The docs/ pages the README must point to (issue 13 item 9).
TOPICS = ("config", "hooks", "data", "engine", "multi-machine", "architecture", "custom-hooks", "run-directory")


def _anchor(heading: str) -> str:
    """GitHub's anchor for a Markdown heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_the_readme_is_a_front_door():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 150
    assert len(re.findall(r"^#{1,6} ", text, flags=re.M)) <= 8
    for must in ("make demo", "make test", "## A first config", "## Commands", "## Where to read more"):
        assert must in text, must
    for topic in TOPICS:
        assert f"(docs/{topic}.md)" in text, topic
        assert (REPO / "docs" / f"{topic}.md").exists(), topic


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_relative_link_resolves(page):
    text = page.read_text(encoding="utf-8")
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(target)
        elif anchor and file.suffix == ".md":
            headings = re.findall(r"^#{1,6} (.+)$", file.read_text(encoding="utf-8"), flags=re.M)
            if anchor not in {_anchor(h) for h in headings}:
                broken.append(target)
    assert not broken, broken


def test_tf_env_does_not_claim_no_other_module_imports_tensorflow():
    source = (REPO / "runner" / "tf_env.py").read_text(encoding="utf-8")
    engine = (REPO / "runner" / "session" / "engine.py").read_text(encoding="utf-8")
    assert re.search(r"^import tensorflow", engine, flags=re.M)  # so the claim would be stale
    assert "Nothing else in hookrun imports TensorFlow at module level" not in source
