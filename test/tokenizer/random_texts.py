#!/usr/bin/python3
"""Random texts for the tokenizer property test: COUNT JSON-string lines drawn, with SEED, from the
classes that stress a pre-tokenizer and BPE: letters of several scripts in runs, digits, every
kind of white space, punctuation, apostrophes before contraction letters in any case, emoji with
skin tones and ZWJ sequences, combining marks, what Unicode normalization reorders, composes or
replaces (marks of several classes in any order, Hangul jamo, singletons, compatibility
characters), and the special tokens of the tested tokenizers.

    random_texts.py SEED COUNT > texts.jsonl     (SEED "run": a new seed, written to stderr)

Only code points assigned by Unicode 15.0 (Debian 12's ICU) whose categories have not changed
since, so the oracle's newer Unicode tables and needlec's agree on every one.
"""
import json
import os
import random
import sys

SCRIPTS = [(0x41, 0x5A), (0x61, 0x7A), (0xC0, 0xFF), (0x391, 0x3C9), (0x410, 0x44F), (0x5D0, 0x5EA),
           (0x627, 0x64A), (0x905, 0x939), (0x3041, 0x3096), (0x30A1, 0x30FA), (0x4E00, 0x4FFF),
           (0xAC00, 0xAD00), (0xE01, 0xE30)]
SPACES = [" ", " ", " ", "  ", "\t", "\n", "\r\n", "\r", "\u00a0", "\u3000", "\u2028", "\u0085", "\u2009", "\f",
          "\v"]
PUNCTUATION = list("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~") + ["\u2014", "\u00bf", "\u3001", "\u3002", "\u2026", "\u00ab"]
CONTRACTIONS = ["s", "t", "re", "ve", "m", "ll", "d"]
EMOJI = ["\U0001F600", "\U0001F44D\U0001F3FD", "\U0001F468\u200d\U0001F469\u200d\U0001F467", "\u2764\ufe0f",
         "\U0001F1EB\U0001F1F7", "\U0001F3F3\ufe0f\u200d\U0001F308"]
COMBINING = ["\u0301", "\u0308", "\u0303", "\u0327", "\u093f", "\u0651"]
NORMALIZED = ["\u0301", "\u0327", "\u0323", "\u0334", "\u05b0", "\u093c", "\u0345", "\u1100", "\u1161", "\u11a8",
              "\uac00", "\u2126", "\u212b", "\u0958", "\u0344", "\u0b47", "\u0b3e", "\ufb01", "\u00b2", "\uff21",
              "\u2460", "\ufdfa", "e", "A"]
SPECIAL = ["<|begin_of_text|>", "<|eot_id|>", "<|im_start|>", "<|im_end|>", "<|endoftext|>", "<s>", "</s>",
           "<unk>"]


def piece(r):
    kind = r.randrange(10)
    if kind == 0:
        lo, hi = r.choice(SCRIPTS)
        return "".join(chr(r.randint(lo, hi)) for _ in range(r.randint(1, 8)))
    if kind == 1:
        return "".join(r.choice("0123456789") for _ in range(r.randint(1, 7)))
    if kind == 2:
        return "".join(r.choice(SPACES) for _ in range(r.randint(1, 4)))
    if kind == 3:
        return "".join(r.choice(PUNCTUATION) for _ in range(r.randint(1, 3)))
    if kind == 4:
        c = r.choice(CONTRACTIONS)
        return "'" + "".join(ch.upper() if r.random() < 0.5 else ch for ch in c)
    if kind == 5:
        return r.choice(EMOJI)
    if kind == 6:
        return chr(r.randint(0x61, 0x7A)) + r.choice(COMBINING)
    if kind == 7:
        return r.choice(SPECIAL) if r.random() < 0.3 else " "
    if kind == 9:
        return "".join(r.choice(NORMALIZED) for _ in range(r.randint(1, 5)))
    return r.choice(["the", "The", "THE", " and", "ing", "tion", "Hello", "world"])


def main():
    seed = int.from_bytes(os.urandom(4), "little") if sys.argv[1] == "run" else int(sys.argv[1])
    count = int(sys.argv[2])
    if sys.argv[1] == "run":
        print(f"random_texts.py seed {seed}", file=sys.stderr)
    r = random.Random(seed)
    for _ in range(count):
        text = "".join(piece(r) for _ in range(r.randint(0, 12)))
        print(json.dumps(text, ensure_ascii=False))


if __name__ == "__main__":
    main()
