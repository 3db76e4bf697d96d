"""Each guide says how to install minibroker into its project (issue 43, item 3)."""

from __future__ import annotations

from pathlib import Path

import pytest

GUIDES = sorted((Path(__file__).resolve().parents[1] / "docs" / "guides").glob("*.md"))


@pytest.mark.parametrize("guide", GUIDES, ids=[g.stem for g in GUIDES])
def test_the_guide_says_how_to_install_minibroker(guide: Path) -> None:
    assert "pip install '/path/to/minibroker" in guide.read_text() or "pip install /path/to/minibroker" in (
        guide.read_text()
    ), f"{guide.name} does not say how to install minibroker"
