"""docs/fidelity.md is generated from the audit table, is current, and every verified row is backed by recordings
that a test really replays (issue 17, item 3)."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

from minibroker.features import FEATURES, Feature, Status

REPO = Path(__file__).resolve().parent.parent


def load(relative: str, name: str) -> ModuleType:
    """A module of this repository by path (docs/ and the replay tests are not packages)."""
    path = REPO / relative
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def generator() -> ModuleType:
    return load("docs/gen_fidelity.py", "gen_fidelity")


#: each replay test, and how to read from it the recording files it parametrizes over
REPLAYERS: dict[str, Callable[[ModuleType], set[Path]]] = {
    "tests/conformance/test_conformance.py": lambda m: {Path(p).resolve() for p in m.RECORDINGS},
    "tests/plugins/stomp/test_recordings.py": lambda m: {(m.RECORDINGS / f"{s}.json").resolve() for s in m.SCENARIOS},
    "tests/plugins/mqtt/test_recordings.py": lambda m: {p.resolve() for p in m.RECORDINGS.glob("*.json")},
    "tests/plugins/stomp/test_transformations.py": lambda m: {
        (REPO / "tests/plugins/stomp/recordings/transformations.json").resolve()
    },
    "tests/auth_oracle/test_auth_recordings.py": lambda m: {
        (REPO / "tests/auth_oracle/recordings/auth_cases.json").resolve()
    },
    # the wire corpus's scripts that replay as recorded (known differences are strict xfails, not proof)
    "tests/wire_oracle/test_wire_oracle.py": lambda m: {
        (m.CORPUS / f"{name}.json").resolve() for name in m.NAMES if name not in m._CAUSE
    },
    # the corpus and the feature recordings minibroker reproduces (known differences are strict xfails, not proof)
    "tests/differential/test_differential.py": lambda m: {
        Path(p).resolve() for p in m.CORPUS + m.FEATURES if m.known_difference(Path(p).stem) is None
    },
}


@pytest.fixture(scope="module")
def replayed() -> set[Path]:
    """Every recording file some test replays, read from the replay tests' own parameter lists."""
    files: set[Path] = set()
    for index, (relative, read) in enumerate(REPLAYERS.items()):
        files |= read(load(relative, f"_replayer_{index}"))
    return files


def test_the_page_is_current(generator: ModuleType) -> None:
    page = REPO / "docs" / "fidelity.md"
    assert page.exists(), "docs/fidelity.md is missing: run .venv/bin/python docs/gen_fidelity.py"
    stale = "docs/fidelity.md is stale: run .venv/bin/python docs/gen_fidelity.py"
    assert page.read_text() == generator.render(), stale


def test_every_row_has_a_line_and_the_counts_head_the_page(generator: ModuleType) -> None:
    text = generator.render()
    for feature in FEATURES:
        assert f"| `{feature.id}` |" in text
    head = text.split("## ", 1)[0]
    for status in Status:
        count = sum(1 for f in FEATURES if f.status is status)
        assert f"| {status.value} | {count} |" in head


@pytest.mark.parametrize("feature", [f for f in FEATURES if f.status is Status.VERIFIED], ids=lambda f: f.id)
def test_verified_rows_name_recordings_that_ci_replays(
    generator: ModuleType, replayed: set[Path], feature: Feature
) -> None:
    for pattern in feature.recordings:
        matched = [p for p in REPO.glob(pattern) if p.name not in generator.NOT_RECORDINGS]
        assert matched, f"{feature.id}: {pattern} matches no recording"
        not_replayed = [str(p.relative_to(REPO)) for p in matched if p.resolve() not in replayed]
        assert not not_replayed, f"{feature.id}: no test replays {not_replayed}"
    assert f"| verified | {len(generator.recordings(feature))} |" in generator.render()


@pytest.mark.parametrize("feature", [f for f in FEATURES if f.status is Status.IMPLEMENTED], ids=lambda f: f.id)
def test_implemented_rows_name_tests_that_exist(feature: Feature) -> None:
    for test in feature.tests:
        path, _, name = test.partition("::")
        source = REPO / path
        assert source.is_file(), f"{feature.id}: {path} does not exist"
        if name:
            assert f"def {name}(" in source.read_text(), f"{feature.id}: {path} has no test {name}"


def test_the_check_mode_reports_a_stale_page(
    generator: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stale = tmp_path / "fidelity.md"
    stale.write_text("old\n")
    monkeypatch.setattr(generator, "PAGE", stale)
    assert generator.main(["--check"]) == 1
    assert generator.main([]) == 0 and generator.main(["--check"]) == 0
