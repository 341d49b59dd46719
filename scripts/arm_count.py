#!/usr/bin/python3
"""Executed aarch64 instructions, counted exactly under qemu-user, for scripts/bench-arm.sh.

  arm_count.py trace OUT -- CMD ARGS...
      Runs CMD (a static aarch64 binary) under `qemu-aarch64 -singlestep -d exec,nochain`, which
      logs one line per executed instruction, and writes how often each instruction ran: one line
      per program counter, "count pc symbol". The log streams through a FIFO into awk, never to
      disk (a decode step of needle3 is tens of millions of lines).
  arm_count.py kernel NAME WEIGHTS BINARY SHORT LONG RUNS
      One matvec of a kernel from two traces of its driver, SHORT with one matvec and LONG with
      1 + RUNS (their difference divided by RUNS: the setup cancels out): a markdown row of
      instructions per weight, the hottest loop's length and weights per iteration, and
      llvm-mca-19's cycles per 64 weights of that loop for each CPU in CPUS.
  arm_count.py step NAME SHORT LONG RUNS
      One decode step from two traces of test/bench/bench_model.c: instructions per kernel
      family (the functions' symbols, grouped by FAMILIES), as markdown rows.
"""
import os
import re
import subprocess
import sys
import tempfile

# LLVM 19 models the Cortex-A76 with the Cortex-A57's scheduling; the Neoverse N1 is the same core
# (its server twin) with a model of its own: the better estimate of a Raspberry Pi 5.
CPUS = ["cortex-a76", "cortex-a55", "neoverse-v1", "apple-m1", "neoverse-n1"]

# A function's family by its (mangled) symbol; the first match wins.
FAMILIES = [
    ("CQ exact on CqLut16 (NEON: CQ2, CQ4 of whole tiles)", r"cq2_exact|cq4_exact|cq_matmul_lut16_exact_neon"),
    ("CQ4 exact on CqX8 (NEON)", r"cqx8|cq4x8|Cq4RowsNeon|cq_matmul_x8_exact_neon"),
    ("CQ fast: the lookups (NEON)", r"CqLutNeon|cqlut_tokens|cqlut_matmul|cq_matmul_lut16_fast"),
    ("CQ fast: the tables", r"cqlut_group"),
    ("CQ (Halide)", r"needle_hk_cq_mat|cq_matvec_halide|cq_matmul_halide"),
    ("CQ (portable, file layout)", r"cq_matmul|cq_matvec|cq_group"),
    ("attention", r"attention"),
    ("Kronecker MLP", r"kron"),
    ("Hadamard rotations", r"hadamard|fwht"),
    ("lanes and gates", r"lane|mhc|sinkhorn|residual_gate|sigmoid_gate|block_update"),
    ("norms, RoPE, taps, engram", r"norm|rope|taps|engram|scale"),
    ("heads", r"head_"),
    ("math library", r"^(exp|expf|log|logf|sqrt|sqrtf|__ieee754|__exp|__log|tanh|__math)"),
    ("memory (memcpy, memset)", r"^(memcpy|memmove|memset|__memcpy|__memset|__memmove)"),
]


def trace(out, command):
    """Counts each executed instruction of `command` by program counter into `out`."""
    with tempfile.TemporaryDirectory() as tmp:
        fifo = os.path.join(tmp, "log")
        os.mkfifo(fifo)
        with open(out, "w") as sink:
            # Fields: "Trace 0: HOST [FLAGS/PC/...] SYMBOL"; a PC outside every symbol has none.
            counter = subprocess.Popen(
                ["mawk", '{ c[$4 " " $5]++ } END { for (k in c) print c[k], k }', fifo], stdout=sink)
            run = subprocess.run(["qemu-aarch64", "-singlestep", "-d", "exec,nochain", "-D", fifo] + command,
                                 stdout=subprocess.DEVNULL)
            counter.wait()
    if run.returncode != 0 or counter.returncode != 0:
        sys.exit(f"arm_count: {' '.join(command)} failed under qemu (exit {run.returncode})")


def load(path):
    """pc -> (count, symbol) of a trace."""
    counts = {}
    for line in open(path):
        parts = line.split()
        pc = int(parts[1].strip("[]").split("/")[1], 16)
        old = counts.get(pc, (0, ""))
        counts[pc] = (old[0] + int(parts[0]), parts[2] if len(parts) > 2 else old[1])
    return counts


def per_run(short, long, runs):
    """pc -> (executions per run, symbol): the long trace's counts less the short one's, / runs."""
    a, b = load(short), load(long)
    out = {}
    for pc, (count, symbol) in b.items():
        extra = count - a.get(pc, (0, ""))[0]
        if extra:
            out[pc] = (extra / runs, symbol)
    return out


def hot_loop(counts):
    """The instructions that ran most often (the innermost loop's body): their first and last PC,
    and how many times the body ran."""
    most = max(count for count, _ in counts.values())
    pcs = sorted(pc for pc, (count, _) in counts.items() if count == most)
    return pcs[0], pcs[-1], most


def loop_assembly(binary, first, last):
    """The instructions from `first` to `last` as assembly llvm-mca reads: the branch targets (which
    objdump prints as addresses) turned into one label at the top, as a loop body repeated."""
    dump = subprocess.run(["aarch64-linux-gnu-objdump", "-d", "--no-show-raw-insn", f"--start-address={first}",
                           f"--stop-address={last + 4}", binary], capture_output=True, text=True, check=True).stdout
    lines = ["0:"]
    for line in dump.splitlines():
        m = re.match(r"\s*[0-9a-f]+:\s+(\S.*)$", line)
        if m:
            text = re.sub(r"\s*//.*$", "", m.group(1))
            text = re.sub(r"\b[0-9a-f]+ <[^>]*>", "0b", text)
            lines.append("  " + text)
    return "\n".join(lines) + "\n"


def mca_cycles(assembly, cpu):
    """llvm-mca-19's cycles per iteration of a loop body for `cpu`."""
    result = subprocess.run(["llvm-mca-19", "-mtriple=aarch64", f"-mcpu={cpu}", "-iterations=200"],
                            input=assembly, capture_output=True, text=True)
    if result.returncode != 0:
        return None
    total = re.search(r"Total Cycles:\s+(\d+)", result.stdout)
    return int(total.group(1)) / 200 if total else None


def kernel_row(name, weights, binary, short, long, runs):
    counts = per_run(short, long, runs)
    total = sum(count for count, _ in counts.values())
    first, last, iterations = hot_loop(counts)
    body = (last - first) // 4 + 1
    per_iteration = weights / iterations
    assembly = loop_assembly(binary, first, last)
    cycles = [mca_cycles(assembly, cpu) for cpu in CPUS]
    cells = [f"{c * 64 / per_iteration:.1f}" if c else "n/a" for c in cycles]
    print(f"| {name} | {total / weights:.3f} | {body} instructions, {per_iteration:g} weights | " + " | ".join(cells) +
          " |")


def step_rows(name, short, long, runs):
    counts = per_run(short, long, runs)
    total = sum(count for count, _ in counts.values())
    families = {}
    for count, symbol in counts.values():
        family = next((f for f, pattern in FAMILIES if re.search(pattern, symbol)), "the rest: " + (symbol or "?"))
        families[family] = families.get(family, 0) + count
    ranked = sorted(families.items(), key=lambda item: -item[1])
    rest = sum(count for family, count in ranked if family.startswith("the rest"))
    print(f"| {name} | all | {total / 1e6:.2f} M | 100% |")
    for family, count in ranked:
        if not family.startswith("the rest"):
            print(f"| {name} | {family} | {count / 1e6:.2f} M | {100 * count / total:.1f}% |")
    print(f"| {name} | the rest (the step's own code, the session) | {rest / 1e6:.2f} M | {100 * rest / total:.1f}% |")


def main(argv):
    if len(argv) > 3 and argv[0] == "trace" and argv[2] == "--":
        trace(argv[1], argv[3:])
    elif len(argv) == 7 and argv[0] == "kernel":
        kernel_row(argv[1], float(argv[2]), argv[3], argv[4], argv[5], int(argv[6]))
    elif len(argv) == 5 and argv[0] == "step":
        step_rows(argv[1], argv[2], argv[3], int(argv[4]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
