"""The crash harness in CI (issue 41, item 2): a fixed set of seeds, each a workload over every feature that keeps
state on disk, with the broker stopped by SIGKILL or SIGTERM at seeded points and restarted several times on the
same data directory, then held to every promise by the checker (checker.py).

A seed that finds a defect is written down in FINDINGS.md with its reproduction; it joins this list once the defect
is fixed. The long run is ``tests/benchmarks/crash_soak.py --soak --minutes N``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from crash.runner import run_plan
from crash.workload import generate

#: the seeds CI runs: together they stop the broker at every combination the generator makes (a subscriber online
#: at one kill and away at the next, both signals, every ack mode); about 6-10 s each on a 2-core machine
SEEDS = (1, 2, 3, 4, 5, 6, 7)
#: what CI covers so far (the other features join as their seeds pass)
CI_FEATURES = ("queue", "durable")


@pytest.mark.parametrize("seed", SEEDS)
async def test_seed_keeps_every_promise_across_kills_and_restarts(
    seed: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = generate(seed, features=CI_FEATURES)
    outcome = await run_plan(plan, tmp_path)
    verdict = outcome.verdict
    total = verdict.total()
    with capsys.disabled():
        print(
            f"\ncrash seed {seed}: {outcome.kills} stops ({', '.join(outcome.ledger.kills)}), {outcome.restarts} "
            f"restarts, {total.confirmed} confirmed sends, lost {total.lost}, delivered after ack "
            f"{total.delivered_after_ack}, repeats {total.repeats}, out of order {total.out_of_order}, "
            f"invented {total.invented}, early {total.early}, retained wrong {total.retained_wrong} "
            f"({outcome.seconds:.1f} s)"
        )
    assert verdict.ok, f"\n{plan.describe()}\n{verdict.summary()}\nerrors: {verdict.errors}\n" + "\n".join(
        verdict.examples
    )
