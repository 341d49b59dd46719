#!/usr/bin/python3
"""Two runs of check_accuracy.py on the same requests, compared answer by answer (docs/training.md):

  compare_answers.py A.answers B.answers --max-differ FRACTION [--tool-only]

Each line of an answers file is test/e2e/call.c's: "STATUS CONFIDENCE PROBABILITY HEX". Two answers
agree when their status and call are the same (the confidences may differ in their last digits), or with
--tool-only their status and the called tool's name (for a model too little trained for its
arguments to be more than near ties). Prints
how many agree, and MATCH when the share that differ is at most FRACTION, else MISMATCH (exit 1)."""
import argparse
import json
import sys

p = argparse.ArgumentParser()
p.add_argument("a")
p.add_argument("b")
p.add_argument("--max-differ", type=float, required=True)
p.add_argument("--tool-only", action="store_true")
args = p.parse_args()


def answers(path):
    with open(path) as f:
        return [(fields[0], tool(fields[3]) if args.tool_only else fields[3]) if len(fields) > 3 else (fields[0], "")
                for fields in (line.split() for line in f)]


def tool(call_hex):
    return json.loads(bytes.fromhex(call_hex).decode("utf-8"))["name"]


a, b = answers(args.a), answers(args.b)
if len(a) != len(b) or not a:
    sys.exit(f"MISMATCH: {len(a)} answers against {len(b)}")
same = sum(x == y for x, y in zip(a, b))
ok = (len(a) - same) / len(a) <= args.max_differ
print(f"{'MATCH' if ok else 'MISMATCH'}: {same} of {len(a)} answers the same")
sys.exit(0 if ok else 1)
