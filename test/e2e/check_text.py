#!/usr/bin/python3
"""End to end through a backend for a model's compiled tokenizer.

  check_text.py TOOLS WORK E2E TOKENIZER_DIR TEXTS ORACLE
                [--emit cpp | --emit obj --target T] [--cc CC] [--cxx CXX] [--ld LD] [--run PREFIX]
                [--tokenizer-tables fast|small] [--tokenizer-config]

Synthesizes a tiny model whose vocab_size is the tokenizer's, gives it TOKENIZER_DIR's
tokenizer.json, compiles it (needlec --emit obj for --target, or --emit cpp built by --cxx),
builds test/e2e/text.c with --cc, links the two (--ld), and runs it (under --run: qemu-user, Node's WASI) on:

- TEXTS (texts.jsonl): their ids and decoded text must be ORACLE's (oracle.mjs's output for
  them, compared by test/tokenizer/compare.py);
- every id: NAME_token_bytes must give the bytes tokenizer.json spells, derived here on its own
  (a byte-level vocabulary through GPT-2's byte alphabet; a SentencePiece-style one with "▁" as a
  space and "<0xNN>" as that byte; an added token's content), and refuse the id past the last;
- every added token's content: NAME_token_id must give its id;
- NAME_info's bos_id and eos_id: the first and last ids the TemplateProcessing post-processor
  puts around a text, or -1; with --tokenizer-config, the model gets TOKENIZER_DIR's
  tokenizer_config.json too, and the tokens its bos_token and eos_token name win.

Prints one MATCH line for each, or MISMATCH with the first differences, and exits 1 on any.
"""
import argparse
import json
import os
import subprocess
import sys

from commands import add_build_options, build_with_tokenizer, run
from vocabulary import token_bytes

p = argparse.ArgumentParser()
p.add_argument("tools")
p.add_argument("work")
p.add_argument("e2e")
p.add_argument("tokenizer")
p.add_argument("texts")
p.add_argument("oracle")
p.add_argument("--tokenizer-config", action="store_true", help="give the model tokenizer_config.json too")
add_build_options(p)
args = p.parse_args()


def read_lines(path):
    with open(path, encoding="utf-8") as f:
        return [line for line in f.read().split("\n") if line]


def bos_eos(spec):
    """The first id the post-processor's single template puts before the text and the last after."""
    steps = [spec.get("post_processor") or {}]
    steps += steps[0].get("processors", [])
    for step in steps:
        if step.get("type") == "TemplateProcessing":
            items = step["single"]
            at = next(i for i, item in enumerate(items) if "Sequence" in item)
            ids = lambda part: [i for item in part if "SpecialToken" in item
                                for i in step["special_tokens"][item["SpecialToken"]["id"]]["ids"]]
            before, after = ids(items[:at]), ids(items[at + 1:])
            return (before[0] if before else -1), (after[-1] if after else -1)
    return -1, -1


def config_bos_eos(spec, config, fallback):
    """The ids of the tokens tokenizer_config.json's bos_token and eos_token name (a string or an
    object with the content), each else the post-processor's."""
    ids = {a["content"]: a["id"] for a in spec.get("added_tokens", [])}
    ids = {**spec["model"]["vocab"], **ids}
    named = []
    for field, other in zip(("bos_token", "eos_token"), fallback):
        token = config.get(field)
        token = token.get("content") if isinstance(token, dict) else token
        named.append(ids[token] if token is not None else other)
    return tuple(named)


spec = json.load(open(os.path.join(args.tokenizer, "tokenizer.json"), encoding="utf-8"))
expected_bytes = token_bytes(spec)
count = max(expected_bytes) + 1
os.makedirs(args.work, exist_ok=True)
base = os.path.join(args.work, "t")
config_file = os.path.join(args.tokenizer, "tokenizer_config.json") if args.tokenizer_config else None
[runner] = build_with_tokenizer(args, args.tokenizer, count, base, [os.path.join(args.e2e, "text.c")],
                                config_file=config_file)

texts = [json.loads(line) for line in read_lines(args.texts)]
added = [(a["content"], a["id"]) for a in spec.get("added_tokens", [])]
cases = [("e " + t.encode("utf-8").hex()) if isinstance(t, str) else "d " + " ".join(map(str, t)) for t in texts]
cases += [f"b {i}" for i in range(count + 1)]
cases += ["i " + content.encode("utf-8").hex() for content, _ in added]
cases += ["m"]
with open(base + ".cases", "w") as f:
    f.write("\n".join(cases) + "\n")
run(*runner, base + ".cases", base + ".results")
results = open(base + ".results", encoding="utf-8").read().split("\n")[:-1]
if len(results) != len(cases):
    sys.exit(f"MISMATCH {len(results)} results for {len(cases)} cases")

failed = False
with open(base + ".ours", "w", encoding="utf-8") as f:
    for result in results[:len(texts)]:
        ids, decoded = result.split(";")
        text = bytes.fromhex(decoded.strip()).decode("utf-8")  # the decoder writes only whole sequences
        f.write(json.dumps({"ids": [int(i) for i in ids.split()], "decoded": text}, ensure_ascii=False) + "\n")
compared = subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__), "..", "tokenizer", "compare.py"),
                           args.texts, args.oracle, base + ".ours"], capture_output=True, text=True)
print(compared.stdout, end="")
failed |= compared.returncode != 0

got_bytes = results[len(texts):len(texts) + count + 1]
bad = [i for i in range(count) if got_bytes[i] != expected_bytes.get(i, b"").hex()]
for i in bad[:5]:
    print(f"MISMATCH token_bytes {i}: file {expected_bytes.get(i, b'').hex()}, ours {got_bytes[i]}")
if got_bytes[count] != "error -2":
    bad.append(count)
    print(f"MISMATCH token_bytes {count}, past the last id: {got_bytes[count]}")
print(f"MATCH {count} tokens' bytes" if not bad else f"MISMATCH {len(bad)} tokens' bytes")
failed |= bool(bad)

got_ids = results[len(texts) + count + 1:-1]
wrong = [(c, i, g) for (c, i), g in zip(added, got_ids) if str(i) != g]
for content, want, got in wrong[:5]:
    print(f"MISMATCH token_id {content!r}: {want}, ours {got}")
print(f"MATCH {len(added)} added tokens' ids" if not wrong else f"MISMATCH {len(wrong)} added tokens' ids")
failed |= bool(wrong)

want_ids = bos_eos(spec)
if config_file:
    want_ids = config_bos_eos(spec, json.load(open(config_file, encoding="utf-8")), want_ids)
want = "{} {}".format(*want_ids)
print(f"MATCH bos eos {want}" if results[-1] == want else f"MISMATCH bos eos: {want}, ours {results[-1]}")
failed |= results[-1] != want
sys.exit(1 if failed else 0)
