#!/usr/bin/env python3
"""Regenerate and re-record the differential corpus against the real-broker oracle.

    python3 tests/differential/record.py [--oracle DIR]

The oracle is the folder of the scripted ActiveMQ Classic 5.17.2 oracle (gen.py, run-script.sh,
compare_runs.py and ScriptOracle.java; it needs Java 17 and `apt-get install -y activemq
libactivemq-java`): by default this checkout's copy in tests/differential/oracle/, else --oracle or
the environment variable ORACLE_DIR. Stdlib only; the test suite itself never runs this file.

What it does (the corpus in tests/differential/corpus/ was made exactly like this):
  1. generates the random scripts: `gen.py --seed N --count K [flags]` for every entry of BATCHES
     (gen.py names them gen_<seed>_<iii>), and builds the hand-made corner scripts of HAND
     (hand_*, race-free by the rules in gen.py's docstring);
  2. runs every batch on the real broker TWICE (run 1 of all batches, then run 2 of all
     batches; one JVM at a time, each batch is one `run-script.sh DIR` call);
  3. keeps a script only if both runs give the same events ignoring t_ms/gap_ms (the
     semantics of `compare_runs.py runs`) and neither has an `error`;
  4. writes corpus/<name>.json = {"name", "origin", "script", "events" (run 1, t_ms kept)},
     corpus/MANIFEST.json (batches, counts, dropped scripts and why) and COVERAGE.md.

Options: --work DIR keeps the generated scripts and raw run outputs there; a batch whose
run file is already complete is not run again (resume after an interruption).
--coverage-only rewrites COVERAGE.md from the corpus on disk.
"""

import argparse
import collections
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "corpus")
COVERAGE = os.path.join(HERE, "COVERAGE.md")

# (seed, count, gen.py flags). Half the scripts are --redelivery-heavy; some use --plain-broker.
BATCHES = [
    (11, 65, []),
    (12, 65, []),
    (13, 50, ["--plain-broker"]),
    (21, 65, ["--redelivery-heavy"]),
    (22, 65, ["--redelivery-heavy"]),
    (23, 50, ["--redelivery-heavy", "--plain-broker"]),
]
TIMING = ("t_ms", "gap_ms")
BATCH_TIMEOUT_S = 1200


# ====================================================================== hand-made corner scripts
def _send(body, dest="Q", **kw):
    return dict({"op": "send", "dest": dest, "body": body}, **kw)


def _connect(conn, rp=None, **kw):
    o = {"op": "connect", "conn": conn}
    if rp is not None:
        o["redeliveryPolicy"] = rp
    o.update(kw)
    return o


def _session(s, conn, mode):
    return {"op": "session", "session": s, "conn": conn, "mode": mode}


def _consumer(c, s, dest="Q", **kw):
    return dict({"op": "consumer", "consumer": c, "session": s, "dest": dest}, **kw)


def _recv(c, t, **kw):
    return dict({"op": "receive", "consumer": c, "timeout_ms": t}, **kw)


def _op(name, **kw):
    return dict({"op": name}, **kw)


def _end(dlq="ActiveMQ.DLQ", queues=("Q",)):
    return [_op("stats", dest=q) for q in queues] + [_op("dlq", dest=dlq)]


def _backoff(name, rp, delays, session_mode="TRANSACTED"):
    """One message, rolled back (or recovered) until it is dead-lettered; delays = expected schedule."""
    what = "rollback" if session_mode == "TRANSACTED" else "recover"
    ops = [_send("m1"), _connect("c1", rp), _session("s1", "c1", session_mode), _consumer("k1", "s1"), _recv("k1", 300)]
    for d in delays:
        ops += [_op(what, session="s1"), _recv("k1", 2 * d + 300)]
    ops += [_op(what, session="s1"), _recv("k1", 300)]
    return {"name": name, "broker": {}, "ops": ops + _end()}


def hand_scripts():
    S = []
    add = S.append
    # ---- exponential / linear back-off schedules (t_ms carries the timing)
    add(
        _backoff(
            "hand_backoff_exp_nocap",
            {
                "maximumRedeliveries": 4,
                "initialRedeliveryDelay": 50,
                "redeliveryDelay": 50,
                "useExponentialBackOff": True,
                "backOffMultiplier": 2.0,
            },
            [50, 100, 200, 400],
        )
    )
    add(
        _backoff(
            "hand_backoff_exp_cap",
            {
                "maximumRedeliveries": 5,
                "initialRedeliveryDelay": 50,
                "redeliveryDelay": 50,
                "useExponentialBackOff": True,
                "backOffMultiplier": 3.0,
                "maximumRedeliveryDelay": 200,
            },
            [50, 150, 200, 200, 200],
        )
    )
    add(
        _backoff(
            "hand_backoff_exp_initial0",
            {
                "maximumRedeliveries": 3,
                "initialRedeliveryDelay": 0,
                "redeliveryDelay": 100,
                "useExponentialBackOff": True,
                "backOffMultiplier": 2.0,
            },
            [0, 100, 200],
        )
    )
    add(
        _backoff(
            "hand_backoff_linear_initial_differs",
            {"maximumRedeliveries": 3, "initialRedeliveryDelay": 200, "redeliveryDelay": 50},
            [200, 50, 50],
        )
    )
    # CLIENT recover() with exponential back-off, two messages, dead-lettered together
    rp = {
        "maximumRedeliveries": 2,
        "initialRedeliveryDelay": 100,
        "redeliveryDelay": 100,
        "useExponentialBackOff": True,
        "backOffMultiplier": 2.0,
    }
    add(
        {
            "name": "hand_backoff_exp_recover_client",
            "broker": {},
            "ops": [
                _send("m1"),
                _send("m2"),
                _connect("c1", rp),
                _session("s1", "c1", "CLIENT"),
                _consumer("k1", "s1"),
                _recv("k1", 300),
                _recv("k1", 300),
                _op("recover", session="s1"),
                _recv("k1", 500),
                _recv("k1", 300),
                _op("recover", session="s1"),
                _recv("k1", 700),
                _recv("k1", 300),
                _op("recover", session="s1"),
                _recv("k1", 300),
                *_end(),
            ],
        }
    )
    # ---- individual DLQ strategy
    rp0 = {"maximumRedeliveries": 0, "initialRedeliveryDelay": 0, "redeliveryDelay": 0}
    add(
        {
            "name": "hand_dlq_individual_default_prefix",
            "broker": {"deadLetterStrategy": "individual"},
            "ops": [
                _send("m1"),
                _send("m2", dest="Q2"),
                _send("m3", persistent=False),
                _connect("c1", rp0),
                _session("s1", "c1", "TRANSACTED"),
                _consumer("k1", "s1"),
                _consumer("k2", "s1", dest="Q2"),
                _recv("k1", 300),
                _recv("k1", 300),
                _recv("k2", 300),
                _op("rollback", session="s1"),
                _recv("k1", 300),
                _recv("k2", 300),
                _op("stats", dest="Q"),
                _op("stats", dest="Q2"),
                _op("stats", dest="ActiveMQ.DLQ"),
                _op("dlq", dest="ActiveMQ.DLQ.Queue.Q"),
                _op("dlq", dest="ActiveMQ.DLQ.Queue.Q2"),
            ],
        }
    )
    rp1 = {"maximumRedeliveries": 1, "initialRedeliveryDelay": 0, "redeliveryDelay": 0}
    add(
        {
            "name": "hand_dlq_individual_prefix_nonpersistent",
            "broker": {"deadLetterStrategy": "individual", "dlqPrefix": "DLQ.", "processNonPersistent": True},
            "ops": [
                _send("m1", persistent=False),
                _send("m2", priority=7, props={"k": "v", "n": 5}),
                _send("m3", persistent=False, priority=2),
                _connect("c1", rp1),
                _session("s1", "c1", "CLIENT"),
                _consumer("k1", "s1"),
                _recv("k1", 300),
                _recv("k1", 300),
                _recv("k1", 300),
                _op("recover", session="s1"),
                _recv("k1", 300),
                _recv("k1", 300),
                _recv("k1", 300),
                _op("recover", session="s1"),
                _recv("k1", 300),
                *_end("DLQ.Q"),
            ],
        }
    )
    # ---- prefetch 0 and 1
    rpz = {"maximumRedeliveries": 3, "initialRedeliveryDelay": 0, "redeliveryDelay": 0}
    add(
        {
            "name": "hand_prefetch0_pull_client",
            "broker": {},
            "ops": [
                _send("m1"),
                _send("m2"),
                _send("m3"),
                _connect("c1", rpz, prefetch=0),
                _session("s1", "c1", "CLIENT"),
                _consumer("k1", "s1"),
                _op("stats", dest="Q"),
                _recv("k1", 500),
                _op("stats", dest="Q"),
                _recv("k1", 500),
                _op("stats", dest="Q"),
                _op("recover", session="s1"),
                _recv("k1", 500),
                _recv("k1", 500),
                _op("ack", message="m2"),
                _op("stats", dest="Q"),
                _op("close_consumer", consumer="k1"),
                *_end(),
            ],
        }
    )
    add(
        {
            "name": "hand_prefetch0_two_pullers",
            "broker": {},
            "ops": [
                _connect("ca", prefetch=0),
                _session("sa", "ca", "AUTO"),
                _consumer("A", "sa"),
                _connect("cb"),
                _session("sb", "cb", "AUTO"),
                _consumer("B", "sb", prefetch=0),
                _send("m1"),
                _send("m2"),
                _send("m3"),
                _send("m4"),
                _op("stats", dest="Q"),
                _recv("A", 500),
                _recv("B", 500),
                _recv("A", 500),
                _recv("B", 500),
                _recv("A", 300),
                *_end(),
            ],
        }
    )
    add(
        {
            "name": "hand_prefetch1_client_close",
            "broker": {},
            "ops": [
                _send("m1"),
                _send("m2"),
                _send("m3"),
                _send("m4"),
                _send("m5"),
                _connect("c1"),
                _session("s1", "c1", "CLIENT"),
                _consumer("k1", "s1", prefetch=1),
                _recv("k1", 300),
                _recv("k1", 300),
                _recv("k1", 300),
                _op("stats", dest="Q"),
                _op("close_consumer", consumer="k1"),
                _op("stats", dest="Q"),
                _session("s2", "c1", "AUTO"),
                _consumer("k2", "s2"),
            ]
            + [_recv("k2", 300) for _ in range(6)]
            + _end(),
        }
    )
    # ---- close in every state: consumer / session / connection x delivered-unacked / prefetched / in a tx
    add(
        {
            "name": "hand_close_consumer_delivered_unacked",
            "broker": {},
            "ops": [
                _send("m1"),
                _send("m2"),
                _send("m3"),
                _connect("c1"),
                _session("s1", "c1", "CLIENT"),
                _consumer("k1", "s1"),
                _recv("k1", 300),
                _recv("k1", 300),
                _op("stats", dest="Q"),
                _op("close_consumer", consumer="k1"),
                _op("ack", message="m1"),
                _op("stats", dest="Q"),
                _consumer("k2", "s1"),
                _recv("k2", 300),
                _recv("k2", 300),
                _recv("k2", 300),
                _recv("k2", 300),
                _op("ack", message="m3"),
                *_end(),
            ],
        }
    )
    add(
        {
            "name": "hand_close_consumer_individual_last_acked",
            "broker": {},
            "ops": [
                _send("m1"),
                _send("m2"),
                _send("m3"),
                _send("m4"),
                _connect("c1"),
                _session("s1", "c1", "INDIVIDUAL"),
                _consumer("k1", "s1"),
                _recv("k1", 300),
                _recv("k1", 300),
                _recv("k1", 300),
                _op("ack", message="m3"),
                _op("close_consumer", consumer="k1"),
                _op("stats", dest="Q"),
                _consumer("k2", "s1"),
                _recv("k2", 300),
                _recv("k2", 300),
                _recv("k2", 300),
                _recv("k2", 300),
                _op("ack", message="m1"),
                _op("ack", message="m2"),
                _op("ack", message="m4"),
                *_end(),
            ],
        }
    )
    add(
        {
            "name": "hand_close_consumer_prefetched_only",
            "broker": {},
            "ops": [
                _send("m1"),
                _send("m2"),
                _send("m3"),
                _connect("c1"),
                _session("s1", "c1", "AUTO"),
                _consumer("k1", "s1"),
                _op("sleep", ms=100),
                _op("stats", dest="Q"),
                _op("close_consumer", consumer="k1"),
                _op("stats", dest="Q"),
                _consumer("k2", "s1"),
                _recv("k2", 300),
                _recv("k2", 300),
                _recv("k2", 300),
                _recv("k2", 300),
                *_end(),
            ],
        }
    )
    rpt = {"maximumRedeliveries": 3, "initialRedeliveryDelay": 100, "redeliveryDelay": 100}
    for end in ("commit", "rollback"):
        add(
            {
                "name": f"hand_close_consumer_in_tx_{end}",
                "broker": {},
                "ops": [
                    _send("m1"),
                    _send("m2"),
                    _connect("c1", rpt),
                    _session("s1", "c1", "TRANSACTED"),
                    _consumer("k1", "s1"),
                    _recv("k1", 300),
                    _op("close_consumer", consumer="k1"),
                    _op("stats", dest="Q"),
                    _op(end, session="s1"),
                    _op("stats", dest="Q"),
                    _session("s2", "c1", "CLIENT"),
                    _consumer("k2", "s2"),
                    _recv("k2", 400),
                    _recv("k2", 400),
                    _recv("k2", 300),
                    _op("ack", message="m2"),
                    *_end(),
                ],
            }
        )
    add(
        {
            "name": "hand_close_session_client_unacked",
            "broker": {},
            "ops": [
                _send("m1"),
                _send("m2"),
                _send("m3"),
                _connect("c1"),
                _session("s1", "c1", "CLIENT"),
                _consumer("k1", "s1"),
                _recv("k1", 300),
                _recv("k1", 300),
                _op("close_session", session="s1"),
                _op("stats", dest="Q"),
                _session("s2", "c1", "CLIENT"),
                _consumer("k2", "s2"),
                _recv("k2", 300),
                _recv("k2", 300),
                _recv("k2", 300),
                _recv("k2", 300),
                _op("ack", message="m2"),
                *_end(),
            ],
        }
    )
    add(
        {
            "name": "hand_close_session_in_tx",
            "broker": {},
            "ops": [
                _send("m1"),
                _send("m2"),
                _connect("c1", rpt),
                _session("s1", "c1", "TRANSACTED"),
                _consumer("k1", "s1"),
                _recv("k1", 300),
                _send("m3", session="s1"),
                _op("close_session", session="s1"),
                _op("stats", dest="Q"),
                _session("s2", "c1", "TRANSACTED"),
                _consumer("k2", "s2"),
                _recv("k2", 300),
                _recv("k2", 300),
                _recv("k2", 300),
                _op("commit", session="s2"),
                *_end(),
            ],
        }
    )
    add(
        {
            "name": "hand_close_connection_client_unacked",
            "broker": {},
            "ops": [
                _send("m1"),
                _send("m2"),
                _send("m3"),
                _connect("c1"),
                _session("s1", "c1", "CLIENT"),
                _consumer("k1", "s1"),
                _recv("k1", 300),
                _recv("k1", 300),
                _op("close_connection", conn="c1"),
                _op("stats", dest="Q"),
                _connect("c2"),
                _session("s2", "c2", "CLIENT"),
                _consumer("k2", "s2"),
                _recv("k2", 300),
                _recv("k2", 300),
                _recv("k2", 300),
                _recv("k2", 300),
                _op("ack", message="m3"),
                *_end(),
            ],
        }
    )
    add(
        {
            "name": "hand_close_connection_prefetched_only",
            "broker": {},
            "ops": [
                _send("m1"),
                _send("m2"),
                _send("m3"),
                _connect("c1"),
                _session("s1", "c1", "DUPS_OK"),
                _consumer("k1", "s1"),
                _op("sleep", ms=100),
                _op("stats", dest="Q"),
                _op("close_connection", conn="c1"),
                _op("stats", dest="Q"),
                _connect("c2"),
                _session("s2", "c2", "AUTO"),
                _consumer("k2", "s2"),
                _recv("k2", 300),
                _recv("k2", 300),
                _recv("k2", 300),
                _recv("k2", 300),
                *_end(),
            ],
        }
    )
    add(
        {
            "name": "hand_close_connection_in_tx",
            "broker": {},
            "ops": [
                _send("m1"),
                _send("m2"),
                _connect("c1", rpt),
                _session("s1", "c1", "TRANSACTED"),
                _consumer("k1", "s1"),
                _recv("k1", 300),
                _op("rollback", session="s1"),
                _recv("k1", 400),
                _send("m3", session="s1"),
                _op("close_connection", conn="c1"),
                _op("stats", dest="Q"),
                _connect("c2"),
                _session("s2", "c2", "TRANSACTED"),
                _consumer("k2", "s2"),
                _recv("k2", 300),
                _recv("k2", 300),
                _recv("k2", 300),
                _op("commit", session="s2"),
                *_end(),
            ],
        }
    )
    # ---- mixed persistence (queued np/p order, DLQ drops np unless processNonPersistent)
    for name, broker in (
        ("hand_mixed_persistence_dlq", {}),
        ("hand_mixed_persistence_dlq_process_np", {"processNonPersistent": True}),
    ):
        add(
            {
                "name": name,
                "broker": broker,
                "ops": [
                    _send("np1", persistent=False),
                    _send("p1"),
                    _send("np2", persistent=False),
                    _send("p2"),
                    _connect("c1", rp0),
                    _session("s1", "c1", "TRANSACTED"),
                    _consumer("k1", "s1", prefetch=10),
                    _recv("k1", 300, record=["persistent"]),
                    _recv("k1", 300, record=["persistent"]),
                    _recv("k1", 300, record=["persistent"]),
                    _recv("k1", 300, record=["persistent"]),
                    _op("rollback", session="s1"),
                    _recv("k1", 300),
                    *_end(),
                ],
            }
        )
    # ---- prioritizedMessages
    pri = [("a0", 0), ("b9", 9), ("c4", 4), ("d7", 7), ("e1", 1), ("f9", 9)]
    # (default prefetch on purpose: a TRANSACTED prefetch=1 consumer stalls after a rollback, and how many
    #  messages it still gets before the stall differs from run to run on the real broker)
    add(
        {
            "name": "hand_prioritized_messages_tx",
            "broker": {"prioritizedMessages": True},
            "ops": [_send(b, priority=p) if p != 4 else _send(b) for b, p in pri]
            + [
                _connect("c1", {"maximumRedeliveries": 3, "initialRedeliveryDelay": 0, "redeliveryDelay": 0}),
                _session("s1", "c1", "TRANSACTED"),
                _consumer("k1", "s1"),
                _recv("k1", 300, record=["priority"]),
                _recv("k1", 300, record=["priority"]),
                _op("rollback", session="s1"),
            ]
            + [_recv("k1", 300, record=["priority"]) for _ in range(7)]
            + [_op("commit", session="s1")]
            + _end(),
        }
    )
    # ---- maximumRedeliveries 0 (tx rollback, CLIENT recover, throwing AUTO listener) and -1
    add(
        {
            "name": "hand_max_redeliveries_zero_modes",
            "broker": {},
            "ops": [
                _send("m1"),
                _send("m2", dest="Q2"),
                _send("m3", dest="Q3"),
                _connect("c1", rp0),
                _session("s1", "c1", "TRANSACTED"),
                _consumer("k1", "s1"),
                _recv("k1", 300),
                _op("rollback", session="s1"),
                _recv("k1", 300),
                _session("s2", "c1", "CLIENT"),
                _consumer("k2", "s2", dest="Q2"),
                _recv("k2", 300),
                _op("recover", session="s2"),
                _recv("k2", 300),
                _session("s3", "c1", "AUTO"),
                _consumer("k3", "s3", dest="Q3"),
                _op("listener", consumer="k3", behaviour="throw"),
                _op("sleep", ms=400),
                _op("close_consumer", consumer="k3"),
                *_end(queues=("Q", "Q2", "Q3")),
            ],
        }
    )
    rpu = {"maximumRedeliveries": -1, "initialRedeliveryDelay": 0, "redeliveryDelay": 0}
    ops = [
        _send("m1"),
        _send("m2", dest="Q2"),
        _connect("c1", rpu),
        _session("s1", "c1", "TRANSACTED"),
        _consumer("k1", "s1"),
        _recv("k1", 300),
    ]
    for _ in range(12):
        ops += [_op("rollback", session="s1"), _recv("k1", 300)]
    ops += [
        _op("commit", session="s1"),
        _session("s2", "c1", "CLIENT"),
        _consumer("k2", "s2", dest="Q2"),
        _recv("k2", 300),
    ]
    for _ in range(8):
        ops += [_op("recover", session="s2"), _recv("k2", 300)]
    ops += [_op("ack", message="m2")]
    add({"name": "hand_max_redeliveries_unlimited", "broker": {}, "ops": ops + _end(queues=("Q", "Q2"))})
    # ---- nonBlockingRedelivery: other buffered messages overtake the rolled-back one
    add(
        {
            "name": "hand_nonblocking_redelivery",
            "broker": {},
            "ops": [
                _send("m1"),
                _send("m2"),
                _send("m3"),
                _connect(
                    "c1",
                    {"maximumRedeliveries": 2, "initialRedeliveryDelay": 100, "redeliveryDelay": 100},
                    nonBlockingRedelivery=True,
                ),
                _session("s1", "c1", "TRANSACTED"),
                _consumer("k1", "s1"),
                _recv("k1", 300),
                _op("rollback", session="s1"),
                _recv("k1", 400),
                _recv("k1", 400),
                _recv("k1", 400),
                _recv("k1", 300),
                _op("commit", session="s1"),
                *_end(),
            ],
        }
    )
    names = [s["name"] for s in S]
    assert len(names) == len(set(names)), "duplicate hand script names"
    return S


#: scripts whose two recorded runs agreed but whose outcome depends on the real broker's thread timing, shown by
#: re-running variants on the oracle; left out of the corpus (the reason is kept in MANIFEST.json)
KNOWN_RACES = {
    "gen_11_009": "race in the real broker: a TRANSACTED consumer with prefetch 1 rolled back right after its first "
    "receive stalls (its next dispatch is lost until commit) or not, depending on whether the "
    "asynchronous DELIVERED ack reaches the broker before the rollback; the same script with 50 ms "
    "between receive and rollback, or with one message persistent instead of not, gets m2 as "
    "minibroker does, and a re-run of a minimal variant gave both outcomes",
}


def _read(path):
    with open(path) as f:
        return f.read().strip()


# ====================================================================== running
def script_text(s):
    return '{{"name": {}, "broker": {},\n "ops": [\n  {}\n ]}}\n'.format(
        json.dumps(s["name"]), json.dumps(s.get("broker", {})), ",\n  ".join(json.dumps(o) for o in s["ops"])
    )


def load_runs(path):
    out = {}
    if not os.path.exists(path):
        return out
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                try:
                    o = json.loads(line)
                except ValueError:
                    continue
                out[o["script"]] = o
    return out


def dir_digest(script_dir):
    h = hashlib.sha256()
    for f in sorted(os.listdir(script_dir)):
        with open(os.path.join(script_dir, f), "rb") as fh:
            h.update(f.encode() + b"\0" + fh.read() + b"\0")
    return h.hexdigest()


def run_batch(oracle, script_dir, out_path, expected):
    """One JVM for the whole directory; stdout (one JSON line per script) -> out_path.
    Skipped if out_path is complete and was made from the same scripts (resume)."""
    digest = dir_digest(script_dir)
    have = load_runs(out_path)
    sha = out_path + ".sha256"
    if expected <= set(have) and os.path.exists(sha) and _read(sha) == digest:
        print(f"  reuse {out_path}", flush=True)
        return have
    tmp = out_path + ".part"
    with open(tmp, "w") as out, open(out_path + ".stderr", "w") as err:
        rc = subprocess.call(
            [os.path.join(oracle, "run-script.sh"), script_dir], stdout=out, stderr=err, timeout=BATCH_TIMEOUT_S
        )
    os.replace(tmp, out_path)
    with open(sha, "w") as f:
        f.write(digest + "\n")
    have = load_runs(out_path)
    print(f"  ran {script_dir}: {len(have)} scripts, rc={rc}", flush=True)
    return have


def strip(ev):
    return {k: v for k, v in ev.items() if k not in TIMING}


def first_difference(a, b):
    if a.get("error") or b.get("error"):
        return f"oracle error: {a.get('error') or b.get('error')}"
    ea = [strip(e) for e in a["events"]]
    eb = [strip(e) for e in b["events"]]
    if ea == eb:
        return None
    i = next(i for i in range(max(len(ea), len(eb))) if i >= len(ea) or i >= len(eb) or ea[i] != eb[i])
    return (
        f"event {i} differs: run1 {json.dumps(ea[i]) if i < len(ea) else '<none>'}"
        f" / run2 {json.dumps(eb[i]) if i < len(eb) else '<none>'}"
    )


def record(oracle, work):
    gen = os.path.join(oracle, "gen.py")
    for f in ("gen.py", "run-script.sh"):
        if not os.path.exists(os.path.join(oracle, f)):
            sys.exit(f"{oracle} has no {f}: pass the oracle folder with --oracle or ORACLE_DIR")
    os.makedirs(work, exist_ok=True)
    batches = []  # (key, dir, {name: (script, origin)}, batch-info)
    for seed, count, flags in BATCHES:
        d = os.path.join(work, f"seed{seed}")
        if os.path.isdir(d):
            shutil.rmtree(d)
        subprocess.check_call([sys.executable, gen, "--seed", str(seed), "--count", str(count), "--out", d, *flags])
        scripts = {}
        for i in range(count):
            name = f"gen_{seed}_{i:03d}"
            with open(os.path.join(d, name + ".json")) as f:
                scripts[name] = (json.load(f), " ".join(["gen.py --seed", str(seed), *flags]) + f" #{i}")
        batches.append((f"seed{seed}", d, scripts, {"seed": seed, "count": count, "flags": flags}))
    d = os.path.join(work, "hand")
    if os.path.isdir(d):
        shutil.rmtree(d)
    os.makedirs(d)
    scripts = {}
    for s in hand_scripts():
        with open(os.path.join(d, s["name"] + ".json"), "w") as f:
            f.write(script_text(s))
        scripts[s["name"]] = (s, "hand")
    batches.append(("hand", d, scripts, {"hand": True, "count": len(scripts)}))

    runs = {1: {}, 2: {}}
    for r in (1, 2):
        print(f"run {r}", flush=True)
        for key, d, scripts, _ in batches:
            runs[r].update(run_batch(oracle, d, os.path.join(work, f"run{r}_{key}.jsonl"), set(scripts)))

    os.makedirs(CORPUS, exist_ok=True)
    for f in os.listdir(CORPUS):
        if f.endswith(".json") and (f.startswith("gen_") or f.startswith("hand_") or f == "MANIFEST.json"):
            os.remove(os.path.join(CORPUS, f))
    manifest = {
        "oracle": "ScriptOracle on embedded ActiveMQ Classic 5.17.2 (Debian activemq/libactivemq-java)",
        "determinism": "each script run twice; kept iff events equal ignoring t_ms/gap_ms "
        "(compare_runs.py runs) and no oracle error; events stored are run 1's",
        "batches": [],
        "kept": 0,
        "dropped": [],
    }
    for _key, _d, scripts, info in batches:
        kept = 0
        for name in sorted(scripts):
            script, origin = scripts[name]
            a, b = runs[1].get(name), runs[2].get(name)
            why = "missing from a run" if a is None or b is None else first_difference(a, b)
            if not why and name in KNOWN_RACES:
                why = KNOWN_RACES[name]
            if why:
                manifest["dropped"].append({"name": name, "origin": origin, "reason": why})
                continue
            kept += 1
            with open(os.path.join(CORPUS, name + ".json"), "w") as f:
                json.dump({"name": name, "origin": origin, "script": script, "events": a["events"]}, f, indent=1)
                f.write("\n")
        info = dict(info, kept=kept, dropped=len(scripts) - kept)
        manifest["batches"].append(info)
        manifest["kept"] += kept
    with open(os.path.join(CORPUS, "MANIFEST.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    print(f"kept {manifest['kept']}, dropped {len(manifest['dropped'])}", flush=True)
    return manifest


# ====================================================================== coverage report
def coverage():
    with open(os.path.join(CORPUS, "MANIFEST.json")) as f:
        manifest = json.load(f)
    files = sorted(f for f in os.listdir(CORPUS) if f.endswith(".json") and f != "MANIFEST.json")
    c = collections.Counter()
    exc = collections.Counter()
    origins = collections.Counter()
    for fn in files:
        with open(os.path.join(CORPUS, fn)) as f:
            doc = json.load(f)
        origins[
            "hand"
            if doc["origin"] == "hand"
            else ("gen --redelivery-heavy" if "--redelivery-heavy" in doc["origin"] else "gen")
            + (" --plain-broker" if "--plain-broker" in doc["origin"] else "")
        ] += 1
        evs = doc["events"]
        for i, e in enumerate(evs):
            k = e.get("event")
            c["events"] += 1
            if k == "received":
                c["received"] += 1
                if e.get("redelivered"):
                    c["redeliveries"] += 1
            elif k == "null_receive":
                c["null_receive"] += 1
            elif k == "dlq":
                c["dlq"] += 1
            elif k == "queue_stats":
                c["queue_stats"] += 1
            elif k == "listener_set":
                c["listener_set " + e.get("behaviour", "")] += 1
            elif k == "sent":
                c["sent"] += 1
            elif k == "action":
                a = e.get("action")
                c["action " + a] += 1
                nxt = evs[i + 1] if i + 1 < len(evs) else {}
                op = {"acknowledge": "ack"}.get(a, a)
                if nxt.get("event") == "exception" and nxt.get("op") == op:
                    c["action " + a + " raised"] += 1
            elif k == "exception":
                exc[f"{e.get('type')} ({e.get('op')})"] += 1
    L = [
        "# Differential corpus coverage",
        "",
        "Generated by `record.py` from `corpus/` (the events of run 1 of the kept scripts).",
        "",
        f"Scripts kept: **{len(files)}** ({', '.join(f'{v} {k}' for k, v in sorted(origins.items()))}); "
        f"dropped as non-deterministic: **{len(manifest['dropped'])}**.",
        "",
        "Batches (gen.py seed, count, flags -> kept):",
        "",
    ]
    for b in manifest["batches"]:
        if b.get("hand"):
            L.append(f"- hand-made corner scripts: {b['count']} -> {b['kept']} kept")
        else:
            L.append(
                f"- `gen.py --seed {b['seed']} --count {b['count']} {' '.join(b['flags'])}`".rstrip("` ")
                + f"` -> {b['kept']} kept"
            )
    L += ["", "| what (over all recorded events) | count |", "|---|---|"]
    rows = [
        ("events", "events"),
        ("sent", "sent"),
        ("received", "received"),
        ("redeliveries (received, redelivered=true)", "redeliveries"),
        ("null receives", "null_receive"),
        ("DLQ entries (`dlq` events)", "dlq"),
        ("queue_stats", "queue_stats"),
    ]
    for a in ("rollback", "recover", "commit", "acknowledge", "close_consumer", "close_session", "close_connection"):
        rows.append((f"{a} (action events; of which raised: {c['action ' + a + ' raised']})", "action " + a))
    rows += [("listeners set (ok)", "listener_set ok"), ("listeners set (throw)", "listener_set throw")]
    for label, key in rows:
        L.append(f"| {label} | {c[key]} |")
    L += ["", "Exceptions by type (op):", ""]
    for k, v in sorted(exc.items(), key=lambda kv: (-kv[1], kv[0])):
        L.append(f"- {k}: {v}")
    if not exc:
        L.append("- none")
    L += ["", "Dropped (the two runs differed, compare_runs.py `runs` semantics):", ""]
    for d in manifest["dropped"]:
        L.append(f"- `{d['name']}` ({d['origin']}): {d['reason']}")
    if not manifest["dropped"]:
        L.append("- none")
    with open(COVERAGE, "w") as f:
        f.write("\n".join(L) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--oracle",
        default=os.environ.get("ORACLE_DIR", os.path.join(HERE, "oracle")),
        help="the oracle folder (gen.py, run-script.sh); default: $ORACLE_DIR, else this checkout's oracle/",
    )
    ap.add_argument("--work", help="keep generated scripts and raw runs here (resumable); default: a temp dir")
    ap.add_argument("--coverage-only", action="store_true", help="only rewrite COVERAGE.md from corpus/")
    a = ap.parse_args()
    if a.coverage_only:
        coverage()
        return
    if not a.oracle:
        sys.exit("give the oracle folder: --oracle DIR (or set ORACLE_DIR)")
    oracle = os.path.abspath(a.oracle)
    if a.work:
        record(oracle, os.path.abspath(a.work))
    else:
        with tempfile.TemporaryDirectory(prefix="minibroker-record-") as w:
            record(oracle, w)
    coverage()


if __name__ == "__main__":
    main()
