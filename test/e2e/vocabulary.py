"""What the end-to-end drivers (check_text.py, check_calls.py) derive from a tokenizer.json on their
own: each token's bytes in a text."""
import json


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
