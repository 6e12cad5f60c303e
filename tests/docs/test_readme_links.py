"""The README's links into the docs lead somewhere.

``mkdocs build --strict`` checks the site's own links and anchors, but the README is not a
page of the site: a renamed page or heading would leave its quick-start links dead. Anchors
are computed with Python-Markdown's own ``slugify`` (what the site's ``toc`` uses), not with
the runner's code.
"""

from __future__ import annotations

import re
from pathlib import Path

from markdown.extensions.toc import slugify  # type: ignore[import-untyped]

REPO = Path(__file__).resolve().parents[2]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _anchors(page: Path) -> set[str]:
    """The heading ids of a Markdown page (fenced code skipped)."""
    found, fenced = set(), False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and line.startswith("#"):
            found.add(slugify(line.lstrip("#").strip().replace("`", ""), "-"))
    return found


def _local_links(page: Path) -> list[str]:
    targets = LINK.findall(page.read_text(encoding="utf-8"))
    return [t for t in targets if not t.startswith(("http://", "https://", "mailto:"))]


def test_every_link_of_the_readme_names_a_file_and_heading_that_exist() -> None:
    readme = REPO / "README.md"
    links = _local_links(readme)
    assert len(links) >= 10, links  # the quick start links into the docs
    dead = []
    for link in links:
        path, _, anchor = link.partition("#")
        target = (readme.parent / path) if path else readme
        if not target.exists():
            dead.append(f"{link}: no file {path}")
        elif anchor and target.suffix == ".md" and anchor not in _anchors(target):
            dead.append(f"{link}: no heading #{anchor} in {path or 'README.md'}")
    assert dead == []


def test_a_dead_anchor_is_found(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# Title\n\n## When it pays off\n\n```\n# not a heading\n```\n")
    assert _anchors(page) == {"title", "when-it-pays-off"}
