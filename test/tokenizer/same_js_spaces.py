#!/usr/bin/python3
"""Keeps the texts (JSON-string lines, stdin to stdout) in which JavaScript's \\s and Oniguruma's
agree: those without U+0085 (white space to Oniguruma only) and U+FEFF (to JavaScript only). For
the oracle's own GPT-2 regex, which it runs as a JS regex where it cannot be handed over as a
Split (test/tokenizer/oracle.mjs)."""
import json
import sys

for line in sys.stdin:
    if line.strip() and not set(json.loads(line)) & {"\u0085", "\ufeff"}:
        sys.stdout.write(line)
