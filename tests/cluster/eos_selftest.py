#!/usr/bin/python3
"""eos_selftest.py — eos.check (EW3) can fail: each planted fault (an input lost, one output
twice, an output that was never an input, an output partition read_committed did not reach the
end of, an input duplicated by its producer at one epoch) is reported, and a clean history is
not; an input librdkafka sent again at a new epoch (librdkafka#4953) is a note, and then needs
one output per copy. No cluster; run first by tests/cli_cluster_eos.sh."""
import sys

import eos

IN = {0: [(0, "i-0"), (1, "i-3")], 1: [(0, "i-1")], 2: [(0, "i-2")]}
OUT = {0: [(0, "o-i-0"), (2, "o-i-3")], 1: [(0, "o-i-1")], 2: [(0, "o-i-2")]}
failed = 0


def expect(name, ins, outs, short, want, producer_of=None):
    global failed
    bad, _, _ = eos.check(ins, outs, short, producer_of)
    hit = [b for b in bad if b.startswith(want)] if want else bad
    ok = bool(hit) if want else not bad
    print(("ok - " if ok else "FAIL - ") + name + ("" if ok else f": {bad}"))
    failed += not ok


expect("a clean history passes", IN, OUT, [], None)
expect("an input without output is lost", IN, {**OUT, 2: []}, [], "lost")
expect("an output twice", IN, {**OUT, 1: [(0, "o-i-1"), (3, "o-i-1")]}, [], "twice")
expect("an output never an input", IN, {**OUT, 2: [(0, "o-i-2"), (1, "o-x")]}, [], "never an input")
expect("read_committed short of the end", IN, OUT, [1], "read_committed did not reach")
DUP = {**IN, 2: [(0, "i-2"), (1, "i-2")]}
expect("an input duplicated", DUP, OUT, [], "input i-2 twice")
expect("an input duplicated at one epoch", DUP, OUT, [], "input i-2 twice",
       lambda q, off: (7, 0))
BUMPED = lambda q, off: (7, off)  # noqa: E731 - the copy at offset 1 has epoch 1
expect("an input sent again at a new epoch, with an output per copy", DUP,
       {**OUT, 2: [(0, "o-i-2"), (1, "o-i-2")]}, [], None, BUMPED)
expect("an input sent again at a new epoch, with one output", DUP, OUT, [], "lost", BUMPED)
expect("an input sent again at a new epoch, with three outputs", DUP,
       {**OUT, 2: [(0, "o-i-2"), (1, "o-i-2"), (2, "o-i-2")]}, [], "twice", BUMPED)
sys.exit(1 if failed else 0)
