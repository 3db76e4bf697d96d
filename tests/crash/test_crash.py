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

#: the seeds CI runs, every feature in each (seed 5 pages a topic's log and a queue past 10,000 messages): 3 to 5
#: stops each, SIGKILL and SIGTERM, subscribers online at one stop and away at the next, every ack mode; 6-20 s
#: each on a 2-core machine. Seed 15 has a durable subscriber close with messages it was given after a transacted
#: send numbered before them (FINDINGS.md's entry 4, ActiveMQ's rule).
SEEDS = (2, 3, 4, 5, 7, 9, 10, 14, 15)


@pytest.mark.parametrize("seed", SEEDS)
async def test_seed_keeps_every_promise_across_kills_and_restarts(
    seed: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = generate(seed)
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
