#!/usr/bin/python3
"""Compares tokenizer-summary's line (what needlec read from a tokenizer.json) with this
script's own reading of the file, written from the tokenizer.json format alone.

    tokenizer-summary FILE | summary.py FILE     prints MATCH, or MISMATCH and the differences
"""
import json
import sys

# The step kinds' numbers, in the order of compiler/Tokenizer/TokenizerSpec.h's enums.
NORMALIZERS = ["NFC", "NFKC", "Prepend", "Replace"]
PRE_TOKENIZERS = ["Split", "ByteLevel", "Metaspace"]
DECODERS = ["ByteLevel", "Replace", "ByteFallback", "Fuse", "Strip", "Metaspace"]


def steps(node, key, names):
    if node is None:
        return []
    if node["type"] == "Sequence":
        return [kind for step in node[key] for kind in steps(step, key, names)]
    return [names.index(node["type"])]


def flat(node, key):
    if node is None:
        return []
    return [leaf for step in node[key] for leaf in flat(step, key)] if node["type"] == "Sequence" else [node]


def splits(pre_tokenizer):
    """What each split keeps: a Split's matches only when Removed and inverted; ByteLevel's
    use_regex (default true) keeps everything."""
    out = []
    for step in flat(pre_tokenizer, "pretokenizers"):
        if step["type"] == "Split":
            out.append("matches" if step.get("invert") else "all")
        elif step["type"] == "ByteLevel" and step.get("use_regex", True):
            out.append("all")
    return out


def expected(path):
    t = json.load(open(path, encoding="utf-8"))
    model, added = t["model"], t.get("added_tokens") or []
    ids = max([len(model["vocab"])] + [max(model["vocab"].values()) + 1] + [a["id"] + 1 for a in added])
    prefix, suffix, seen = [], [], False
    post = t.get("post_processor")
    if post and post["type"] == "TemplateProcessing":
        for piece in post["single"]:
            if "Sequence" in piece:
                seen = True
                continue
            (suffix if seen else prefix).extend(post["special_tokens"][piece["SpecialToken"]["id"]]["ids"])
    return {"ids": ids, "vocab": len(model["vocab"]), "merges": len(model["merges"]), "added": len(added),
            "special": sum(1 for a in added if a["special"]), "byte_fallback": bool(model.get("byte_fallback")),
            "ignore_merges": bool(model.get("ignore_merges")),
            "normalizer": steps(t.get("normalizer"), "normalizers", NORMALIZERS),
            "pre_tokenizer": steps(t.get("pre_tokenizer"), "pretokenizers", PRE_TOKENIZERS),
            "splits": splits(t.get("pre_tokenizer")),
            "prefix_space": any(s["type"] == "ByteLevel" and s.get("add_prefix_space", True)
                                for s in flat(t.get("pre_tokenizer"), "pretokenizers")),
            "decoder": steps(t.get("decoder"), "decoders", DECODERS), "prefix": prefix, "suffix": suffix}


def main():
    got, want = json.loads(sys.stdin.read()), expected(sys.argv[1])
    differences = {k: (got.get(k), v) for k, v in want.items() if got.get(k) != v}
    print("MATCH" if not differences else f"MISMATCH {differences}")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
