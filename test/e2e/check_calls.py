#!/usr/bin/python3
"""End to end through a backend for a model's compiled tool-call automaton.

  check_calls.py TOOLS WORK E2E TOKENIZER_DIR TOOLS_JSON NPM_DIR [--records] [--end TOKEN] [--calls N]
                 [--masks K] [--queries FILE] [--prompt FILE] [--max-seq N]
                 [--emit cpp | --emit obj --target T] [--cc CC] [--cxx CXX] [--ld LD] [--run PREFIX]

Synthesizes a tiny model whose vocab_size is the tokenizer's, gives it TOKENIZER_DIR's
tokenizer.json, compiles it with needlec --tools TOOLS_JSON (--call-end TOKEN), builds
test/e2e/calls.c, links and runs it (under --run), and checks:

- every one of N calls drawn at random under the automaton's masks: JSON.parse takes it, Ajv
  (test/calls/oracle.mjs) finds it valid against the schema of the calls of TOOLS_JSON, and its
  arguments' keys come in the schema's order;
- with --queries, NAME_call on each query (threshold 0.5; test/e2e/call.c checks that a reused
  session answers as a fresh one, after a call, a "no call" and errors): every call it makes is
  valid (Ajv), every other answer is NEEDLE_NO_CALL; and the routing (test/e2e/route.c):
  NAME_call_rank orders the tools as the reference interpreter's embeddings do (needle-run on
  the same ids; a pair closer than 1e-3 in cosine may come either way), and NAME_call_top_k's
  call (top_k --route-k, threshold 0) is valid and names one of the tools ranked first;
- K of them step by step: the mask (no budget) equals XGrammar's for the same schema, vocabulary
  and end token at every step, but for one difference by design, checked on purpose: XGrammar's
  UTF-8 is lenient (C0, C1 and F5-F7 as lead bytes, overlong forms, surrogates), needlec's strings
  are valid UTF-8 and take no \\u escape of a surrogate; so the tokens of XGrammar's mask that
  would make the call's bytes no prefix of valid UTF-8 (as Python's strict decoder says) or write
  such an escape are dropped from it, and must never be in ours.

With --records, TOOLS_JSON is one JSON Schema, compiled with needlec --schema (and --prompt is
its --schema-prompt): the same checks on its records, drawn through NAME_extract_mask and the
rest (calls.c built with -DSTEPS=_extract), held against the schema itself, and NAME_extract on
each query (test/e2e/extract.c) must write a valid record.

The calls drawn are left in WORK/c.calls, so that targets can be compared. Prints one MATCH
line for each, or MISMATCH with the first differences, and exits 1 on any.
"""
import argparse
import array
import codecs
import json
import os
import re
import sys

from commands import add_build_options, build_with_tokenizer, run
from vocabulary import token_bytes

p = argparse.ArgumentParser()
for name in ("tools", "work", "e2e", "tokenizer", "tools_json", "npm"):
    p.add_argument(name)
p.add_argument("--records", action="store_true", help="TOOLS_JSON is a JSON Schema: check its records")
p.add_argument("--end", help="needlec's --call-end")
p.add_argument("--calls", type=int, default=200)
p.add_argument("--masks", type=int, default=5)
p.add_argument("--queries", help="a file of queries (JSON strings, one a line) for NAME_call")
p.add_argument("--prompt", help="needlec's --prompt (default: needlec's, which holds the tools; without "
                                "--queries, one that does not)")
p.add_argument("--route-k", type=int, default=1, help="the top_k of NAME_call_top_k with --queries")
p.add_argument("--max-rollback", type=int, default=0,
               help="needlec's --max-rollback: with room for a request after the prompt's prefix, a session "
                    "goes back to the prefix rather than feeding it again")
p.add_argument("--seed", type=int, default=1)
p.add_argument("--max-seq", type=int, default=1024,
               help="the model's max_seq_len: room for the prompt and the call, which a model of random "
                    "weights makes as long as the room allows")
add_build_options(p)
args = p.parse_args()

oracle = [os.environ.get("NODE", "node"), os.path.join(os.path.dirname(__file__), "..", "calls", "oracle.mjs"), args.npm]
spec = json.load(open(os.path.join(args.tokenizer, "tokenizer.json"), encoding="utf-8"))
count = max([*spec["model"]["vocab"].values(), *(a["id"] for a in spec.get("added_tokens", []))]) + 1
end = next((a for a in spec.get("added_tokens", []) if a["content"] == args.end), None) if args.end else None

# The call language as one JSON Schema (docs/tool-calls.md): one of the tools' calls, each tool's
# $defs moved to the root (as tool i's "i.NAME"), where references resolve. Records: the schema.
definitions = {}


def rooted(i, parameters):
    parameters = dict(parameters)
    for name, schema in parameters.pop("$defs", {}).items():
        definitions[f"{i}.{name}"] = rooted(i, schema)
    return json.loads(json.dumps(parameters).replace('"#/$defs/', f'"#/$defs/{i}.'))


if args.records:
    call_schema = json.load(open(args.tools_json, encoding="utf-8"))
    tools = []
else:
    tools = [t.get("function", t) for t in json.load(open(args.tools_json, encoding="utf-8"))]
    call_schema = {"anyOf": [{"type": "object",
                              "properties": {"name": {"const": t["name"]},
                                             "arguments": rooted(i, t.get("parameters", {"type": "object"}))},
                              "required": ["name", "arguments"], "additionalProperties": False}
                             for i, t in enumerate(tools)]}
    if definitions:
        call_schema["$defs"] = definitions


def declared_order(value):
    """The keys `value` (a call's arguments, or a record) may have, in the schema's order; None when
    the schema gives no order to check."""
    if args.records:
        return list(call_schema.get("properties", {})) if isinstance(value, dict) else None
    return list(next(t for t in tools if t["name"] == value["name"]).get("parameters", {}).get("properties", {}))


os.makedirs(args.work, exist_ok=True)
base = os.path.join(args.work, "c")
needlec_flags = ((["--schema"] if args.records else ["--route-tools", "--tools"]) + [args.tools_json] +
                 (["--call-end", args.end] if args.end else []) + ["--max-rollback", str(args.max_rollback)])
if not args.queries and not args.prompt:
    # NAME_call is not run: a prompt without the tools, which may be too many for max_seq_len.
    args.prompt = os.path.join(args.work, "prompt.txt")
    with open(args.prompt, "w") as f:
        f.write("{{query}}")
if args.prompt:
    needlec_flags += ["--schema-prompt" if args.records else "--prompt", args.prompt]
if args.records:
    args.cc += " -DSTEPS=_extract"
requests_c = [os.path.join(args.e2e, c) for c in (["extract.c"] if args.records else ["call.c", "route.c"])]
runner, caller, *router = build_with_tokenizer(args, args.tokenizer, count, base,
                                               [os.path.join(args.e2e, "calls.c"), *requests_c], needlec_flags,
                                               ["--set", f"max_seq_len={args.max_seq}"])
router = router[0] if router else None


def parse_calls(lines):
    """(ids, text) of each call line, the end token's id and text taken off."""
    calls = []
    for line in lines:
        ids, hex_bytes = line.split(";")
        ids = [int(i) for i in ids.split()]
        text = bytes.fromhex(hex_bytes.strip()).decode("utf-8")
        if end:
            if ids[-1] != end["id"] or not text.endswith(end["content"]):
                sys.exit(f"MISMATCH a call does not end with the end token: {line}")
            text = text[:-len(end["content"])]
        calls.append((ids, text))
    return calls


def reference_embedding(ids):
    """The reference interpreter's embedding of the model after `ids` (needle-run)."""
    path = os.path.join(args.work, "embedding.f32")
    run(os.path.join(args.tools, "needle-run"), os.path.join(args.work, "m"), "--layers", "2",
        *(["--tokens", ",".join(map(str, ids))] if ids else ["--no-tokens"]), "--embedding", path)
    return array.array("f", open(path, "rb").read())


def check_routing(queries):
    """NAME_call_rank against the reference's embeddings, NAME_call_top_k's calls valid and routed
    (test/e2e/route.c); True when something fails."""
    texts = [t["name"] + ": " + t["description"] if t.get("description") else t["name"] for t in tools]
    lines = [f"t {t.encode('utf-8').hex()}" for t in texts] + [f"q {q.encode('utf-8').hex()}" for q in queries]
    out = run(*router, str(args.route_k), input="".join(line + "\n" for line in lines)).splitlines()
    parse_ids = lambda field: [int(i) for i in field.split()]
    tool_embeddings = [reference_embedding(parse_ids(line)) for line in out[:len(tools)]]
    wrong, made = [], []
    for query, line in zip(queries, out[len(tools):]):
        ids, order, answer = line.split(" ; ")
        order = [int(i) for i in order.split()]
        q = reference_embedding(parse_ids(ids))
        score = [sum(a * b for a, b in zip(q, e)) for e in tool_embeddings]
        if sorted(order) != list(range(len(tools))) or any(score[a] < score[b] - 1e-3 for a, b in zip(order, order[1:])):
            wrong.append(f"{query!r}: ranked {order}, the reference's scores {score}")
        status, *call = answer.split()
        if status != "0" or not call:
            wrong.append(f"{query!r}: NAME_call_top_k answered {status}")
            continue
        made.append(bytes.fromhex(call[0]).decode("utf-8"))
        if json.loads(made[-1])["name"] not in [tools[i]["name"] for i in order[:args.route_k]]:
            wrong.append(f"{query!r}: {made[-1]} names no tool of the top {args.route_k} of {order}")
    requests = "".join(json.dumps({"schema": call_schema, "text": text}) + "\n" for text in made)
    verdicts = [json.loads(line) for line in run(*oracle, "validate", input=requests).splitlines()]
    wrong += [f"invalid: {text}" for text, v in zip(made, verdicts) if not v.get("valid")]
    if len(out) != len(lines) or len(verdicts) != len(made) or wrong:
        print(f"MISMATCH routing: {len(out)} answers to {len(lines)} lines; {wrong[:2]}")
        return True
    print(f"MATCH routing: {len(queries)} rankings as the reference's, {len(made)} valid calls among the top "
          f"{args.route_k}")
    return False


failed = False
written = run(*runner, str(args.calls), str(args.seed))
with open(base + ".calls", "w") as f:  # to compare across targets
    f.write(written)
calls = parse_calls(written.splitlines())
requests = "".join(json.dumps({"schema": call_schema, "text": text}) + "\n" for _, text in calls)
verdicts = [json.loads(line) for line in run(*oracle, "validate", input=requests).splitlines()]
bad = [(text, v) for (_, text), v in zip(calls, verdicts) if not v.get("valid")]
order = []
for _, text in calls:
    value = json.loads(text)
    declared, keys = declared_order(value), value if args.records else value["arguments"]
    if declared is not None and [k for k in declared if k in keys] != list(keys):
        order.append(text)
if bad or order or len(verdicts) != len(calls):
    failed = True
    print(f"MISMATCH {len(bad)} of {len(calls)} calls invalid, {len(order)} out of order; first: "
          f"{(bad or order)[:1]}")
else:
    print(f"MATCH {len(calls)} calls valid")

lines = run(*runner, str(args.masks), str(args.seed + 1), "masks").splitlines()
ours, walks = [], []
for line in lines:
    if line.startswith("M"):
        ours[-1].append([[int(x) for x in r.split("-")] for r in line.split()[1:]])
    else:
        walks.append(parse_calls([line])[0][0])
        ours.append([])
requests = "".join(json.dumps({"schema": call_schema, "stop": [end["id"]] if end else [], "walk": w}) + "\n"
                   for w in walks)
theirs = [json.loads(line) for line in
          run(*oracle, "masks", os.path.join(args.tokenizer, "tokenizer.json"), str(count), input=requests).splitlines()]
vocabulary = token_bytes(spec)
ids = lambda ranges: {i for lo, hi in ranges for i in range(lo, hi)}


SURROGATE_ESCAPE = re.compile(rb"(?<!\\)(?:\\\\)*\\u[dD][89a-fA-F]")


def text_prefix(data):
    """Whether `data` begins valid UTF-8 (an incomplete last sequence allowed) with no \\u escape
    of a surrogate in its strings (the only backslashes of a call are in its strings)."""
    try:
        codecs.getincrementaldecoder("utf-8")().decode(data, final=False)
    except UnicodeDecodeError:
        return False
    return not SURROGATE_ESCAPE.search(data)


differences = []
for walk, mine, xgr in zip(walks, ours, theirs):
    if "error" in xgr:
        differences.append(f"XGrammar: {xgr['error']} in walk {walk}")
        continue
    # Without an end token our walk ends where the JSON does; XGrammar's last mask is then empty too.
    for step, (a, b) in enumerate(zip(mine, xgr["masks"])):
        if a == b:
            continue
        written = b"".join(vocabulary[i] for i in walk[:step])
        a, b = ids(a), ids(b)
        b -= {i for i in b - a if i in vocabulary and not text_prefix(written + vocabulary[i])}
        if a != b:
            only_ours, only_theirs = sorted(a - b)[:8], sorted(b - a)[:8]
            differences.append(f"step {step} of walk {walk[:step + 1]}: only ours {only_ours}, only XGrammar's "
                               f"{only_theirs}")
            break
if differences or len(theirs) != len(walks):
    failed = True
    print(f"MISMATCH masks against XGrammar: {differences[:3]}")
else:
    print(f"MATCH masks of {len(walks)} calls ({sum(len(m) for m in ours)} steps) equal XGrammar's")

if args.queries:
    queries = [json.loads(line) for line in open(args.queries, encoding="utf-8") if line.strip()]
    answers = run(*caller, *([] if args.records else ["0.5"]),
                  input="".join(q.encode("utf-8").hex() + "\n" for q in queries)).splitlines()
    made = [bytes.fromhex(a.split()[-1]).decode("utf-8") for a in answers if a.split()[0] == "0"]
    declined = sum(a.split()[0] == "1" for a in answers) if not args.records else 0
    requests = "".join(json.dumps({"schema": call_schema, "text": text}) + "\n" for text in made)
    verdicts = [json.loads(line) for line in run(*oracle, "validate", input=requests).splitlines()]
    invalid = [text for text, v in zip(made, verdicts) if not v.get("valid")]
    what = "NAME_extract" if args.records else "NAME_call"
    if len(answers) != len(queries) or invalid or len(made) + declined != len(queries):
        failed = True
        print(f"MISMATCH {what}: {len(answers)} answers to {len(queries)} queries, {len(invalid)} invalid "
              f"{invalid[:1]}, {len(queries) - len(made) - declined} errors")
    elif args.records:
        print(f"MATCH NAME_extract: {len(made)} valid record{'' if len(made) == 1 else 's'}, each as on a fresh "
              "session")
    else:
        print(f"MATCH NAME_call: {len(made)} valid calls, {declined} declined, each as on a fresh session")
    if not args.records:
        failed = check_routing(queries) or failed
sys.exit(1 if failed else 0)
