"""The recorded corpus through ActiveMQ's own JMS client against minibroker (issue 44, item 4): a deterministic subset.

The oracle that recorded ``tests/differential/`` on an embedded ActiveMQ 5.17.2 runs the same scripts, with Debian's
activemq-client 5.17.2, against minibroker's OpenWire listener (``ScriptOracle --minibroker``; ``driver.py`` starts a
fresh broker per script with its options), and what the client saw must equal the recording after the replayer's
normalisations (``replay.difference``). The subset (``SUBSET``) covers every feature family, every feature of the
mixed corpus and the conformance scenarios; ``replay.py`` runs the whole corpus (README.md).
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest

from openwire_replay import replay

#: scripts of each feature family of ``features/`` in the subset; each family's first ones by name
PER_FAMILY = 2
#: scripts of each generated batch of ``corpus/`` (gen_11, ..., gen_23) and of its hand-written corners
PER_BATCH = 2


def _family(path: Path) -> str:
    """``feat_selector_like`` -> ``feat_selector``; ``durable_offline`` -> ``durable``; ``gen_21_004`` -> ``gen_21``."""
    parts = path.stem.split("_")
    if parts[0] in ("feat", "gen", "mixed"):
        return "_".join(parts[:2])
    return parts[0]


def _mixed_features(path: Path) -> set[str]:
    origin = json.loads(path.read_text()).get("origin", "")
    found = re.search(r"\(([^)]*)\)", origin)
    return {f.strip() for f in found.group(1).split(",")} if found else set()


def subset() -> list[Path]:
    """Deterministic: the first ``PER_FAMILY`` of every family of features/, ``PER_BATCH`` of every batch of corpus/,
    mixed scripts chosen in name order until every mixed feature is covered twice, and every conformance script."""
    chosen: list[Path] = list(replay.recordings("conformance"))
    for family_dir, per in (("features", PER_FAMILY), ("corpus", PER_BATCH)):
        seen: dict[str, int] = {}
        for path in replay.recordings(family_dir):
            family = _family(path)
            if seen.get(family, 0) < per:
                seen[family] = seen.get(family, 0) + 1
                chosen.append(path)
    covered: dict[str, int] = {}
    for path in replay.recordings("mixed"):
        features = _mixed_features(path)
        if any(covered.get(f, 0) < 2 for f in features):
            for f in features:
                covered[f] = covered.get(f, 0) + 1
            chosen.append(path)
    return chosen


SUBSET = subset()


@pytest.fixture(scope="module")
def replayed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """The subset through the real client, once per module: name -> the oracle's result."""
    why = replay.missing_tools()
    if why is not None:
        pytest.skip(why)
    build = tmp_path_factory.mktemp("oracle")

    async def run() -> dict[str, dict[str, Any]]:
        await replay.build(build)
        return await replay.replay(build, SUBSET, parallel=3)

    return asyncio.run(run())


@pytest.mark.conformance
@pytest.mark.parametrize(
    "path",
    [
        pytest.param(
            p,
            id=p.stem,
            marks=[pytest.mark.xfail(reason=replay.KNOWN_DIFFERENCES[p.stem], strict=True)]
            if p.stem in replay.KNOWN_DIFFERENCES
            else [pytest.mark.xfail(reason=replay.TCP_RACES[p.stem], strict=False)]
            if p.stem in replay.TCP_RACES
            else [],
        )
        for p in SUBSET
    ],
)
def test_the_real_client_sees_on_minibroker_what_it_saw_on_activemq(
    path: Path, replayed: dict[str, dict[str, Any]]
) -> None:
    """The recording's events, replayed through Debian's activemq-client against minibroker over OpenWire."""
    record = replay.recording_of(path)
    difference = replay.difference(record, replayed[path.stem])
    assert difference is None, f"{path.parent.name}/{path.stem} ({record.get('origin')}): {difference}"


def test_the_subset_covers_every_family() -> None:
    """Every family of features/, every batch of corpus/ and every feature of the mixed corpus is in the subset."""
    chosen = {p.stem for p in SUBSET}
    for family_dir in ("features", "corpus"):
        families = {_family(p) for p in replay.recordings(family_dir)}
        assert families == {_family(p) for p in replay.recordings(family_dir) if p.stem in chosen}
    mixed = set().union(*(_mixed_features(p) for p in replay.recordings("mixed")))
    assert mixed and mixed == set().union(*(_mixed_features(p) for p in SUBSET if p.parent.name == "mixed"))
