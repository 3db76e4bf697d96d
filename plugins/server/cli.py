"""``minibroker``: the command line (``serve``, ``redelivery-plan``, ...)."""

from __future__ import annotations

import argparse
import sys

from minibroker.redelivery import RedeliveryPolicy, format_plan

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="minibroker", description="An ActiveMQ-faithful broker for tests.")
    sub = parser.add_subparsers(dest="command", required=True)
    plan = sub.add_parser(
        "redelivery-plan",
        help="print the redelivery schedule of a policy",
        description="Print attempt, delay, cumulative time and final destination for an ActiveMQ redelivery policy. "
        "Options take ActiveMQ's names and units (milliseconds), e.g. initialRedeliveryDelay=1 is one millisecond.",
    )
    plan.add_argument("options", nargs="*", metavar="NAME=VALUE",
                      help="ActiveMQ RedeliveryPolicy options, e.g. maximumRedeliveries=3 useExponentialBackOff=true")
    plan.add_argument("--dlq", default="ActiveMQ.DLQ", help="dead-letter queue name shown in the last row")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "redelivery-plan":
        options: dict[str, object] = {}
        for item in args.options:
            name, sep, value = item.partition("=")
            if not sep:
                print(f"minibroker: expected NAME=VALUE, got {item!r}", file=sys.stderr)
                return 2
            options[name] = value
        policy = RedeliveryPolicy.from_activemq(options)
        print(format_plan(policy.explain(dead_letter_queue=args.dlq)))
        return 0
    return 2  # pragma: no cover - argparse enforces the choices
