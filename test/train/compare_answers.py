#!/usr/bin/python3
"""Two runs of check_accuracy.py on the same requests, compared answer by answer (docs/training.md):

  compare_answers.py A.answers B.answers --max-differ FRACTION

Each line of an answers file is test/e2e/call.c's: "STATUS CONFIDENCE HEX". Two answers agree
when their status and call are the same (the confidence may differ in its last digits). Prints
how many agree, and MATCH when the share that differ is at most FRACTION, else MISMATCH (exit 1)."""
import argparse
import sys

p = argparse.ArgumentParser()
p.add_argument("a")
p.add_argument("b")
p.add_argument("--max-differ", type=float, required=True)
args = p.parse_args()


def answers(path):
    with open(path) as f:
        return [(fields[0], fields[2] if len(fields) > 2 else "") for fields in (line.split() for line in f)]


a, b = answers(args.a), answers(args.b)
if len(a) != len(b) or not a:
    sys.exit(f"MISMATCH: {len(a)} answers against {len(b)}")
same = sum(x == y for x, y in zip(a, b))
ok = (len(a) - same) / len(a) <= args.max_differ
print(f"{'MATCH' if ok else 'MISMATCH'}: {same} of {len(a)} answers the same")
sys.exit(0 if ok else 1)
