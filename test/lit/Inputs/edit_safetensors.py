#!/usr/bin/python3
"""Makes broken safetensors files for the error tests: edits a valid file's header.

    edit_safetensors.py SRC DST [--drop NAME] [--add NAME DTYPE D0,D1,..] [--fill VALUE]
                                [--offsets NAME BEGIN END] [--header-length N]
"""
import argparse
import json
import struct

SIZES = {"F32": 4, "F16": 2, "BF16": 2, "U8": 1, "I32": 4}

p = argparse.ArgumentParser()
p.add_argument("src")
p.add_argument("dst")
p.add_argument("--drop")
p.add_argument("--add", nargs=3, metavar=("NAME", "DTYPE", "SHAPE"))
p.add_argument("--fill", type=float, default=0.0, help="value of every element of --add (F32/I32)")
p.add_argument("--offsets", nargs=3, metavar=("NAME", "BEGIN", "END"))
p.add_argument("--header-length", type=int)
a = p.parse_args()

raw = open(a.src, "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
header = json.loads(raw[8:8 + n])
data = bytearray(raw[8 + n:])
if a.drop:
    del header[a.drop]
if a.add:
    name, dtype, shape = a.add
    dims = [int(d) for d in shape.split(",")]
    count = 1
    for d in dims:
        count *= d
    fmt = {"F32": "<f", "I32": "<i"}.get(dtype)
    extra = b"".join(struct.pack(fmt, a.fill if dtype == "F32" else int(a.fill)) for _ in range(count)) \
        if fmt else bytes(count * SIZES[dtype])
    header[name] = {"dtype": dtype, "shape": dims, "data_offsets": [len(data), len(data) + len(extra)]}
    data += extra
if a.offsets:
    header[a.offsets[0]]["data_offsets"] = [int(a.offsets[1]), int(a.offsets[2])]
text = json.dumps(header).encode()
length = a.header_length if a.header_length is not None else len(text)
open(a.dst, "wb").write(struct.pack("<Q", length) + text + bytes(data))
