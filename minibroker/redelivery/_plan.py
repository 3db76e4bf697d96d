"""A retry policy's schedule (one :class:`PlanStep` per attempt), how it is shown, and the interface both policy
families share."""

from __future__ import annotations

import math
import random
from collections.abc import Iterable
from typing import Protocol, runtime_checkable

import attrs

# ----------------------------------------------------------------------------------------------------
# The schedule a policy produces, and how it is shown to people
# ----------------------------------------------------------------------------------------------------


@attrs.frozen
class PlanStep:
    """One delivery attempt in a policy's schedule; the whole tuple shows when and where a message gives up.

    ``attempt`` 1 is the first delivery; ``delay`` is the wait before this attempt and ``elapsed`` the time
    since the first delivery, both in seconds. ``dead_letter`` is set on the last row only: where the message
    goes if that attempt fails too. ``continues`` marks a last row that is not the end (a policy that never
    gives up). ``note`` adds policy-specific detail (the delay level).
    """

    attempt: int
    delay: float
    elapsed: float
    dead_letter: str | None = None
    continues: bool = False
    note: str = ""


def format_duration(seconds: float) -> str:
    """Render a delay with its unit ("1 ms", "1.5 s", "2 min 5 s", "2 h"): 1 ms must not pass for 1 s."""
    if not math.isfinite(seconds):
        return str(seconds)
    if seconds < 0:
        return "-" + format_duration(-seconds)
    micros = round(seconds * 1_000_000)
    if micros < 1_000_000:
        if micros % 1000 == 0:
            return f"{micros // 1000} ms"
        return f"{micros / 1000:.3f}".rstrip("0") + " ms"
    if micros < 60_000_000:
        text = f"{micros / 1_000_000:.6f}".rstrip("0")
        return (text + "0" if text.endswith(".") else text) + " s"
    whole, micro_rest = divmod(micros, 1_000_000)
    days, rest = divmod(whole, 86_400)
    hours, rest = divmod(rest, 3_600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{value} {unit}" for value, unit in ((days, "d"), (hours, "h"), (minutes, "min")) if value]
    if micro_rest:
        parts.append(f"{secs}.{micro_rest:06d}".rstrip("0") + " s")
    elif secs:
        parts.append(f"{secs} s")
    return " ".join(parts)


def format_plan(steps: Iterable[PlanStep]) -> str:
    """Render a schedule from ``explain()`` as a table, ending with a one-line summary of the outcome."""
    rows = list(steps)
    if not rows:
        return "(no deliveries)\n"
    with_notes = any(step.note for step in rows)
    header = ["attempt", "delay", "elapsed", "if it fails"] + (["note"] if with_notes else [])
    table: list[list[str]] = [header]
    for index, step in enumerate(rows):
        if step.dead_letter is not None:
            outcome = f"dead-letter to {step.dead_letter}"
        elif step.continues or index < len(rows) - 1:
            outcome = "redeliver"
        else:
            outcome = "(end of listing)"
        cells = [
            str(step.attempt),
            "-" if step.attempt == 1 else format_duration(step.delay),
            format_duration(step.elapsed),
            outcome,
        ]
        table.append([*cells, step.note] if with_notes else cells)
    widths = [max(len(row[col]) for row in table) for col in range(len(header))]
    lines = []
    for row in table:
        cells = [row[0].rjust(widths[0])]
        cells += [cell.ljust(width) for cell, width in zip(row[1:], widths[1:], strict=True)]
        lines.append("  ".join(cells).rstrip())
    last = rows[-1]
    if last.dead_letter is not None:
        lines.append(f"{last.attempt} deliveries within {format_duration(last.elapsed)}, then {last.dead_letter}")
    elif last.continues:
        lines.append(f"no maximum: redelivered forever (first {len(rows)} attempts shown)")
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------------------------------
# The common interface
# ----------------------------------------------------------------------------------------------------


@runtime_checkable
class RetryPolicy(Protocol):
    """What the broker asks of any retry policy: how long to wait, whether to give up, and the whole plan."""

    def delay_for(self, redelivery_counter: int, rng: random.Random | None = None) -> float:
        """Seconds to wait before redelivery number ``redelivery_counter`` (1 = the first redelivery)."""
        ...

    def exceeded(self, redelivery_counter: int) -> bool:
        """True when a message whose counter has reached ``redelivery_counter`` must be dead-lettered."""
        ...

    def explain(
        self, rng: random.Random | None = None, dead_letter_queue: str = ..., limit: int = 20
    ) -> tuple[PlanStep, ...]:
        """One row per delivery attempt, ending where the message goes."""
        ...
