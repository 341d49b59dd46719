#!/usr/bin/env bash
# Generates the seed corpora (docs/reliability.md) into OUT (every build does, into
# <build>/test/fuzz/seeds) with the tools in BIN (default build/bin) and the IR of the lit tests. Seeds are valid and nearly valid inputs. The
# model seeds come from the smallest config that still reaches every path of a block (an engram
# site, taps, a sliding window, 2- and 4-bit CQ): seeds/config/small.json, which the harnesses
# embed, so the IR and safetensors seeds match the model they are checked against.
set -euo pipefail
out=$(realpath -m "${OUT:?set OUT to the directory to write the seeds to}")
cd "$(dirname "$0")"
bin=$(realpath "${BIN:-../../build/bin}")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rm -rf "$out"
mkdir -p "$out"/{config,safetensors,lora,needle,ir,runtime,tokenizer,encode,tools}

small=(--preset tiny --set vocab_size=16 --set num_heads=2 --set num_kv_heads=1 --set qk_head_dim=4
       --set v_head_dim=4 --set num_layers=1 --set max_seq_len=16 --set sliding_window=4 --set 'global_layers=[]'
       --set 'engram_layers=[0]' --set engram_slots=4 --set embedding_dim=4 --set embedding_probes=1
       --set embedding_queries=1 --set confidence_probes=1 --set confidence_queries=1)
"$bin/needle-synth" "${small[@]}" -o "$tmp/small"
"$bin/needle-synth" "${small[@]}" --quantized -o "$tmp/small-cq"
"$bin/needle-synth" "${small[@]}" --quantized -o "$out"/needle/small.needle
# The IR of the float model as needlec quantizes it (the harness does the same in memory); needlec
# writes the quantized weights beside the IR, which the seeds leave behind.
"$bin/needlec" "$tmp/small" --emit mlir -o "$tmp/small.mlir"
"$bin/needlec" "$tmp/small" --passes none --emit mlir -o "$tmp/small-imported.mlir"
cp "$tmp/small.mlir" "$tmp/small-imported.mlir" "$out"/ir/
"$bin/needle-synth" --preset tiny -o "$tmp/tiny"
"$bin/needle-synth" --preset needle3 -o "$tmp/needle3"
"$bin/needle-synth" --preset tiny --lora-adapter 1 -o "$tmp/lora1.safetensors"
"$bin/needle-synth" --preset tiny --lora-adapter 2 -o "$tmp/lora2.safetensors"
cp "$tmp/small/config.json" "$out"/config/small.json
cp "$tmp/tiny/config.json" "$out"/config/tiny.json
cp "$tmp/needle3/config.json" "$out"/config/needle3.json
cp "$tmp/small-cq/model.safetensors" "$out"/safetensors/small-cq.safetensors

# Tools files: the example's, and generated ones covering every schema keyword; record schemas too.
cp ../../examples/tools.json "$out"/tools/example.json
for seed in 1 2 3 4 5; do
  python3 ../calls/random_tools.py $seed 2 > "$out"/tools/random-$seed.json
  python3 ../calls/random_tools.py $seed 1 --schema > "$out"/tools/schema-$seed.json
done

# The lit tests' needle IR without their comments, one file per split-input-file case.
for file in ../lit/dialect/*.mlir ../lit/passes/*.mlir; do
  awk -v out="$out/ir/$(basename "$file" .mlir)" '
    BEGIN { name = out "-0.mlir" }
    /^\/\/ -----/ { close(name); name = out "-" ++n ".mlir"; next }
    /^ *\/\// { next }
    { print > name }' "$file"
done

TMP=$tmp OUT=$out python3 - <<'EOF'
"""Nearly valid variants, small hand-made files and the runtime's call sequences."""
import json, os, struct

tmp, out = os.environ["TMP"], os.environ["OUT"]

def safetensors(path, tensors, metadata=None, header=None):
    """tensors: (name, dtype, shape, bytes); header: replaces the JSON header text."""
    head, data = {}, b""
    if metadata is not None:
        head["__metadata__"] = metadata
    for name, dtype, shape, raw in tensors:
        head[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = (header if header is not None else json.dumps(head, separators=(",", ":"))).encode()
    open(path, "wb").write(struct.pack("<Q", len(text)) + text + data)

def read_safetensors(path):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    head = json.loads(raw[8:8 + n])
    meta = head.pop("__metadata__", {})
    return meta, {k: (v["dtype"], v["shape"], raw[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]])
                  for k, v in head.items()}

# config.json: every optional field, Needle's options at their defaults, and broken rules.
tiny = json.load(open(f"{out}/config/tiny.json"))
def config(name, **changes):
    c = dict(tiny, **changes)
    json.dump({k: v for k, v in c.items() if v is not None}, open(f"{out}/config/{name}.json", "w"), indent=1)
config("optional", ladder_order=[5, 4, 3, 2, 1, 0], source_blocks=[0, 2, 4, 6, 8, 10], engram_heads=0)
config("needle-options", attention_gate="elementwise", hada_factor_mode="shared", engram_bank_ids=[],
       cla_pairs=[], engram_seed_heads=0, out_vocab=256, kv_window=0, ladder_widths=[])
config("bad-d-model", d_model=100)
config("bad-window", sliding_window=2)
config("missing-field", rms_eps=None)
config("unknown-field", extra=1)
config("bad-scheme", quantization={"scheme": "attn=5,default=2", "group_size": 128})

# safetensors: each dtype, metadata, empty and scalar shapes, and broken headers.
f = lambda *v: struct.pack(f"<{len(v)}f", *v)
safetensors(f"{out}/safetensors/dtypes.safetensors",
            [("f32", "F32", [2, 2], f(1, 2, 3, 4)), ("f16", "F16", [2], b"\x00\x3c\x00\xc0"),
             ("bf16", "BF16", [1, 2], b"\x80\x3f\x00\x40"), ("u8", "U8", [3], b"\x01\x02\x03"),
             ("i32", "I32", [1], struct.pack("<i", -7)), ("empty", "F32", [0, 4], b""), ("scalar", "F32", [], f(5))],
            metadata={"format": "pt", "note": "x"})
safetensors(f"{out}/safetensors/empty.safetensors", [])
safetensors(f"{out}/safetensors/overlap.safetensors", [], header='{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},'
            '"b":{"dtype":"F32","shape":[1],"data_offsets":[2,6]}}        ')
safetensors(f"{out}/safetensors/bad-dtype.safetensors", [("x", "F64", [1], b"\0" * 8)])
safetensors(f"{out}/safetensors/short-data.safetensors", [], header='{"x":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}')

# LoRA adapters for the tiny preset: one or two targets, F32, F16 and BF16, and broken pairs.
meta1, lora1 = read_safetensors(f"{tmp}/lora1.safetensors")
meta2, lora2 = read_safetensors(f"{tmp}/lora2.safetensors")
pair = lambda tensors, target: [(f"{target}.lora_{s}",) + tensors[f"{target}.lora_{s}"] for s in "AB"]
def to16(entry, dtype):
    name, _, shape, raw = entry
    values = struct.unpack(f"<{len(raw) // 4}f", raw)
    if dtype == "F16":
        return name, dtype, shape, struct.pack(f"<{len(values)}e", *values)
    return name, dtype, shape, b"".join(struct.pack("<f", v)[2:] for v in values)
safetensors(f"{out}/lora/k-rank1.safetensors", pair(lora1, "blocks.0.attn.k"), meta1)
safetensors(f"{out}/lora/qo-rank2.safetensors", pair(lora2, "blocks.5.attn.q") + pair(lora2, "blocks.2.attn.o"), meta2)
safetensors(f"{out}/lora/v-f16.safetensors", [to16(e, "F16") for e in pair(lora1, "blocks.3.attn.v")], meta1)
safetensors(f"{out}/lora/gate-bf16.safetensors", [to16(e, "BF16") for e in pair(lora1, "blocks.1.attn.gate")], meta1)
safetensors(f"{out}/lora/missing-b.safetensors", pair(lora1, "blocks.0.attn.q")[:1], meta1)
safetensors(f"{out}/lora/bad-rank.safetensors", pair(lora1, "blocks.0.attn.q"), {"lora_alpha": "2", "lora_r": "1.5"})
safetensors(f"{out}/lora/no-target.safetensors", [("final_norm.lora_A",) + lora1["blocks.0.attn.k.lora_A"],
                                                  ("final_norm.lora_B",) + lora1["blocks.0.attn.k.lora_B"]], meta1)

# .needle: cut inside the payload, and a flipped byte in the FlatBuffers header.
image = open(f"{out}/needle/small.needle", "rb").read()
open(f"{out}/needle/truncated.needle", "wb").write(image[:len(image) // 2])
open(f"{out}/needle/flipped.needle", "wb").write(image[:64] + bytes([image[64] ^ 0x40]) + image[65:])

# Runtime call sequences (RuntimeFuzzer.cpp): a fill byte, then calls, each an op byte (mod 5:
# 0 feed n tokens, 1 reset, 2 reopen, 3 NULL arguments, 4 refused opens) and its bytes.
feed = lambda *tokens: bytes([0, len(tokens), *tokens])
runtime = {
    "feed": b"\x00" + feed(3, 1, 4) + feed(1, 5),
    "feed-to-full": b"\x11" + feed(*range(16)) + feed(7) + feed(),
    "bad-tokens": b"\x22" + feed(3, 0xf1) + feed(0xf3, 2) + feed(0xf5) + feed(9),
    "reset": b"\x33" + feed(1, 2, 3) + b"\x01" + feed(4, 5) + b"\x02\x99" + feed(6),
    "arguments": b"\x44" + feed(8, 9) + b"\x03\x02\x05" + b"\x04\x07\x01" + feed(10),
}
for name, calls in runtime.items():
    open(f"{out}/runtime/{name}", "wb").write(calls)

# tokenizer.json: a small byte-level BPE (Llama 3's shape) and a SentencePiece-style one (Llama 2's),
# and nearly valid variants of them.
alphabet, extra = {}, 256
for b in range(256):
    printable = 33 <= b <= 126 or 161 <= b <= 172 or 174 <= b <= 255
    alphabet[b] = chr(b) if printable else chr(extra)
    extra += 0 if printable else 1
vocab = {alphabet[b]: b for b in range(256)}
vocab.update({"th": 256, "er": 257, "\u0120t": 258})
byte_level = {"version": "1.0", "truncation": None, "padding": None,
    "added_tokens": [{"id": 259, "content": "<|end|>", "single_word": False, "lstrip": False, "rstrip": False,
                      "normalized": False, "special": True}],
    "normalizer": {"type": "NFC"},
    "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": "(?i:'s|'t)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}|\\s+(?!\\S)|\\s+"},
         "behavior": "Isolated", "invert": False},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]},
    "post_processor": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
    "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
    "model": {"type": "BPE", "dropout": None, "unk_token": None, "fuse_unk": False, "byte_fallback": False,
              "ignore_merges": True, "vocab": vocab, "merges": ["t h", "e r", ["\u0120", "t"]]}}
sp_vocab = {"<unk>": 0, "<s>": 1, "</s>": 2, **{f"<0x{b:02X}>": 3 + b for b in range(256)},
            "\u2581": 259, "a": 260, "\u2581a": 261}
sentence_piece = {"version": "1.0", "truncation": None, "padding": None,
    "added_tokens": [{"id": i, "content": c, "single_word": False, "lstrip": False, "rstrip": False,
                      "normalized": False, "special": True} for i, c in enumerate(["<unk>", "<s>", "</s>"])],
    "normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "\u2581"},
                   {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]},
    "pre_tokenizer": None,
    "post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                       {"Sequence": {"id": "A", "type_id": 0}}], "pair": [],
                       "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
    "decoder": {"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
                {"type": "ByteFallback"}, {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
    "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "fuse_unk": True, "byte_fallback": True,
              "vocab": sp_vocab, "merges": ["\u2581 a"]}}
def tokenizer(name, value):
    json.dump(value, open(f"{out}/tokenizer/{name}.json", "w"), ensure_ascii=False)
tokenizer("byte-level", byte_level)
tokenizer("sentence-piece", sentence_piece)
tokenizer("unknown-merge", dict(byte_level, model=dict(byte_level["model"], merges=["t q"])))
tokenizer("word-piece", dict(byte_level, model=dict(byte_level["model"], type="WordPiece")))
tokenizer("bad-regex", dict(byte_level, pre_tokenizer={"type": "Split", "pattern": {"Regex": "(a|\\d"},
                                                        "behavior": "Isolated", "invert": False}))

# Texts to encode: the tokenizer tests' corpus, one file per line, and some invalid UTF-8.
for number, line in enumerate(open("../tokenizer/corpus.jsonl", encoding="utf-8")):
    open(f"{out}/encode/corpus-{number}", "wb").write(json.loads(line).encode())
open(f"{out}/encode/invalid", "wb").write(b"ok \xff\xc3 \xe2\x82 \xed\xa0\x80 \xf4\x90\x80\x80 done")
EOF
