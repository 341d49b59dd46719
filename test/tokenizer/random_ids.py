#!/usr/bin/python3
"""Random id sequences for the decoder's property test: COUNT JSON arrays of 1 to 8 ids drawn,
with SEED, from every id of the tokenizer (vocabulary and added tokens), so byte tokens that
split a UTF-8 sequence and added tokens between byte-level runs both occur.

    random_ids.py SEED COUNT TOKENIZER_JSON > ids.jsonl     (SEED "run": a new seed, on stderr)
"""
import json
import os
import random
import sys


def main():
    seed = int.from_bytes(os.urandom(4), "little") if sys.argv[1] == "run" else int(sys.argv[1])
    if sys.argv[1] == "run":
        print(f"random_ids.py seed {seed}", file=sys.stderr)
    count = int(sys.argv[2])
    with open(sys.argv[3], encoding="utf-8") as f:
        t = json.load(f)
    ids = sorted(set(t["model"]["vocab"].values()) | {a["id"] for a in t.get("added_tokens") or []})
    r = random.Random(seed)
    for _ in range(count):
        print(json.dumps([r.choice(ids) for _ in range(r.randint(1, 8))]))


if __name__ == "__main__":
    main()
