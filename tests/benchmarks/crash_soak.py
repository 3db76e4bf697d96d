"""The crash harness's long run (issue 41, item 2): seed after seed of tests/crash's workloads, each with its kills
and restarts, until the time is up; then the figures per feature (kills, restarts, confirmed sends, lost,
delivered after ack, ...) and every failing seed with its plan, for FINDINGS.md.

    .venv/bin/python tests/benchmarks/crash_soak.py --soak --minutes 30          # seeds 1000, 1001, ... for 30 min
    .venv/bin/python tests/benchmarks/crash_soak.py --seed 4                     # one seed: its plan and figures
    .venv/bin/python tests/benchmarks/crash_soak.py --seed 4 --features paging   # the same seed, fewer features

A failing seed's data directory and server logs are kept (the path is printed); a passing one's are deleted.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the crash and support packages

from crash.checker import Figures
from crash.runner import Outcome, run_plan
from crash.workload import FEATURES, generate


def line(outcome: Outcome) -> str:
    total = outcome.verdict.total()
    state = "ok" if outcome.verdict.ok else "FAILED"
    return (
        f"seed {outcome.plan.seed:>5} {state:<6} {outcome.seconds:5.1f} s  {outcome.kills} stops "
        f"({' '.join(k.removeprefix('SIG') for k in outcome.ledger.kills)})  confirmed {total.confirmed:>6}  "
        f"lost {total.lost}  after-ack {total.delivered_after_ack}  repeats {total.repeats}  order "
        f"{total.out_of_order}  invented {total.invented}  early {total.early}  retained {total.retained_wrong}"
        f"  [{','.join(outcome.plan.features())}]"
    )


def report(outcome: Outcome, workdir: Path) -> None:
    print(outcome.plan.describe())
    print(outcome.verdict.summary())
    for error in outcome.verdict.errors:
        print("  error:", error)
    for example in outcome.verdict.examples[:25]:
        print("  ", example)
    if not outcome.verdict.ok:
        print(f"  kept: {workdir} (the data directory and the servers' logs)")


async def one(seed: int, features: list[str] | None, root: Path) -> Outcome:
    workdir = root / f"seed-{seed}"
    outcome = await run_plan(generate(seed, features=features), workdir)
    if outcome.verdict.ok:
        shutil.rmtree(workdir, ignore_errors=True)
    return outcome


async def soak(args: argparse.Namespace) -> int:
    root = Path(tempfile.mkdtemp(prefix="crash-soak-"))
    features = args.features.split(",") if args.features else None
    if args.seed is not None:
        outcome = await one(args.seed, features, root)
        print(line(outcome))
        report(outcome, root / f"seed-{args.seed}")
        return 0 if outcome.verdict.ok else 1
    deadline = time.monotonic() + args.minutes * 60
    per_feature: dict[str, Figures] = defaultdict(Figures)
    kills = restarts = runs = 0
    failed: list[Outcome] = []
    seed = args.first
    while time.monotonic() < deadline:
        outcome = await one(seed, features, root)
        print(line(outcome), flush=True)
        runs += 1
        kills += outcome.kills
        restarts += outcome.restarts
        for name, figures in outcome.verdict.features.items():
            into = per_feature[name]
            for field in ("confirmed", "unconfirmed", "deliveries", "lost", "delivered_after_ack", "repeats"):
                setattr(into, field, getattr(into, field) + getattr(figures, field))
            into.out_of_order += figures.out_of_order
            into.invented += figures.invented
            into.early += figures.early
            into.retained_wrong += figures.retained_wrong
        if not outcome.verdict.ok:
            failed.append(outcome)
        seed += 1
    print(f"\n{runs} runs (seeds {args.first}-{seed - 1}) in {args.minutes} min: {kills} stops, {restarts} restarts")
    print(
        f"{'feature':<10} {'confirmed':>9} {'unconfirmed':>11} {'deliveries':>10} {'lost':>5} {'after-ack':>9} "
        f"{'repeats':>7} {'order':>5} {'invented':>8} {'early':>5} {'retained':>8}"
    )
    for name in sorted(per_feature):
        f = per_feature[name]
        print(
            f"{name:<10} {f.confirmed:>9} {f.unconfirmed:>11} {f.deliveries:>10} {f.lost:>5} "
            f"{f.delivered_after_ack:>9} {f.repeats:>7} {f.out_of_order:>5} {f.invented:>8} {f.early:>5} "
            f"{f.retained_wrong:>8}"
        )
    for outcome in failed:
        print()
        report(outcome, root / f"seed-{outcome.plan.seed}")
    if not failed:
        shutil.rmtree(root, ignore_errors=True)
    return 1 if failed else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--soak", action="store_true", help="run seeds one after the other until --minutes pass")
    parser.add_argument("--minutes", type=float, default=10.0, help="how long the soak runs (default: 10)")
    parser.add_argument("--first", type=int, default=1000, help="the soak's first seed (default: 1000)")
    parser.add_argument("--seed", type=int, help="run this one seed and print its plan and figures")
    parser.add_argument("--features", help=f"a comma-separated subset of {','.join(FEATURES)}")
    args = parser.parse_args()
    if not args.soak and args.seed is None:
        parser.error("give --soak or --seed N")
    sys.exit(asyncio.run(soak(args)))


if __name__ == "__main__":
    main()
