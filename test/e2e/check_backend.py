#!/usr/bin/python3
"""End to end through a backend for one synthetic model at several depths.

  check_backend.py TOOLS WORK E2E --synth "ARG ..." --layers 2 3 ... [--tokens 1,2,3]
                   [--emit cpp | --emit obj --target T --cc "CC" --run "PREFIX"]

Synthesizes the model (needle-synth ARGS), and at each depth: runs the reference interpreter
(needle-run), compiles the model (needlec --emit cpp: C++ built by the system's C++ compiler with
-Wall -Wextra -Werror; --emit obj: an object for --target), links it into run_model.c with the
C compiler (--emit obj: the target's C toolchain, no C++ runtime), runs it (under --run, e.g.
qemu-user or Node's WASI), feeds the tokens one at a time and all at once, and compares logits,
confidence and embedding with the reference (1e-4, as close.py). Prints one line per depth and
mode and exits non-zero on any difference or failure.
"""
import argparse
import os
import shlex
import subprocess
import sys

import numpy as np

from commands import run

p = argparse.ArgumentParser()
p.add_argument("tools")
p.add_argument("work")
p.add_argument("e2e")
p.add_argument("--synth", required=True)
p.add_argument("--layers", type=int, nargs="+", required=True)
p.add_argument("--tokens", default="3,1,4,1,5,9,2,6,5,3,5,8,9,7,9,3,2,3,8,4")
p.add_argument("--tolerance", type=float, default=1e-4)
p.add_argument("--flags", default="", help="extra compiler and linker flags (the sanitizers)")
p.add_argument("--emit", choices=["cpp", "obj"], default="cpp")
p.add_argument("--target", default="host", help="with --emit obj: needlec's --target")
p.add_argument("--needlec-flags", default="", help="more needlec flags (--batch, --mcpu, --mattr)")
p.add_argument("--cc", default="cc -std=c11 -O1 -Wall -Wextra -Werror", help="the C compiler that builds and links")
p.add_argument("--run", default="", help="a command prefix that runs the program (qemu-aarch64 -L ...)")
args = p.parse_args()


def outputs(prefix):
    import json
    report = json.load(open(prefix + ".json"))
    return report, np.fromfile(prefix + ".logits", "<f4"), np.fromfile(prefix + ".emb", "<f4")


def relative(a, b):
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-30))


tool = lambda name: os.path.join(args.tools, name)
os.makedirs(args.work, exist_ok=True)
model = os.path.join(args.work, "m")
run(tool("needle-synth"), *shlex.split(args.synth), "-o", model)
failed = False
for depth in args.layers:
    base = os.path.join(args.work, f"d{depth}")
    with open(base + "-ref.json", "w") as report:
        subprocess.run([tool("needle-run"), model, "--layers", str(depth), "--tokens", args.tokens, "--logits",
                        base + "-ref.logits", "--embedding", base + "-ref.emb"], stdout=report, check=True)
    flags = shlex.split(args.flags)
    cc = shlex.split(args.cc)
    main = [*cc, *flags, "-DNEEDLE_NAME=needle_model", f'-DNEEDLE_HEADER="{os.path.basename(base)}.h"', "-I",
            args.work, "-c", os.path.join(args.e2e, "run_model.c"), "-o", base + "-main.o"]
    if args.emit == "cpp":
        run(tool("needlec"), model, "--layers", str(depth), "--emit", "cpp", *shlex.split(args.needlec_flags), "-o", base)
        run("c++", "-std=c++17", "-O1", "-Wall", "-Wextra", "-Werror", *flags, "-c", base + ".cpp", "-o", base + ".o")
        run(*main)
        run("c++", *flags, base + "-main.o", base + ".o", "-o", base + "-run")
    else:
        run(tool("needlec"), model, "--layers", str(depth), "--emit", "obj", "--target", args.target,
            *shlex.split(args.needlec_flags), "-o", base)
        run(*main)
        run(*cc, *flags, base + "-main.o", base + ".o", "-lm", "-o", base + "-run")
    ref, ref_logits, ref_emb = outputs(base + "-ref")
    for mode in ("one", "all"):
        run(*shlex.split(args.run), base + "-run", mode, args.tokens, f"{base}-{mode}")
        got, logits, emb = outputs(f"{base}-{mode}")
        errors = {"logits": relative(logits, ref_logits), "embedding": relative(emb, ref_emb),
                  "confidence": abs(got["confidence"] - ref["confidence"])}
        ok = got["position"] == ref["position"] and all(e <= args.tolerance for e in errors.values())
        failed |= not ok
        print(f"depth {depth} {mode}: " + ("CLOSE " if ok else "DIFFERENT ") +
              " ".join(f"{k}={v:.2e}" for k, v in errors.items()))
sys.exit(1 if failed else 0)
