"""The Spark guide's files carry their pytest configuration (issue 43, item 7): copied into a folder with the
guide's pyproject.toml and nothing else, the test is collected (its import of the pipeline beside it resolves) even
under ``--import-mode=importlib``, where nothing else puts the folder on ``sys.path``."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
GUIDE = REPO / "docs" / "guides" / "spark-pipeline.md"


def test_the_copied_files_collect_with_the_guide_s_configuration(pytester: pytest.Pytester) -> None:
    pytest.importorskip("pyspark")
    [config] = re.findall(r"```toml pyproject.toml\n(.*?)```", GUIDE.read_text(), re.S)
    (pytester.path / "pyproject.toml").write_text(config)
    for name in ("spark_pipeline.py", "test_spark_pipeline.py"):
        (pytester.path / name).write_text((REPO / "examples" / name).read_text())
    result = pytester.runpytest_subprocess("--collect-only", "-q", "--import-mode=importlib", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["*test_orders_are_priced_once_and_acked*"])
    assert result.ret == 0, result.stdout.str()
