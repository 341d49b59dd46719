"""Tool-calling data for needle-train (docs/training.md, "The task"): requests written from
templates with arguments drawn at random, each paired with its exact call, and requests no tool
fits, paired with no call. A tasks file says how each tool is asked for:

  {"values": {"time": {"time": true}, "who": {"words": ["Bob", "Alice"]}, "topic": {"dictionary": 3000},
              "note": {"phrase": 2000},
              "count": {"integer": [1, 50]}, "kind": {"enum": {"news": ["news", "headlines"]}}},
   "tools": {"set_alarm": [{"text": "wake me up at {time}", "arguments": {"time": "time"}}]},
   "none": ["tell me a joke", "what is {who}'s favourite colour"]}

A template's {slot} names a value kind; its "arguments" map the tool's argument names to slots
(an argument whose slot a sentence leaves out is not in its call). A template spells several
sentences: "(a|b)" is one of a or b, "[a|b]" one of a, b or nothing, nested as needed, so
"(search for|find) {topic}[ in the {kind}]" is four sentences.
A dictionary kind draws one of N words of Debian's word list, a phrase kind one to four of them.
The held-out split is new sentences: one sentence in four of a tool's templates (and of "none"),
and one value in five of each word list, are held out; a held-out request is a held-out sentence
with held-out values. So a held-out sentence is a new combination of phrases training saw in
other sentences (a model this small, trained from nothing, has no other language to go on)."""
import json
import random
import re
import zlib

_SLOT = re.compile(r"\{(\w+)\}")
_NUMBER_WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
                 "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen",
                 "twenty"]


class TaskError(Exception):
    pass


def _closing(text, start):
    """The index of the bracket that closes the one at `start`."""
    depth = 0
    for i in range(start, len(text)):
        depth += (text[i] in "([") - (text[i] in ")]")
        if depth == 0:
            return i
    raise TaskError(f"{text!r}: an unclosed {text[start]}")


def _alternatives(text):
    """`text` split at its top-level |."""
    parts, depth, begin = [], 0, 0
    for i, c in enumerate(text):
        depth += (c in "([") - (c in ")]")
        if c == "|" and depth == 0:
            parts.append(text[begin:i])
            begin = i + 1
    return parts + [text[begin:]]


def expand(text):
    """Every sentence a template spells, in a fixed order: (a|b) one of them, [a|b] one or nothing."""
    sentences, i = [""], 0
    while i < len(text):
        if text[i] in "([":
            close = _closing(text, i)
            inner = text[i + 1:close]
            options = _alternatives(inner) + ([""] if text[i] == "[" else [])
            tails = [t for option in options for t in expand(option)]
            sentences = [s + t for s in sentences for t in tails]
            i = close + 1
        else:
            sentences = [s + text[i] for s in sentences]
            i += 1
    return sentences


def _held_out(sentence):
    """One sentence in four, chosen by its text's CRC (stable, and blind to the templates' order)."""
    return zlib.crc32(sentence.encode("utf-8")) % 4 == 3


def _time(rng):
    """(how a user says it, the argument): 7 am, 7:30, 19:05 -> "07:00", "07:30", "19:05"."""
    hour, minute = rng.randrange(24), rng.choice([0, 0, 15, 30, 45, rng.randrange(60)])
    form = rng.randrange(3)
    if form == 0 and 1 <= hour <= 12 and minute == 0:
        text = f"{hour}"
    elif form == 1:
        twelve = hour % 12 or 12
        text = f"{twelve}" + (f":{minute:02d}" if minute else "") + (" am" if hour < 12 else " pm")
    else:
        text = f"{hour}:{minute:02d}"
    return text, f"{hour:02d}:{minute:02d}"


def _dictionary(count, path="/usr/share/dict/words"):
    """`count` words of Debian's word list (wamerican), lowercase letters only, 3 to 9 of them,
    in an order fixed by the list alone."""
    with open(path, encoding="utf-8") as f:
        words = sorted({w.strip() for w in f if re.fullmatch(r"[a-z]{3,9}", w.strip())})
    random.Random(0).shuffle(words)
    if len(words) < count:
        raise TaskError(f"{path} has {len(words)} usable words, fewer than {count}")
    return words[:count]


class Values:
    """Draws a value of each kind, from the train or the held-out share of its word lists."""

    def __init__(self, kinds):
        self.kinds = {}
        for name, kind in kinds.items():
            if not isinstance(kind, dict) or len(kind) != 1 or next(iter(kind)) not in (
                    "words", "time", "integer", "enum", "dictionary", "phrase"):
                raise TaskError(f"values.{name}: one of words, time, integer, enum, dictionary or phrase")
            # A dictionary: so many values that a model must learn to copy them, not recall them.
            if "dictionary" in kind:
                kind = {"words": _dictionary(kind["dictionary"])}
            elif "phrase" in kind:
                kind = {"phrase": _dictionary(kind["phrase"])}
            self.kinds[name] = kind

    def draw(self, name, rng, held_out):
        if name not in self.kinds:
            raise TaskError(f"the slot {{{name}}} names no value kind")
        (kind, spec), = self.kinds[name].items()
        if kind == "time":
            return _time(rng)
        if kind == "integer":
            low, high = spec
            n = rng.randint(low, high)
            return (_NUMBER_WORDS[n] if n < len(_NUMBER_WORDS) and rng.random() < 0.3 else str(n)), n
        if kind == "enum":
            value = rng.choice(sorted(spec))
            return rng.choice(spec[value]), value
        if kind == "phrase":
            words = [w for i, w in enumerate(spec) if (i % 5 == 4) == held_out]
            phrase = " ".join(rng.choice(words) for _ in range(rng.randint(1, 4)))
            return phrase, phrase
        words = [w for i, w in enumerate(spec) if (i % 5 == 4) == held_out] or spec
        word = rng.choice(words)
        return word, word


def _properties(tool):
    function = tool.get("function", tool)
    parameters = function.get("parameters", {})
    return function["name"], list(parameters.get("properties", {})), parameters.get("required", [])


def _fill(template, values, rng, held_out):
    """The request's text and each slot's argument value."""
    drawn = {}
    text = _SLOT.sub(lambda m: drawn.setdefault(m.group(1), values.draw(m.group(1), rng, held_out))[0],
                     template)
    return text, {slot: value for slot, (_, value) in drawn.items()}


def generate(tools, tasks, count, seed, held_out):
    """`count` examples of the split, as {"query", "call"} (call: compact JSON text, or None).
    One in five asks for no tool."""
    values = Values(tasks.get("values", {}))
    order = {name: props for name, props, _ in map(_properties, tools)}
    required = {name: needed for name, _, needed in map(_properties, tools)}
    for name in tasks.get("tools", {}):
        if name not in order:
            raise TaskError(f"tools.{name}: not a tool of the tools file")
    templates = []
    for name, entries in sorted(tasks.get("tools", {}).items()):
        sentences = [(text, entry) for entry in entries for text in expand(entry["text"])]
        for text, entry in sentences:
            if _held_out(text) == held_out or len(sentences) < 4:
                used = {argument: slot for argument, slot in entry.get("arguments", {}).items() if f"{{{slot}}}" in text}
                missing = [r for r in required[name] if r not in used and r not in entry.get("fixed", {})]
                if missing:
                    raise TaskError(f"tools.{name}: {text!r} gives no {missing[0]}, which the tool requires")
                templates.append((name, {**entry, "text": text, "arguments": used}))
    nones = [t for n in tasks.get("none", []) for t in expand(n) if _held_out(t) == held_out]
    if not templates:
        raise TaskError("no templates for this split")
    rng = random.Random(seed * 2 + int(held_out))
    out = []
    for _ in range(count):
        if nones and rng.random() < 0.2:
            out.append({"query": _fill(rng.choice(nones), values, rng, held_out)[0], "call": None})
            continue
        name, entry = rng.choice(templates)
        text, slots = _fill(entry["text"], values, rng, held_out)
        given = {argument: slots[slot] for argument, slot in entry.get("arguments", {}).items()}
        given.update(entry.get("fixed", {}))
        unknown = sorted(set(given) - set(order[name]))
        if unknown:
            raise TaskError(f"tools.{name}: {unknown[0]} is not an argument of the tool")
        # The schema's order: the only one a compiled call takes.
        arguments = {k: given[k] for k in order[name] if k in given}
        call = json.dumps({"name": name, "arguments": arguments}, separators=(",", ":"), ensure_ascii=False)
        out.append({"query": text, "call": call})
    return out
