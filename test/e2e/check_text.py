#!/usr/bin/python3
"""End to end through a backend for a model's compiled tokenizer.

  check_text.py TOOLS WORK E2E TOKENIZER_DIR TEXTS ORACLE
                [--emit cpp | --emit obj --target T] [--cc CC] [--cxx CXX] [--ld LD] [--run PREFIX]

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
  puts around a text, or -1.

Prints one MATCH line for each, or MISMATCH with the first differences, and exits 1 on any.
"""
import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys

from commands import run

p = argparse.ArgumentParser()
p.add_argument("tools")
p.add_argument("work")
p.add_argument("e2e")
p.add_argument("tokenizer")
p.add_argument("texts")
p.add_argument("oracle")
p.add_argument("--emit", choices=["cpp", "obj"], default="obj")
p.add_argument("--target", default="host", help="with --emit obj: needlec's --target")
p.add_argument("--cc", default="cc -std=c11 -O1 -Wall -Wextra -Werror", help="the C compiler that builds and links")
p.add_argument("--cxx", default="c++ -std=c++17 -O1 -Wall -Wextra -Werror", help="with --emit cpp: builds the model")
p.add_argument("--ld", help="links the program (default: --cc; with --emit cpp, c++)")
p.add_argument("--run", default="", help="a command prefix that runs the program (qemu-aarch64 -L ...)")
args = p.parse_args()


def read_lines(path):
    with open(path, encoding="utf-8") as f:
        return [line for line in f.read().split("\n") if line]


def byte_alphabet():
    """GPT-2's printable character for each byte."""
    visible = set(range(ord("!"), ord("~") + 1)) | set(range(0xA1, 0xAD)) | set(range(0xAE, 0x100))
    chars, extra = {}, 0
    for b in range(256):
        if b in visible:
            chars[chr(b)] = b
        else:
            chars[chr(256 + extra)] = b
            extra += 1
    return chars


def token_bytes(spec):
    """Each id's bytes in a text, as the file spells them."""
    byte_level = "ByteLevel" in json.dumps(spec.get("pre_tokenizer"))
    alphabet = byte_alphabet()
    out = {}
    for token, i in spec["model"]["vocab"].items():
        if byte_level:
            out[i] = bytes(alphabet[c] for c in token)
        elif len(token) == 6 and token.startswith("<0x") and token.endswith(">"):
            out[i] = bytes([int(token[3:5], 16)])
        else:
            out[i] = token.replace("\u2581", " ").encode("utf-8")
    for added in spec.get("added_tokens", []):
        content = added["content"]
        out[added["id"]] = (content if byte_level else content.replace("\u2581", " ")).encode("utf-8")
    return out


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


spec = json.load(open(os.path.join(args.tokenizer, "tokenizer.json"), encoding="utf-8"))
expected_bytes = token_bytes(spec)
count = max(expected_bytes) + 1
tool = lambda name: os.path.join(args.tools, name)
os.makedirs(args.work, exist_ok=True)
model, base = os.path.join(args.work, "m"), os.path.join(args.work, "t")
run(tool("needle-synth"), "--preset", "tiny", "--seed", "1", "--set", f"vocab_size={count}", "--tokenizer", "none",
    "-o", model)
shutil.copy(os.path.join(args.tokenizer, "tokenizer.json"), model)
cc = shlex.split(args.cc)
if args.emit == "cpp":
    run(tool("needlec"), model, "--layers", "2", "--emit", "cpp", "-o", base)
    run(*shlex.split(args.cxx), "-c", base + ".cpp", "-o", base + ".o")
else:
    run(tool("needlec"), model, "--layers", "2", "--emit", "obj", "--target", args.target, "-o", base)
run(*cc, "-DNEEDLE_NAME=needle_model", '-DNEEDLE_HEADER="t.h"', "-I", args.work, "-c",
    os.path.join(args.e2e, "text.c"), "-o", base + "-main.o")
link = shlex.split(args.ld) if args.ld else ["c++"] if args.emit == "cpp" else cc
run(*link, base + "-main.o", base + ".o", "-lm", "-o", base + "-run")

texts = [json.loads(line) for line in read_lines(args.texts)]
added = [(a["content"], a["id"]) for a in spec.get("added_tokens", [])]
cases = [("e " + t.encode("utf-8").hex()) if isinstance(t, str) else "d " + " ".join(map(str, t)) for t in texts]
cases += [f"b {i}" for i in range(count + 1)]
cases += ["i " + content.encode("utf-8").hex() for content, _ in added]
cases += ["m"]
with open(base + ".cases", "w") as f:
    f.write("\n".join(cases) + "\n")
run(*shlex.split(args.run), base + "-run", base + ".cases", base + ".results")
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

want = "{} {}".format(*bos_eos(spec))
print(f"MATCH bos eos {want}" if results[-1] == want else f"MISMATCH bos eos: {want}, ours {results[-1]}")
failed |= results[-1] != want
sys.exit(1 if failed else 0)
