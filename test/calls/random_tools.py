#!/usr/bin/python3
"""Random tools.json files for the tool-call tests, covering every schema keyword needlec supports.

  random_tools.py SEED|run TOOLS [--comparable] > tools.json
  random_tools.py SEED|run 1 --schema [--comparable] > schema.json

SEED "run" draws a new seed and prints it to stderr (so a failing run can be repeated). Each
tool's arguments are an object of one to five properties drawn from: strings (with and without
minLength/maxLength), integers with every kind of bound (inclusive, exclusive, one-sided,
negative), numbers, booleans, null, lists of types, enum and const of mixed values, arrays with
items and minItems/maxItems, nested objects with required and additionalProperties: false,
anyOf and oneOf (of disjoint branches), and $ref to $defs; some optional, with descriptions.
--schema writes one JSON Schema for needlec --schema's records instead: an object like a tool's
arguments, or an array of values (roots that close, so that no end token is needed).
--comparable leaves out what XGrammar (the masks' oracle, test/e2e/check_calls.py) does
otherwise: minLength and maxLength, where its strings differ from JSON Schema's by design (no
escapes, raw control characters), and integer bounds, which XGrammar 0.1.27 gets wrong (with
"maximum": -463 it refuses -634 and takes -462; with "exclusiveMinimum": -3 it refuses -2; with
"minimum": -220 and "maximum": -211 it takes -210 and -228; with "minimum": 504 and
"exclusiveMaximum": 514 it takes 515).
"""
import json
import random
import sys

seed = random.randrange(1 << 30) if sys.argv[1] == "run" else int(sys.argv[1])
if sys.argv[1] == "run":
    print(f"random_tools.py seed {seed}", file=sys.stderr)
count = int(sys.argv[2])
comparable = "--comparable" in sys.argv
rng = random.Random(seed)
WORDS = ["time", "label", "to", "body", "query", "kind", "limit", "city", "when", "level", "items", "mode", "note"]


def integer():
    schema = {"type": "integer"}
    if comparable:  # XGrammar 0.1.27's integer ranges are wrong (see above)
        return schema
    low = rng.randint(0 if comparable else -1000, 1000)
    high = low + rng.choice([0, 1, 9, 99, 12345])
    for key, value in (("minimum", low), ("maximum", high), ("exclusiveMinimum", low - 1),
                       ("exclusiveMaximum", high + 1)):
        if rng.random() < 0.35:
            schema[key] = value
    if comparable and schema.get("exclusiveMinimum") == -1:
        del schema["exclusiveMinimum"]
    return schema


def string():
    schema = {"type": "string"}
    if not comparable and rng.random() < 0.4:
        low = rng.randint(0, 3)
        schema["minLength"] = low
        if rng.random() < 0.7:
            schema["maxLength"] = low + rng.randint(0, 6)
    return schema


def scalar():
    return rng.choice([
        string, integer,
        lambda: {"type": "number"},
        lambda: {"type": "boolean"},
        lambda: {"type": "null"},
        lambda: {"type": ["string", "null"]},
        lambda: {"type": ["integer", "boolean"]},
        lambda: {"enum": rng.sample(["web", "news", "images", 1, 2.5, -3, True, None, "a\"b", "été"], rng.randint(1, 4))},
        lambda: {"const": rng.choice(["fixed", 7, False, None])},
        lambda: {"type": "string", "enum": ["low", "mid", "high"]},
    ])()


def value(depth, defs):
    roll = rng.random()
    if depth >= 2 or roll < 0.55:
        return scalar()
    if roll < 0.65:
        schema = {"type": "array", "items": value(depth + 1, defs)}
        if rng.random() < 0.6:
            schema["minItems"] = rng.randint(0, 2)
            schema["maxItems"] = schema["minItems"] + rng.randint(0, 2)
        return schema
    if roll < 0.75:
        return obj(depth + 1, defs)
    if roll < 0.82:
        return {"anyOf": [scalar(), scalar()]}
    if roll < 0.9:  # disjoint: different types
        return {"oneOf": [{"type": "string"}, integer(), {"type": "null"}][:rng.randint(2, 3)]}
    name = f"d{len(defs)}"
    defs[name] = None  # taken, before its value draws more definitions
    defs[name] = value(depth + 1, defs)
    return {"$ref": f"#/$defs/{name}"}


def obj(depth, defs):
    names = rng.sample(WORDS, rng.randint(1, 5))
    properties = {}
    for name in names:
        properties[name] = value(depth, defs)
        if rng.random() < 0.3:
            properties[name]["description"] = f"the {name}"
    schema = {"type": "object", "properties": properties,
              "required": [n for n in names if rng.random() < 0.6]}
    if rng.random() < 0.5:
        schema["additionalProperties"] = False
    return schema


if "--schema" in sys.argv:
    defs = {}
    schema = obj(0, defs) if rng.random() < 0.7 else {"type": "array", "items": value(1, defs), "maxItems": 4}
    if defs:
        schema["$defs"] = defs
    json.dump(schema, sys.stdout, ensure_ascii=False)
    print()
    sys.exit(0)

tools = []
for i in range(count):
    defs = {}
    parameters = obj(0, defs)
    if defs:
        parameters["$defs"] = defs
    function = {"name": f"tool_{i}_{rng.choice(WORDS)}", "description": f"tool number {i}", "parameters": parameters}
    tools.append({"type": "function", "function": function} if rng.random() < 0.7 else function)
json.dump(tools, sys.stdout, ensure_ascii=False)
print()
