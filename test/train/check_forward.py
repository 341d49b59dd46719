#!/usr/bin/python3
"""needle-train's model (tools/needle-train/needle_torch.py) against the reference interpreter.

  check_forward.py TOOLS WORK [--set KEY=VALUE ...] [--cq]

Synthesizes a tiny model with float weights (quantization scheme "none", so that needle-run
does not quantize them; with --cq the preset's scheme, which needle-run quantizes as needlec does
and the PyTorch model reads through its fake quantization, as quantization-aware training does),
runs a few token sequences (one longer than the sliding window, one with
the pad token inside, one of a single token) through needle-run and through the PyTorch model at
every depth, and checks the last position's logits (to 1e-5 of the largest), the confidence (to
1e-6) and the embedding (to 1e-5). Then one training step must change every parameter the forward
pass reads, so that no tensor is silently left out of training. Prints MATCH or MISMATCH lines
and exits 1 on any mismatch.
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tools", "needle-train"))
import needle_torch  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("tools")
p.add_argument("work")
p.add_argument("--set", action="append", default=[])
p.add_argument("--cq", action="store_true", help="keep the config's quantization: needle-run quantizes the weights "
                                                 "and the PyTorch model reads them through its fake CQ")
args = p.parse_args()

os.makedirs(args.work, exist_ok=True)
model_dir = os.path.join(args.work, "m")
synth = [os.path.join(args.tools, "needle-synth"), "--preset", "tiny", "--seed", "3", "--tokenizer", "none"]
made = subprocess.run(synth + [x for kv in args.set for x in ("--set", kv)] + ["-o", model_dir], capture_output=True,
                      text=True)
if made.returncode:
    sys.exit(f"FAILED: needle-synth: {made.stderr}")
config_path = os.path.join(model_dir, "config.json")
with open(config_path) as f:
    config = json.load(f)
if not args.cq:
    config["quantization"] = {"scheme": "none", "group_size": 128}
    with open(config_path, "w") as f:
        json.dump(config, f)

model = needle_torch.load(model_dir)
model.quantize_aware(args.cq)
vocab, layers = config["vocab_size"], config["num_layers"]
rng = np.random.RandomState(5)
sequences = [list(rng.randint(1, vocab, size=3 * max(config["sliding_window"], 8) + 1)),
             [7, 0, 9, 0, 11, 12], [vocab - 1]]
failed = False
for depth in range(2, layers + 1):
    worst = [0.0, 0.0, 0.0]
    for tokens in sequences:
        logits_file, embedding_file = os.path.join(args.work, "l.bin"), os.path.join(args.work, "e.bin")
        report = subprocess.run([os.path.join(args.tools, "needle-run"), model_dir, "--layers", str(depth),
                                 "--tokens", ",".join(map(str, tokens)), "--logits", logits_file,
                                 "--embedding", embedding_file], check=True, capture_output=True, text=True).stdout
        ref_logits = np.fromfile(logits_file, dtype="<f4")
        ref_embedding = np.fromfile(embedding_file, dtype="<f4")
        with torch.no_grad():
            logits, confidence, embedding = model(torch.tensor([tokens]), depth)
        errors = [np.abs(logits[0, -1].numpy() - ref_logits).max() / np.abs(ref_logits).max(),
                  abs(confidence.item() - json.loads(report)["confidence"]),
                  np.abs(embedding[0].numpy() - ref_embedding).max()]
        worst = [max(a, b) for a, b in zip(worst, errors)]
    ok = worst[0] <= 1e-5 and worst[1] <= 1e-6 and worst[2] <= 1e-5
    failed |= not ok
    print(f"{'MATCH' if ok else 'MISMATCH'} depth {depth}: logits {worst[0]:.2e} of the largest, "
          f"confidence {worst[1]:.2e}, embedding {worst[2]:.2e}")

# One step of plain gradient descent on every output: each parameter that the full depth reads
# must move (the heads' rows and blocks all take part at full depth).
tokens = torch.tensor([sequences[0]])
logits, confidence, embedding = model(tokens)
loss = torch.nn.functional.cross_entropy(logits[0, :-1], tokens[0, 1:]) + confidence.sum() + embedding.sum()
loss.backward()
frozen = [name for name, param in zip(model.names, model.params)
          if param.grad is None or not torch.any(param.grad != 0)]
failed |= bool(frozen)
print(f"MISMATCH parameters without a gradient: {frozen}" if frozen else
      f"MATCH every one of {len(model.names)} parameters has a gradient")
sys.exit(1 if failed else 0)
