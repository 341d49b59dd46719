#!/usr/bin/python3
"""Compares the ids (and the texts decoded from them) two tokenizers gave for the same texts,
line by line.

    compare.py TEXTS.jsonl ORACLE.jsonl OURS.jsonl [NOTE]

ORACLE.jsonl and OURS.jsonl hold one {"ids": [...], "decoded": "..."} object per text
(oracle.mjs and tokenizer-encode print them). Prints "MATCH N texts", or "MISMATCH" and up to 5 differing texts
with both id lists, and the file NOTE (say, the random seed that made the texts); exits 1 then.
"""
import json
import sys


def lines(path):
    with open(path, encoding="utf-8") as f:
        return [line for line in f.read().split("\n") if line]


def main():
    texts = [json.loads(line) for line in lines(sys.argv[1])]
    oracle = [json.loads(line) for line in lines(sys.argv[2])]
    ours = [json.loads(line) for line in lines(sys.argv[3])]
    if not (len(texts) == len(oracle) == len(ours)):
        print(f"MISMATCH line counts: {len(texts)} texts, {len(oracle)} oracle, {len(ours)} ours")
        return 1
    bad = [(t, o, u) for t, o, u in zip(texts, oracle, ours) if o != u]
    if not bad:
        print(f"MATCH {len(texts)} texts")
        return 0
    print(f"MISMATCH {len(bad)} of {len(texts)} texts")
    if len(sys.argv) > 4:
        print(open(sys.argv[4], encoding="utf-8").read().strip())
    for text, want, got in bad[:5]:
        print(f"  text {json.dumps(text, ensure_ascii=False)}\n    oracle {json.dumps(want, ensure_ascii=False)}\n"
              f"    ours   {json.dumps(got, ensure_ascii=False)}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
