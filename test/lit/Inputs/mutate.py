#!/usr/bin/python3
"""Feeds a tool deterministic random corruptions of a valid input and fails if any run crashes,
prints more than one error line, or exits with anything but 0 or 1. Reports how many mutants
ran and how many were rejected with one error line.

    mutate.py TOOL_DIR KIND FILE COUNT SEED      KIND: needle | safetensors | mlir
For safetensors, FILE is a model directory (config.json kept intact)."""
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile

tools, kind, source, count, seed = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
rng = random.Random(seed)
work = tempfile.mkdtemp()


def needle(data):
    d = bytearray(data)
    header = int.from_bytes(d[:4], "little") + 4
    for _ in range(rng.randint(1, 4)):
        d[rng.randrange(header)] = rng.randrange(256)
    return d[:rng.randrange(len(d))] if rng.random() < 0.2 else d


def safetensors(data):
    d = bytearray(data)
    header = 8 + int.from_bytes(d[:8], "little")
    for _ in range(rng.randint(1, 3)):
        d[rng.randrange(header)] = rng.randrange(32, 127)
    return d[:rng.randrange(len(d))] if rng.random() < 0.2 else d


def mlir(text):
    numbers = [m.span() for m in re.finditer(r"(?<![%#\w.])\d+(?![\w.])", text)]
    a, b = numbers[rng.randrange(len(numbers))]
    return text[:a] + str(rng.choice([0, 1, 2, 3, 7, 64, 127, 128, 255, 256, 4096])) + text[b:]


if kind == "safetensors":
    target = os.path.join(work, "model")
    os.makedirs(target)
    shutil.copy(os.path.join(source, "config.json"), target)
    original = open(os.path.join(source, "model.safetensors"), "rb").read()
elif kind == "mlir":
    # The IR names its weights relative to itself: run the mutants beside the original.
    target = os.path.join(os.path.dirname(os.path.abspath(source)), "mutant.mlir")
    original = open(source).read()
else:
    target = os.path.join(work, "model.needle")
    original = open(source, "rb").read()

failures = 0
runs = 0
rejections = 0
for i in range(count):
    if kind == "safetensors":
        open(os.path.join(target, "model.safetensors"), "wb").write(safetensors(original))
    elif kind == "mlir":
        open(target, "w").write(mlir(original))
    else:
        open(target, "wb").write(needle(original))
    run = subprocess.run([os.path.join(tools, "needle-run"), target, "--tokens", "1,2,3,200"],
                         capture_output=True, text=True, timeout=300)
    lines = run.stderr.strip().splitlines()
    ran = run.returncode == 0
    rejected = run.returncode == 1 and len(lines) == 1 and lines[0].startswith("needle-run: error:")
    runs += ran
    rejections += rejected
    if not (ran or rejected):
        failures += 1
        print(f"mutant {i}: exit {run.returncode}: {run.stderr[:400]}")
shutil.rmtree(work)
print(f"{count - failures} clean ({runs} ran, {rejections} rejected), {failures} crashed")
sys.exit(1 if failures else 0)
