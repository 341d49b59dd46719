#!/usr/bin/python3
"""needle_oracle.py: an independent reference ("oracle") for the Needle 3 SAN ladder model.

This is a second implementation of the forward pass, written in plain Python + numpy straight
from the written contract only:

    docs/model.md  (config, tensor names, forward pass, ladder)
    docs/cq-format.md     ("Decode", "Pre-quantized input", default codebooks)

It was written without looking at any other implementation (in particular not at the C++ code of
needlec), so that agreement between the two is evidence that both read the spec the same way.
Speed is secondary: everything is computed in float64, over the whole token sequence at once,
with dense matrices.

Usage:
    /usr/bin/python3 needle_oracle.py MODEL_DIR --tokens 1,2,3 [--layers D] [-o OUT.json]

MODEL_DIR holds config.json and model.safetensors. The output is one JSON object
    {"position": T, "logits": [V floats, last position], "confidence": float,
     "embedding": [embedding_dim floats]}
With an empty token list (--tokens "") it prints the "before any token" values of model.md:
logits and embedding zeros, confidence sigmoid(confidence.bias).

Only the standard library and numpy are used.
"""

import argparse
import json
import math
import os
import struct
import sys

import numpy as np

G = 128  # CQ group size

# cq.md default codebooks (unit-norm-group units); each value rounded to f32 is the exact entry.
DEFAULT_CODEBOOKS = {
    2: [-0.13317214, -0.039902091, 0.0400352813, 0.133460447],
    3: [-0.189261362, -0.117884994, -0.0661496893, -0.0210134611, 0.0221010316, 0.0667850673,
        0.118262075, 0.189826027],
    4: [-0.239531547, -0.180706054, -0.140957937, -0.109012552, -0.0815129653, -0.0565276518,
        -0.0329391509, -0.0101161096, 0.0127108004, 0.0357079171, 0.0594582558, 0.0849770233,
        0.112741619, 0.144696921, 0.184239000, 0.242273703],
}

M32 = 0xFFFFFFFF


class OracleError(Exception):
    pass


# ----------------------------------------------------------------------------------------------
# safetensors

_DTYPES = {
    "F32": np.dtype("<f4"),
    "F16": np.dtype("<f2"),
    "BF16": np.dtype("<u2"),  # converted by hand below
    "U8": np.dtype("u1"),
    "I32": np.dtype("<i4"),
}
_FLOAT_DTYPES = ("F32", "F16", "BF16")


def load_safetensors(path):
    """Returns ({name: (dtype_str, numpy array in its stored dtype)}, metadata dict)."""
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 8:
        raise OracleError("%s: too short for a safetensors header" % path)
    (n,) = struct.unpack("<Q", blob[:8])
    if 8 + n > len(blob):
        raise OracleError("%s: header length %d runs past the end of the file" % (path, n))
    header = json.loads(blob[8:8 + n].decode("utf-8"))
    base = 8 + n
    metadata = header.pop("__metadata__", None) or {}
    tensors = {}
    for name, info in header.items():
        dt = info["dtype"]
        if dt not in _DTYPES:
            raise OracleError("%s: tensor %s has unsupported dtype %s" % (path, name, dt))
        shape = tuple(int(s) for s in info["shape"])
        begin, end = (int(o) for o in info["data_offsets"])
        npdt = _DTYPES[dt]
        count = int(np.prod(shape, dtype=np.int64)) if shape else 1
        if end - begin != count * npdt.itemsize or base + end > len(blob):
            raise OracleError("%s: tensor %s has bad data_offsets" % (path, name))
        arr = np.frombuffer(blob, dtype=npdt, count=count, offset=base + begin).reshape(shape)
        tensors[name] = (dt, arr)
    return tensors, metadata


def to_float64(dt, arr):
    if dt == "BF16":
        bits = arr.astype(np.uint32) << np.uint32(16)
        return bits.view(np.float32).astype(np.float64)
    return arr.astype(np.float64)


# ----------------------------------------------------------------------------------------------
# CQ decode (cq.md "Decode" and "Pre-quantized input")

def hadamard(n):
    """Sylvester Walsh-Hadamard matrix scaled by 1/sqrt(n): H[a][b] = (-1)^popcount(a&b)/sqrt(n)."""
    a = np.arange(n)
    pc = np.zeros((n, n), dtype=np.int64)
    ab = a[:, None] & a[None, :]
    while ab.any():
        pc += ab & 1
        ab = ab >> 1
    return np.where(pc % 2 == 0, 1.0, -1.0) / math.sqrt(n)


_H128 = hadamard(G)


def codebook_for(bits, metadata):
    key = "cq_codebook_%d" % bits
    if key in metadata:
        vals = [float(v) for v in metadata[key].split(",") if v.strip() != ""]
    else:
        vals = DEFAULT_CODEBOOKS[bits]
    cb = np.array(vals, dtype=np.float32)
    if len(cb) != (1 << bits):
        raise OracleError("codebook %s has %d entries, want %d" % (key, len(cb), 1 << bits))
    if np.any(np.diff(cb) < 0):
        raise OracleError("codebook %s is not sorted ascending" % key)
    return cb.astype(np.float64)


def unpack_indices(packed, bits):
    """packed: U8 [..., nbytes]. Indices are a little-endian bit stream: index k occupies bits
    [b*k, b*k+b) of the row, bit i of the row being bit (i mod 8) of byte i/8. For b = 2 and 4
    this is exactly cq.md's "index k at bits [b*(k mod (8/b))...] of byte k/(8/b)"; for b = 3 it
    is "each 8 indices in 3 bytes, LSB first"."""
    lead = packed.shape[:-1]
    nbytes = packed.shape[-1]
    if (nbytes * 8) % bits:
        raise OracleError("packed row of %d bytes is not a whole number of %d-bit indices"
                          % (nbytes, bits))
    cp = nbytes * 8 // bits
    bitarr = np.unpackbits(packed.reshape(-1, nbytes), axis=-1, bitorder="little")
    bitarr = bitarr.reshape(-1, cp, bits).astype(np.int64)
    idx = np.zeros(bitarr.shape[:2], dtype=np.int64)
    for j in range(bits):
        idx |= bitarr[:, :, j] << j
    return idx.reshape(lead + (cp,))


def decode_cq(idx_packed, norms_f16, bits, codebook, C):
    """w_hat = H (c[idx] * n16) per group of G along the last dimension; padding dropped."""
    idx = unpack_indices(idx_packed, bits)
    lead = idx.shape[:-1]
    cp = idx.shape[-1]
    if cp % G or cp < C or cp - C >= G:
        raise OracleError("CQ tensor has %d padded columns for logical %d" % (cp, C))
    ng = cp // G
    norms = norms_f16.astype(np.float64)
    if norms.shape != lead + (ng,):
        raise OracleError("CQ norm shape %s does not match indices %s" % (norms.shape, idx.shape))
    r = codebook[idx].reshape(lead + (ng, G)) * norms[..., None]
    w = r @ _H128.T  # per group: w = H r (row vectors, so r @ H^T)
    return w.reshape(lead + (cp,))[..., :C]


# ----------------------------------------------------------------------------------------------
# weights

class Weights:
    def __init__(self, path):
        self.tensors, self.metadata = load_safetensors(path)
        self.path = path

    def has(self, name):
        return name in self.tensors or (name + ".cq_idx") in self.tensors

    def get(self, name, shape):
        """A float tensor (as float64) of the given logical shape. CQ tensors may arrive either
        as float (used as is) or as name.cq_idx / .cq_norm / .cq_bits (decoded)."""
        shape = tuple(shape)
        if name in self.tensors:
            dt, arr = self.tensors[name]
            if dt not in _FLOAT_DTYPES:
                raise OracleError("%s: tensor %s has dtype %s, want a float" % (self.path, name, dt))
            w = to_float64(dt, arr)
        elif (name + ".cq_idx") in self.tensors:
            try:
                _, idx = self.tensors[name + ".cq_idx"]
                _, norm = self.tensors[name + ".cq_norm"]
                _, bits = self.tensors[name + ".cq_bits"]
            except KeyError as e:
                raise OracleError("%s: pre-quantized %s lacks %s" % (self.path, name, e))
            b = int(bits.reshape(-1)[0])
            if b not in (2, 3, 4):
                raise OracleError("%s: %s.cq_bits = %d" % (self.path, name, b))
            w = decode_cq(idx, norm, b, codebook_for(b, self.metadata), shape[-1])
        else:
            raise OracleError("%s: missing tensor %s" % (self.path, name))
        if w.shape != shape:
            raise OracleError("%s: tensor %s has shape %s, want %s"
                              % (self.path, name, list(w.shape), list(shape)))
        return w

    def get_int(self, name, shape):
        dt, arr = self.tensors[name]
        if dt != "I32" or arr.shape != tuple(shape):
            raise OracleError("%s: tensor %s must be I32 %s" % (self.path, name, list(shape)))
        return arr.astype(np.int64)


# ----------------------------------------------------------------------------------------------
# config and ladder

class Config:
    def __init__(self, d):
        self.raw = d
        self.V = int(d["vocab_size"])
        self.D = int(d["d_model"])
        self.Hq = int(d["num_heads"])
        self.Hkv = int(d["num_kv_heads"])
        self.dqk = int(d["qk_head_dim"])
        self.dv = int(d["v_head_dim"])
        self.L = int(d["num_layers"])
        self.max_seq_len = int(d["max_seq_len"])
        self.theta = float(d["rope_theta"])
        self.W = int(d.get("sliding_window", 0))
        self.global_layers = [int(x) for x in d.get("global_layers", [])]
        self.engram_layers = [int(x) for x in d.get("engram_layers", [])]
        self.orders = [int(x) for x in d.get("engram_orders", [])]
        self.slots = int(d.get("engram_slots", 0))
        eh = int(d.get("engram_heads", 0))
        if self.orders:
            if eh == 0:
                eh = max(1, self.D // (len(self.orders) * 128))
            self.Eh = eh
            if self.D % (len(self.orders) * eh):
                raise OracleError("config: engram_heads: d_model not divisible by orders*heads")
            self.sub_dim = self.D // (len(self.orders) * eh)
        else:
            self.Eh = eh
            self.sub_dim = 0
        if self.engram_layers and not self.orders:
            raise OracleError("config: engram_layers given without engram_orders")
        self.lanes = int(d.get("mhc_lanes", 4))
        if self.lanes != 4:
            raise OracleError("config: mhc_lanes must be 4")
        self.taps = int(d.get("qkv_conv_taps", 0))
        self.emb_dim = int(d["embedding_dim"])
        self.emb_K = int(d["embedding_probes"])
        self.emb_Q = int(d["embedding_queries"])
        self.conf_K = int(d["confidence_probes"])
        self.conf_Q = int(d["confidence_queries"])
        self.pad = int(d.get("pad_token_id", 0))
        self.eps = float(d.get("rms_eps", 1e-6))
        self.ladder_order = d.get("ladder_order")
        if self.ladder_order is not None:
            self.ladder_order = [int(x) for x in self.ladder_order]
            if sorted(self.ladder_order) != list(range(self.L)):
                raise OracleError("config: ladder_order is not a permutation of 0..L-1")
        if self.Hq % self.Hkv:
            raise OracleError("config: num_kv_heads does not divide num_heads")
        # MLP sizes: n = 2^m >= D, ba = 2^floor(m/2), bb = n / ba
        m = 0
        while (1 << m) < self.D:
            m += 1
        self.n = 1 << m
        self.ba = 1 << (m // 2)
        self.bb = self.n // self.ba

    def order(self):
        return self.ladder_order if self.ladder_order is not None else bisection_order(self.L)


def bisection_order(L):
    """Start [0, L-1]; repeatedly split the widest gap between adjacent chosen ids (ties:
    leftmost) at floor((a+b)/2)."""
    if L == 1:
        return [0]
    order = [0, L - 1]
    chosen = [0, L - 1]
    while len(order) < L:
        best = None
        for a, b in zip(chosen, chosen[1:]):
            if best is None or (b - a) > (best[1] - best[0]):
                best = (a, b)
        a, b = best
        mid = (a + b) // 2
        order.append(mid)
        chosen = sorted(chosen + [mid])
    return order


# ----------------------------------------------------------------------------------------------
# small helpers

def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def silu(x):
    return x * sigmoid(x)


def softmax(x, axis=-1):
    x = x - np.max(x, axis=axis, keepdims=True)
    e = np.exp(x)
    return e / np.sum(e, axis=axis, keepdims=True)


def logsumexp(x, axis):
    mx = np.max(x, axis=axis, keepdims=True)
    return mx + np.log(np.sum(np.exp(x - mx), axis=axis, keepdims=True))


def unit(x, eps):
    """x / sqrt(mean(x^2) + eps) over the last axis."""
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)


def zc(x, s, eps):
    """(1 + s) * x / sqrt(mean(x^2) + eps) over the last axis."""
    return (1.0 + s) * unit(x, eps)


def causal_taps(z, taps):
    """z [T, C], taps [n, C]: z'_t = sum_{i<n} taps[i] * z_{t-i} (terms before 0 dropped)."""
    if taps is None:
        return z
    out = np.zeros_like(z)
    T = z.shape[0]
    for i in range(taps.shape[0]):
        if i < T:
            out[i:] += taps[i] * z[:T - i]
    return out


# ----------------------------------------------------------------------------------------------
# engram hash

def engram_slot(tokens, t, oi, h, order, Eh, slots):
    """model.md step 2: the slot of (order index oi, order `order`, head h) at position t."""
    seed = (0x9E3779B9 * (oi * Eh + h + 1)) & M32
    acc = seed
    for i in range(order):
        tok = tokens[t - i] if t - i >= 0 else 0
        acc = ((acc ^ (tok & M32)) * 0x01000193) & M32
    acc ^= acc >> 15
    return acc % slots


# ----------------------------------------------------------------------------------------------
# the model

class Model:
    def __init__(self, model_dir):
        with open(os.path.join(model_dir, "config.json")) as f:
            self.cfg = Config(json.load(f))
        self.w = Weights(os.path.join(model_dir, "model.safetensors"))
        c = self.cfg
        self.E = self.w.get("embed.weight", (c.V, c.D))
        if self.w.has("mlp.p1"):
            self.p1 = self.w.get_int("mlp.p1", (c.n,))
        else:
            self.p1 = np.random.RandomState(11).permutation(c.n)
        if self.w.has("mlp.p2"):
            self.p2 = self.w.get_int("mlp.p2", (c.n,))
        else:
            self.p2 = np.random.RandomState(13).permutation(c.n)
        self._rope_cache = {}

    # -- weights per block ------------------------------------------------------------------
    def block_weights(self, j):
        c, w = self.cfg, self.w
        b = "blocks.%d." % j
        r = {}
        r["attn_norm"] = w.get(b + "attn_norm", (c.D,))
        r["post_attn_norm"] = w.get(b + "post_attn_norm", (c.D,))
        r["mlp_norm"] = w.get(b + "mlp_norm", (c.D,))
        r["q"] = w.get(b + "attn.q", (c.Hq * c.dqk, c.D))
        r["k"] = w.get(b + "attn.k", (c.Hkv * c.dqk, c.D))
        r["v"] = w.get(b + "attn.v", (c.Hkv * c.dv, c.D))
        r["gate"] = w.get(b + "attn.gate", (c.Hq * c.dv, c.D))
        r["o"] = w.get(b + "attn.o", (c.D, c.Hq * c.dv))
        if c.taps > 0:
            r["q_taps"] = w.get(b + "attn.q_taps", (c.taps, c.Hq * c.dqk))
            r["k_taps"] = w.get(b + "attn.k_taps", (c.taps, c.Hkv * c.dqk))
            r["v_taps"] = w.get(b + "attn.v_taps", (c.taps, c.Hkv * c.dv))
        else:
            r["q_taps"] = r["k_taps"] = r["v_taps"] = None
        r["q_norm"] = w.get(b + "attn.q_norm", (c.dqk,))
        r["k_norm"] = w.get(b + "attn.k_norm", (c.dqk,))
        r["attn_gate"] = w.get(b + "attn_gate", (1,))
        for nm in ("w1a", "w2a", "w3a"):
            r[nm] = w.get(b + "mlp." + nm, (c.ba, c.ba))
        for nm in ("w1b", "w2b", "w3b"):
            r[nm] = w.get(b + "mlp." + nm, (c.bb, c.bb))
        for nm in ("d1", "d2", "b2", "d3", "d4"):
            r[nm] = w.get(b + "mlp." + nm, (c.n,))
        r["cond_v"] = w.get(b + "mlp.cond_v", (c.D, 8))
        r["cond_u"] = w.get(b + "mlp.cond_u", (8, c.n))
        r["phi_pre"] = w.get(b + "mhc.phi_pre", (4, 4 * c.D))
        r["phi_post"] = w.get(b + "mhc.phi_post", (4, 4 * c.D))
        r["phi_res"] = w.get(b + "mhc.phi_res", (16, 4 * c.D))
        r["a"] = w.get(b + "mhc.a", (3,))
        r["b_pre"] = w.get(b + "mhc.b_pre", (4,))
        r["b_post"] = w.get(b + "mhc.b_post", (4,))
        r["b_res"] = w.get(b + "mhc.b_res", (4, 4))
        return r

    # -- engram -------------------------------------------------------------------------------
    def engram(self, s, tokens):
        """Returns (k [T, D], v [T, D]) of engram site s."""
        c, w = self.cfg, self.w
        T = len(tokens)
        ntab = len(c.orders) * c.Eh
        tables = w.get("engram.%d.tables" % s, (ntab, c.slots, c.sub_dim))
        key = w.get("engram.%d.key" % s, (c.D, c.D))
        value = w.get("engram.%d.value" % s, (c.D, c.D))
        taps = w.get("engram.%d.taps" % s, (4, c.D))
        e = np.zeros((T, c.D))
        for t in range(T):
            parts = []
            for oi, o in enumerate(c.orders):
                for h in range(c.Eh):
                    tab = oi * c.Eh + h
                    if t < o - 1:
                        parts.append(np.zeros(c.sub_dim))
                    else:
                        slot = engram_slot(tokens, t, oi, h, o, c.Eh, c.slots)
                        parts.append(tables[tab, slot])
            e[t] = np.concatenate(parts)
        k = e @ key.T
        vp = e @ value.T
        delta = max(c.orders)
        v = np.zeros_like(vp)
        for i in range(4):
            sh = delta * i
            if sh < T:
                v[sh:] += taps[i] * vp[:T - sh]
        return k, v

    # -- attention ----------------------------------------------------------------------------
    def rope_tables(self, T, d):
        """cos/sin [T, d/2]: angle t * theta^(-2f/d) formed in double, cos/sin rounded to f32."""
        key = (T, d)
        if key not in self._rope_cache:
            half = d // 2
            t = np.arange(T, dtype=np.float64)[:, None]
            f = np.arange(half, dtype=np.float64)[None, :]
            ang = t * np.power(self.cfg.theta, -2.0 * f / d)
            cos = np.cos(ang).astype(np.float32).astype(np.float64)
            sin = np.sin(ang).astype(np.float32).astype(np.float64)
            self._rope_cache[key] = (cos, sin)
        return self._rope_cache[key]

    def rope(self, x):
        """x [T, heads, d]; rotate-half: (x1, x2) -> (x1 cos - x2 sin, x2 cos + x1 sin)."""
        T, _, d = x.shape
        cos, sin = self.rope_tables(T, d)
        cos = cos[:, None, :]
        sin = sin[:, None, :]
        x1 = x[..., : d // 2]
        x2 = x[..., d // 2:]
        return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)

    def attention(self, bw, x, is_global):
        c = self.cfg
        T = x.shape[0]
        s = zc(x, bw["attn_norm"], c.eps)
        q = causal_taps(s @ bw["q"].T, bw["q_taps"])
        k = causal_taps(s @ bw["k"].T, bw["k_taps"])
        v = causal_taps(s @ bw["v"].T, bw["v_taps"])
        q = q.reshape(T, c.Hq, c.dqk)
        k = k.reshape(T, c.Hkv, c.dqk)
        v = v.reshape(T, c.Hkv, c.dv)
        q = self.rope(zc(q, bw["q_norm"], c.eps))
        k = self.rope(zc(k, bw["k_norm"], c.eps))
        tq = np.arange(T)[:, None]
        tk = np.arange(T)[None, :]
        allowed = tk <= tq
        if not is_global:
            allowed &= (tq - tk) < c.W
        group = c.Hq // c.Hkv
        o = np.zeros((T, c.Hq, c.dv))
        for h in range(c.Hq):
            g = h // group
            sc = (q[:, h, :] @ k[:, g, :].T) / math.sqrt(c.dqk)
            sc = np.where(allowed, sc, -np.inf)
            alpha = softmax(sc, axis=-1)
            o[:, h, :] = alpha @ v[:, g, :]
        o = o.reshape(T, c.Hq * c.dv)
        gate = sigmoid(s @ bw["gate"].T)
        return (o * gate) @ bw["o"].T

    # -- MLP ----------------------------------------------------------------------------------
    def mlp(self, bw, m):
        c = self.cfg
        T = m.shape[0]

        def K(z, wa, wb):  # reshape to [ba, bb] row-major, wa^T Z wb, flatten
            Z = z.reshape(T, c.ba, c.bb)
            return (wa.T @ Z @ wb).reshape(T, c.n)

        cond = 1.0 + softmax(m @ bw["cond_v"], axis=-1) @ bw["cond_u"]
        z = np.zeros((T, c.n))
        z[:, : c.D] = m
        z = K(bw["d1"] * z, bw["w1a"], bw["w1b"])[:, self.p1]
        z = K(silu(bw["d2"] * cond * z + bw["b2"]), bw["w2a"], bw["w2b"])[:, self.p2]
        z = K(bw["d3"] * z, bw["w3a"], bw["w3b"])
        return (bw["d4"] * z)[:, : c.D]

    # -- whole forward --------------------------------------------------------------------------
    def kept_blocks(self, depth):
        return sorted(self.cfg.order()[:depth])

    def forward(self, tokens, depth=None):
        """Returns a dict: kept (block ids), x0 [T, D], cells [list of [T, D]], xf [T, D]
        (final-normed mean lane, every position), logits [T, V]."""
        c = self.cfg
        if depth is None:
            depth = c.L
        if not 1 <= depth <= c.L:
            raise OracleError("--layers %d out of range 1..%d" % (depth, c.L))
        T = len(tokens)
        if T > c.max_seq_len:
            raise OracleError("%d tokens exceed max_seq_len %d" % (T, c.max_seq_len))
        for tok in tokens:
            if not 0 <= tok < c.V:
                raise OracleError("token %d out of range 0..%d" % (tok, c.V - 1))
        kept = self.kept_blocks(depth)
        D = c.D
        x0 = self.E[np.array(tokens, dtype=np.int64)].reshape(T, D) * math.sqrt(D)
        lanes = [x0.copy() for _ in range(4)]
        cells = []
        for p, j in enumerate(kept):
            bw = self.block_weights(j)
            one = np.zeros(4)
            one[p % 4] = 1.0
            a_pre, a_post, a_res = bw["a"]
            nx = unit(np.concatenate(lanes, axis=-1), c.eps)  # [T, 4D]
            h_pre = sigmoid(a_pre * (nx @ bw["phi_pre"].T) + bw["b_pre"] + 8.0 * one - 4.0)
            u = sum(h_pre[:, l:l + 1] * lanes[l] for l in range(4))
            x = u
            if j in c.engram_layers:
                site = c.engram_layers.index(j)
                ek, ev = self.engram(site, tokens)
                gate = np.sum(unit(u, c.eps) * unit(ek, c.eps), axis=-1, keepdims=True)
                x = u + sigmoid(gate / math.sqrt(D)) * ev
            is_global = (c.W == 0) or (j in c.global_layers)
            a = self.attention(bw, x, is_global)
            x1 = x + sigmoid(bw["attn_gate"][0]) * zc(a, bw["post_attn_norm"], c.eps)
            y_mlp = self.mlp(bw, zc(x1, bw["mlp_norm"], c.eps))
            y = x1 + y_mlp - u
            h_post = 2.0 * sigmoid(a_post * (nx @ bw["phi_post"].T) + bw["b_post"]
                                   - 4.0 * (1.0 - one))
            logits_res = a_res * (nx @ bw["phi_res"].T).reshape(T, 4, 4) + bw["b_res"]
            for _ in range(20):
                logits_res = logits_res - logsumexp(logits_res, axis=2)  # row-wise
                logits_res = logits_res - logsumexp(logits_res, axis=1)  # column-wise
            Hm = np.exp(logits_res)  # [T, 4, 4], Hm[t, i, k]
            new_lanes = []
            for i in range(4):
                li = sum(Hm[:, i, k:k + 1] * lanes[k] for k in range(4))
                new_lanes.append(li + h_post[:, i:i + 1] * y)
            lanes = new_lanes
            cells.append(sum(lanes) / 4.0)
        mean = sum(lanes) / 4.0
        xf = zc(mean, self.w.get("final_norm", (D,)), c.eps)
        logits = xf @ self.E.T
        return {"kept": kept, "x0": x0, "cells": cells, "xf": xf, "logits": logits}

    # -- heads ----------------------------------------------------------------------------------
    def head(self, prefix, K, Q, out_rows, kept, rows_cells, tokens):
        """Pooled vector (Q*D) of head `prefix` (confidence / embedding_head) and its proj."""
        c, w = self.cfg, self.w
        D = c.D
        probes = w.get(prefix + ".probes", (c.L + 1, K, D))
        gain = w.get(prefix + ".gain", (c.L + 1, K))
        query = w.get(prefix + ".query", (Q, D))
        row_bias = w.get(prefix + ".row_bias", (Q, c.L + 1, K))
        proj = w.get(prefix + ".proj", (out_rows, Q * D))
        rows = [0] + [j + 1 for j in kept]
        keep = np.array([tok != c.pad for tok in tokens], dtype=bool)
        R = np.zeros((len(rows), K, D))
        if keep.any():
            for ri, (r, cell) in enumerate(zip(rows, rows_cells)):
                ck = cell[keep]  # [T', D]
                for k in range(K):
                    alpha = softmax(ck @ probes[r, k] / math.sqrt(D))
                    R[ri, k] = unit(alpha @ ck, c.eps) * gain[r, k]
        pooled = []
        for q in range(Q):
            sc = (R @ query[q]) / math.sqrt(D) + row_bias[q][rows]  # [rows, K]
            wq = softmax(sc.reshape(-1)).reshape(sc.shape)
            pooled.append(np.einsum("rk,rkd->d", wq, R))
        pooled = np.concatenate(pooled)
        return proj @ pooled

    def run(self, tokens, depth=None):
        """The oracle's answer: dict(position, logits, confidence, embedding)."""
        c = self.cfg
        conf_bias = self.w.get("confidence.bias", (1,))[0]
        if len(tokens) == 0:
            if depth is not None and not 1 <= depth <= c.L:
                raise OracleError("--layers %d out of range 1..%d" % (depth, c.L))
            return {"position": 0, "logits": [0.0] * c.V,
                    "confidence": float(sigmoid(conf_bias)),
                    "embedding": [0.0] * c.emb_dim}
        f = self.forward(tokens, depth)
        rows_cells = [f["x0"]] + f["cells"]
        zconf = self.head("confidence", c.conf_K, c.conf_Q, 1, f["kept"], rows_cells, tokens)
        confidence = float(sigmoid(zconf[0] + conf_bias))
        pe = self.head("embedding_head", c.emb_K, c.emb_Q, c.emb_dim, f["kept"], rows_cells,
                       tokens)
        emb = pe / math.sqrt(float(np.sum(pe * pe)) + 1e-12)
        return {"position": len(tokens),
                "logits": [float(v) for v in f["logits"][-1]],
                "confidence": confidence,
                "embedding": [float(v) for v in emb]}


# ----------------------------------------------------------------------------------------------

def parse_tokens(s):
    s = s.strip()
    if s == "":
        return []
    return [int(t) for t in s.split(",") if t.strip() != ""]


def main(argv=None):
    ap = argparse.ArgumentParser(description="Needle SAN ladder oracle (numpy, from the spec)")
    ap.add_argument("model_dir")
    ap.add_argument("--tokens", required=True, help="comma-separated token ids ('' = none)")
    ap.add_argument("--layers", type=int, default=None, help="depth (default: num_layers)")
    ap.add_argument("-o", "--output", default=None, help="write JSON here instead of stdout")
    args = ap.parse_args(argv)
    try:
        model = Model(args.model_dir)
        out = model.run(parse_tokens(args.tokens), args.layers)
    except (OracleError, KeyError, ValueError, OSError) as e:
        sys.stderr.write("needle_oracle: error: %s\n" % e)
        return 1
    text = json.dumps(out)
    if args.output:
        with open(args.output, "w") as f:
            f.write(text + "\n")
    else:
        sys.stdout.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
