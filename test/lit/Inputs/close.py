#!/usr/bin/python3
"""Fails unless two needle-run results agree: close.py A B [--tolerance T], where each of A and B
names A.json (needle-run's report), A.logits and A.emb (its --logits / --embedding files)."""
import argparse
import json
import sys

import numpy as np

p = argparse.ArgumentParser()
p.add_argument("a")
p.add_argument("b")
p.add_argument("--tolerance", type=float, default=1e-4)
args = p.parse_args()


def load(prefix):
    report = json.load(open(prefix + ".json"))
    return report, np.fromfile(prefix + ".logits", "<f4"), np.fromfile(prefix + ".emb", "<f4")


(ra, la, ea), (rb, lb, eb) = load(args.a), load(args.b)
errors = {
    "logits": float(np.abs(la - lb).max() / max(np.abs(lb).max(), 1e-30)),
    "embedding": float(np.abs(ea - eb).max() / max(np.abs(eb).max(), 1e-30)),
    "confidence": abs(ra["confidence"] - rb["confidence"]),
}
ok = ra["position"] == rb["position"] and all(e <= args.tolerance for e in errors.values())
print(("CLOSE " if ok else "DIFFERENT ") + " ".join(f"{k}={v:.2e}" for k, v in errors.items()))
sys.exit(0 if ok else 1)
