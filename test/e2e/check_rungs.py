#!/usr/bin/python3
"""Every rung in one object against the one-rung objects (docs/c-interface.md).

  check_rungs.py TOOLS WORK E2E --synth "ARG ..." --layers A B [--alone D ...] [--tokens N] [--needlec-flags F]
                 [--emit cpp|obj --target T --cc "CC" --run "PREFIX"]

Synthesizes the model (needle-synth ARGS), compiles it once with --layers A..B and once for each
depth D from A to B (or each of --alone) with --layers D, builds rungs.c with each and runs them. The object of every
rung must print, for each depth, the digest line the one-rung object of that depth prints (its
outputs after every feed, bit for bit), and pass its own checks; each one-rung object must say
its depth is D..D. Prints the rungs' checks, one line per depth ("depth D: equal" or
"DIFFERENT"), and exits non-zero on any difference.
"""
import argparse
import os
import shlex
import sys

from commands import add_build_options, build_programs, run

p = argparse.ArgumentParser()
p.add_argument("tools")
p.add_argument("work")
p.add_argument("e2e")
p.add_argument("--synth", required=True)
p.add_argument("--layers", type=int, nargs=2, required=True)
p.add_argument("--alone", type=int, nargs="+", help="the depths compiled alone to compare with (default: all)")
p.add_argument("--tokens", default="40", help="tokens every depth is fed")
p.add_argument("--seed", default="1")
p.add_argument("--needlec-flags", default="", help="more needlec flags (--max-rollback, --batch)")
add_build_options(p)
args = p.parse_args()

os.makedirs(args.work, exist_ok=True)
model = os.path.join(args.work, "m")
run(os.path.join(args.tools, "needle-synth"), *shlex.split(args.synth), "-o", model)
main_c = os.path.join(args.e2e, "rungs.c")
flags = shlex.split(args.needlec_flags)


def rungs_output(layers, name):
    """What rungs.c prints, built with the model compiled at --layers `layers`."""
    (command,) = build_programs(args, model, os.path.join(args.work, name), [main_c], ["--layers", layers, *flags])
    return run(*command, args.tokens, args.seed)


def digests(output):
    return [line for line in output.splitlines() if line.startswith("depth ") and " digest " in line]


first, last = args.layers
together = rungs_output(f"{first}..{last}", "rungs")
print("\n".join(line for line in together.splitlines() if not line.startswith("depth ")))
alone = {}
failed = False
for depth in args.alone or range(first, last + 1):
    output = rungs_output(str(depth), f"d{depth}")
    if f"depths {depth}..{depth}" not in output.splitlines():
        print(f"FAIL --layers {depth} alone: NAME_info's depths are not {depth}..{depth}")
        failed = True
    alone.update({line.split()[1]: line for line in digests(output)})
for line in digests(together):
    depth = line.split()[1]
    if args.alone and int(depth) not in args.alone:
        continue
    same = alone.get(depth) == line
    failed |= not same
    print(f"depth {depth}: {'equal' if same else 'DIFFERENT'}")
sys.exit(1 if failed else 0)
