#!/usr/bin/python3
"""A trained model doing its job, through NAME_call in the compiled object (docs/training.md).

  check_accuracy.py TOOLS WORK MODEL TOOLS_JSON TASKS_JSON E2E [--depths 2,4,6] [--count N]
                    [--seed S] [--threshold T] [--min-accuracy A] [--emit cpp | --emit obj --target T]
                    [--cc CC] [--cxx CXX] [--ld LD] [--run PREFIX]

Draws N held-out requests (tools/needle-train/tasks.py: templates and values training never saw),
compiles MODEL at each depth with needlec --tools TOOLS_JSON --prompt MODEL/prompt.txt, runs
test/e2e/call.c on them (which also checks that a reused session answers as a fresh one), and
prints per depth: the exact-match accuracy of the calls (name and every argument: the call's
text equals the expected one, keys in the schema's order), and the precision and recall of "no
call" at the threshold. Exits 1 when a depth's accuracy is under --min-accuracy.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "e2e"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tools", "needle-train"))
from commands import add_build_options, build_programs, run  # noqa: E402
import tasks  # noqa: E402

p = argparse.ArgumentParser()
for name in ("tools", "work", "model", "tools_json", "tasks_json", "e2e"):
    p.add_argument(name)
p.add_argument("--depths", default="2,4,6")
p.add_argument("--count", type=int, default=200)
p.add_argument("--seed", type=int, default=1)
p.add_argument("--threshold", type=float, default=0.5)
p.add_argument("--min-accuracy", type=float, default=0.0)
add_build_options(p)
args = p.parse_args()

with open(args.tools_json) as f:
    tool_list = json.load(f)
with open(args.tasks_json) as f:
    requests = tasks.generate(tool_list, json.load(f), args.count, args.seed, held_out=True)
os.makedirs(args.work, exist_ok=True)
stdin = "".join(r["query"].encode("utf-8").hex() + "\n" for r in requests)
failed = False
for depth in args.depths.split(","):
    caller, = build_programs(args, args.model, os.path.join(args.work, f"d{depth}"), [os.path.join(args.e2e, "call.c")],
                             ["--layers", depth, "--tools", args.tools_json, "--prompt",
                              os.path.join(args.model, "prompt.txt")])
    answers = run(*caller, str(args.threshold), input=stdin).splitlines()
    right = calls = declined_right = declined = no_call = 0
    for request, answer in zip(requests, answers):
        fields = answer.split()
        made = bytes.fromhex(fields[2]).decode("utf-8") if fields[0] == "0" and len(fields) > 2 else None
        declined += fields[0] == "1"
        if request["call"] is None:
            no_call += 1
            declined_right += fields[0] == "1"
        else:
            calls += 1
            right += made == request["call"]
    accuracy = right / max(calls, 1)
    precision = declined_right / max(declined, 1)
    recall = declined_right / max(no_call, 1)
    ok = len(answers) == len(requests) and accuracy >= args.min_accuracy
    failed |= not ok
    print(f"{'MATCH' if ok else 'MISMATCH'} depth {depth}: {right} of {calls} calls exact ({100 * accuracy:.1f}%); "
          f"no call: precision {100 * precision:.1f}%, recall {100 * recall:.1f}% ({no_call} requests fit no tool)")
sys.exit(1 if failed else 0)
