#!/usr/bin/python3
"""Runs needle-run (the C++ reference interpreter) and needle_oracle.py (the independent numpy
implementation) on the same model and tokens, and fails unless logits, embedding and confidence
agree to a relative tolerance.

    compare.py NEEDLE_RUN MODEL_DIR --tokens 1,2,3 [--layers D] [--incremental] [--tolerance 1e-4]

MODEL_DIR must hold float tensors with scheme "none" or pre-quantized CQ tensors: the oracle
never quantizes, needle-run quantizes float tensors the scheme marks CQ.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def relative(a, b):
    scale = max(float(np.abs(b).max()), 1e-30)
    return float(np.abs(np.asarray(a, dtype=np.float64) - b).max()) / scale


def main():
    p = argparse.ArgumentParser()
    p.add_argument("needle_run")
    p.add_argument("model")
    p.add_argument("--tokens", required=True)
    p.add_argument("--layers")
    p.add_argument("--incremental", action="store_true")
    p.add_argument("--tolerance", type=float, default=1e-4)
    a = p.parse_args()
    depth = ["--layers", a.layers] if a.layers else []
    with tempfile.TemporaryDirectory() as tmp:
        logits_path, embedding_path = os.path.join(tmp, "l.bin"), os.path.join(tmp, "e.bin")
        tokens = ["--tokens", a.tokens] if a.tokens else ["--no-tokens"]  # needle-run refuses --tokens ""
        run = subprocess.run([a.needle_run, a.model] + tokens + ["--logits", logits_path,
                              "--embedding", embedding_path] + depth +
                             (["--incremental"] if a.incremental else []),
                             capture_output=True, text=True, check=True)
        ours = json.loads(run.stdout)
        logits = np.fromfile(logits_path, dtype="<f4")
        embedding = np.fromfile(embedding_path, dtype="<f4")
    oracle = subprocess.run([sys.executable, os.path.join(HERE, "needle_oracle.py"), a.model, "--tokens", a.tokens]
                            + depth, capture_output=True, text=True, check=True)
    theirs = json.loads(oracle.stdout)
    errors = {
        "logits": relative(logits, np.array(theirs["logits"])),
        "embedding": relative(embedding, np.array(theirs["embedding"])),
        "confidence": abs(ours["confidence"] - theirs["confidence"]),
    }
    status = "MATCH" if all(e <= a.tolerance for e in errors.values()) and ours["position"] == theirs["position"] \
        else "MISMATCH"
    print(f"{status} position={ours['position']} " + " ".join(f"{k}={v:.2e}" for k, v in errors.items()))
    return 0 if status == "MATCH" else 1


if __name__ == "__main__":
    sys.exit(main())
