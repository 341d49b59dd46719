#!/usr/bin/python3
"""A trained model doing its job, through NAME_call in the compiled object (docs/training.md).

  check_accuracy.py TOOLS WORK MODEL TOOLS_JSON TASKS_JSON E2E [--depths 2,4,6] [--count N]
                    [--seed S] [--threshold T] [--min-accuracy A] [--activations int8] [--lora ADAPTER]
                    [--drafts 2,3] [--baseline DIR] [--show-wrong N] [--emit cpp | --emit obj --target T] [--cc CC] [--cxx CXX] [--ld LD]
                    [--run PREFIX]

Draws N held-out requests (tools/needle-train/tasks.py: templates and values training never saw),
compiles MODEL at each depth with needlec --tools TOOLS_JSON --prompt MODEL/prompt.txt, runs
test/e2e/call.c on them (which also checks that a reused session answers as a fresh one), and
prints per depth: the exact-match accuracy of the calls (name and every argument: the call's
text equals the expected one, keys in the schema's order), and the precision and recall of "no
call" at the threshold (exits 1 when one is under --min-gate), the share of calls of the right
tool (--min-tool), and the call's second confidence (NAME_call_probability, the smallest
probability of its tokens under their masks) of the exact calls and of the wrong ones; and writes each depth's answers to WORK/dDEPTH.answers (so two targets'
answers can be compared). Exits 1 when a depth's accuracy is under --min-accuracy, or with
--baseline DIR (an earlier run's WORK, on the same requests) not above the accuracy of DIR's
answers at that depth: how an adapter shows it helps every depth.

With --drafts, also the acceptance rate of each draft depth against the deepest of --depths on
the held-out requests that want a call (test/e2e/draft.c: the draft's greedy token equal to the
deep model's, under the tools' mask, teacher-forced on the deep model's greedy call).
"""
import argparse
import json
import os
import shlex
import statistics
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
p.add_argument("--min-tool", type=float, default=0.0, help="the least share of calls of the right tool")
p.add_argument("--min-gate", type=float, default=0.0, help="the least precision and recall of \"no call\"")
p.add_argument("--activations", help="needlec --activations (int8: the fast mode)")
p.add_argument("--lora", help="needlec --lora: an adapter merged before slicing")
p.add_argument("--baseline", help="an earlier WORK whose answers each depth must beat")
p.add_argument("--show-wrong", type=int, default=0, help="print this many wrong answers of each depth")
p.add_argument("--drafts", default="", help="draft depths whose acceptance to measure against the deepest")
add_build_options(p)
args = p.parse_args()

with open(args.tools_json) as f:
    tool_list = json.load(f)
with open(args.tasks_json) as f:
    requests = tasks.generate(tool_list, json.load(f), args.count, args.seed, held_out=True)
os.makedirs(args.work, exist_ok=True)
stdin = "".join(r["query"].encode("utf-8").hex() + "\n" for r in requests)
prompt = os.path.join(args.model, "prompt.txt")
extra = [*(["--activations", args.activations] if args.activations else []), *(["--lora", args.lora] if args.lora else [])]


def score(answers):
    """(exact calls, calls, right declines, declines, requests that fit no tool, wrong answers,
    calls of the right tool, the probabilities of the exact calls and of the wrong ones)."""
    right = calls = declined_right = declined = no_call = right_tool = 0
    wrong = []
    probabilities = ([], [])
    for request, answer in zip(requests, answers):
        fields = answer.split()
        made = bytes.fromhex(fields[3]).decode("utf-8") if fields[0] == "0" and len(fields) > 3 else None
        if made is not None:
            probabilities[made != request["call"]].append(float(fields[2]))
        declined += fields[0] == "1"
        if request["call"] is None:
            no_call += 1
            declined_right += fields[0] == "1"
        else:
            calls += 1
            right += made == request["call"]
            right_tool += made is not None and json.loads(made)["name"] == json.loads(request["call"])["name"]
        if made != request["call"]:
            wrong.append(f"  {request['query']!r}: {made or 'no call'}, not {request['call'] or 'no call'}")
    return right, calls, declined_right, declined, no_call, wrong, right_tool, probabilities


def median(values):
    return f"{statistics.median(values):.3f}" if values else "none"


failed = False
for depth in args.depths.split(","):
    caller, = build_programs(args, args.model, os.path.join(args.work, f"d{depth}"), [os.path.join(args.e2e, "call.c")],
                             ["--layers", depth, "--tools", args.tools_json, "--prompt", prompt, *extra])
    output = run(*caller, str(args.threshold), input=stdin)
    with open(os.path.join(args.work, f"d{depth}.answers"), "w") as f:
        f.write(output)
    answers = output.splitlines()
    right, calls, declined_right, declined, no_call, wrong, right_tool, (exact, missed) = score(answers)
    accuracy = right / max(calls, 1)
    precision = declined_right / max(declined, 1)
    recall = declined_right / max(no_call, 1)
    tool_share = right_tool / max(calls, 1)
    ok = (len(answers) == len(requests) and accuracy >= args.min_accuracy and tool_share >= args.min_tool
          and min(precision, recall) >= args.min_gate)
    beats = ""
    if args.baseline:
        with open(os.path.join(args.baseline, f"d{depth}.answers")) as f:
            before = score(f.read().splitlines())[0] / max(calls, 1)
        ok &= accuracy > before
        beats = f", the baseline's {100 * before:.1f}%"
    failed |= not ok
    print(f"{'MATCH' if ok else 'MISMATCH'} depth {depth}: {right} of {calls} calls exact ({100 * accuracy:.1f}%"
          f"{beats}, the right tool {100 * tool_share:.1f}%); no call: precision {100 * precision:.1f}%, recall {100 * recall:.1f}% "
          f"({no_call} requests fit no tool); call probability: median {median(exact)} of the exact calls, "
          f"{median(missed)} of the {len(missed)} wrong ones")
    print("\n".join(wrong[:args.show_wrong]), end="\n" if wrong[:args.show_wrong] else "")


def draft_acceptance(draft, target):
    """(agreed, steps) of test/e2e/draft.c for the draft depth against the target depth, on the
    requests that want a call."""
    base = os.path.join(args.work, f"draft{draft}-{target}")
    cc = shlex.split(args.cc)
    objects = []
    for name, depth, flags in (("draft", draft, []), ("target", target, ["--tools", args.tools_json, "--prompt", prompt])):
        run(os.path.join(args.tools, "needlec"), args.model, "--layers", depth, *flags, *extra, "--name", name,
            "--target", args.target, "-o", f"{base}-{name}")
        objects.append(f"{base}-{name}.o")
    run(*cc, "-DDRAFT=draft", f'-DDRAFT_HEADER="{base}-draft.h"', "-DTARGET=target",
        f'-DTARGET_HEADER="{base}-target.h"', os.path.join(args.e2e, "draft.c"), *objects, "-lm", "-o", base)
    wanted = "".join(r["query"].encode("utf-8").hex() + "\n" for r in requests if r["call"])
    counts = [list(map(int, line.split())) for line in run(*shlex.split(args.run), base, prompt, input=wanted).splitlines()]
    return sum(a for a, _ in counts), sum(n for _, n in counts)


deepest = args.depths.split(",")[-1]
for draft in filter(None, args.drafts.split(",")):
    agreed, steps = draft_acceptance(draft, deepest)
    print(f"draft depth {draft} against {deepest}: {agreed} of {steps} tokens accepted ({100 * agreed / max(steps, 1):.1f}%)")
sys.exit(1 if failed else 0)
