"""What the packaging says about the project itself (issue 43, item 7)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_no_project_url_until_there_is_one() -> None:
    """No [project.urls] pointing at nothing; the file says why there is none."""
    text = (ROOT / "pyproject.toml").read_text()
    assert "urls" not in tomllib.loads(text)["project"]
    assert "No [project.urls] yet" in text


def test_every_release_in_the_changelog_has_a_date() -> None:
    headings = re.findall(r"^## (.+)$", (ROOT / "CHANGELOG.md").read_text(), re.M)
    assert headings
    for heading in headings:
        assert re.fullmatch(r"\d+\.\d+\.\d+ \(\d{4}-\d{2}-\d{2}\)", heading), heading
