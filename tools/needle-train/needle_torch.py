"""The needle model (docs/model.md) in PyTorch, for training: the same forward pass as the
reference interpreter, on whole sequences, differentiable, at any ladder depth. Float weights
only (the trained files are quantized by needlec, as any float model is); the tensors keep the
names and shapes of docs/model.md, so a state dict is written as model.safetensors unchanged.

Checked against the reference interpreter (needle-run) by test/train/check_forward.py."""
import json
import math
import struct

import numpy as np
import torch
import torch.nn.functional as F

LANES = 4


# ---- safetensors (the header, then the raw little-endian data) ----

_DTYPES = {"F32": (torch.float32, 4), "F16": (torch.float16, 2), "BF16": (torch.bfloat16, 2),
           "I32": (torch.int32, 4)}


def read_safetensors(path):
    """{name: tensor} (floats as float32) and the __metadata__ of a .safetensors file."""
    with open(path, "rb") as f:
        data = f.read()
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + size])
    metadata = header.pop("__metadata__", {})
    tensors = {}
    for name, entry in header.items():
        dtype, width = _DTYPES[entry["dtype"]]
        begin, end = entry["data_offsets"]
        raw = bytearray(data[8 + size + begin:8 + size + end])
        tensor = torch.frombuffer(raw, dtype=dtype).reshape(entry["shape"]) if raw else torch.zeros(
            entry["shape"], dtype=dtype)
        tensors[name] = tensor.float() if tensor.is_floating_point() else tensor.clone()
    return tensors, metadata


def write_safetensors(path, tensors, metadata=None):
    """Writes {name: tensor} (float32 or int32), names sorted, so the same weights give the same bytes."""
    header, blobs, offset = {}, [], 0
    for name in sorted(tensors):
        t = tensors[name].detach().contiguous().cpu()
        t = t.to(torch.int32) if not t.is_floating_point() else t.to(torch.float32)
        blob = t.numpy().astype("<i4" if t.dtype == torch.int32 else "<f4").tobytes()
        header[name] = {"dtype": "I32" if t.dtype == torch.int32 else "F32", "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    if metadata:
        header["__metadata__"] = {k: str(v) for k, v in metadata.items()}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for blob in blobs:
            f.write(blob)


# ---- the fixed parts: ladder order, MLP sizes and permutations, engram slots ----

def bisection_order(layers):
    """docs/model.md, "The ladder": 0, L-1, then the widest gap split at its middle, leftmost first."""
    order = [0, layers - 1] if layers > 1 else [0]
    while len(order) < layers:
        chosen = sorted(order)
        gaps = [(b - a, -a, a, b) for a, b in zip(chosen, chosen[1:]) if b - a > 1]
        _, _, a, b = max(gaps)
        order.append((a + b) // 2)
    return order


def kept_blocks(config, depth):
    order = config.get("ladder_order") or bisection_order(config["num_layers"])
    return sorted(order[:depth])


def mlp_sizes(d_model):
    n = 1 << (d_model - 1).bit_length()
    m = n.bit_length() - 1
    ba = 1 << (m // 2)
    return n, ba, n // ba


def engram_slots(config, tokens):
    """For each site's table t (order index oi, head h: t = oi*E_h + h), the slot each position
    reads, or -1 before the order's first whole n-gram: [tables, B, T] int64."""
    orders, heads, slots = config["engram_orders"], engram_heads(config), config["engram_slots"]
    tok = tokens.astype(np.uint64)
    batch, length = tok.shape
    out = np.full((len(orders) * heads, batch, length), -1, dtype=np.int64)
    mask = np.uint64(0xFFFFFFFF)
    for oi, order in enumerate(orders):
        for h in range(heads):
            acc = np.full((batch, length), (0x9E3779B9 * (oi * heads + h + 1)) & 0xFFFFFFFF, dtype=np.uint64)
            for i in range(order):
                before = np.zeros_like(tok)
                before[:, i:] = tok[:, :length - i]
                acc = ((acc ^ before) * np.uint64(0x01000193)) & mask
            acc ^= acc >> np.uint64(15)
            slot = (acc % np.uint64(slots)).astype(np.int64)
            slot[:, :order - 1] = -1
            out[oi * heads + h] = slot
    return out


def engram_heads(config):
    heads = config.get("engram_heads", 0)
    return heads if heads else max(1, config["d_model"] // (len(config["engram_orders"]) * 128))


# ---- CQ fake quantization (docs/cq-format.md), for training that keeps the accuracy at 2 bits ----

CODEBOOKS = {
    2: [-0.13317214, -0.039902091, 0.0400352813, 0.133460447],
    3: [-0.189261362, -0.117884994, -0.0661496893, -0.0210134611, 0.0221010316, 0.0667850673, 0.118262075,
        0.189826027],
    4: [-0.239531547, -0.180706054, -0.140957937, -0.109012552, -0.0815129653, -0.0565276518, -0.0329391509,
        -0.0101161096, 0.0127108004, 0.0357079171, 0.0594582558, 0.0849770233, 0.112741619, 0.144696921,
        0.184239000, 0.242273703],
}
GROUP = 128


def cq_kind(name):
    """The CQ kind of a tensor (docs/cq-format.md), or None for one that stays float."""
    if name == "embed.weight":
        return "embedding"
    if name.startswith("engram.") and name.rsplit(".", 1)[1] in ("tables", "key", "value"):
        return "engram"
    if name.startswith("blocks.") and name.rsplit(".", 2)[-2:] in (["attn", x] for x in ("q", "k", "v", "gate", "o")):
        return "attn"
    if name.startswith("blocks.") and ".mhc.phi_" in name:
        return "mhc"
    return None


def cq_bits(scheme, name):
    """The bits `scheme` gives the tensor `name` (the longest matching prefix wins), or None."""
    kind = cq_kind(name)
    if kind is None or scheme == "none":
        return None
    bits, longest = None, 0
    for item in scheme.split(","):
        prefix, value = item.split("=")
        if prefix == "default":
            bits = bits if longest else int(value)
        elif (prefix == kind or name == prefix or name.startswith(prefix + ".")) and len(prefix) > longest:
            bits, longest = int(value), len(prefix)
    return bits


def _hadamard(n):
    h = torch.ones(1, 1)
    while h.shape[0] < n:
        h = torch.cat([torch.cat([h, h], 1), torch.cat([h, -h], 1)], 0)
    return h / math.sqrt(n)


def fake_cq(w, bits):
    """w through CQ's quantize and decode, with the straight-through gradient: the forward pass
    sees the weights the compiled model will have, the backward pass updates the float ones."""
    columns = w.shape[-1]
    padded = F.pad(w, (0, -columns % GROUP))
    groups = padded.reshape(*padded.shape[:-1], -1, GROUP)
    h = _hadamard(GROUP)
    r = groups @ h
    norm = r.norm(dim=-1, keepdim=True)
    z = r / norm.clamp(min=1e-12)
    codebook = torch.tensor(CODEBOOKS[bits])
    index = torch.bucketize(z, (codebook[1:] + codebook[:-1]) / 2, right=False)
    decoded = (codebook[index] * norm.half().float()) @ h
    decoded = decoded.reshape(padded.shape)[..., :columns]
    return w + (decoded - w).detach()


# ---- the model ----

def _unit(x, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)


def _zc(x, scale, eps):
    return (1 + scale) * _unit(x, eps)


def _taps(z, taps, stride=1):
    """Causal depthwise taps over time: z_t = sum_i taps[i] * z_(t - stride*i), terms before 0 dropped.
    z: [B, T, C]."""
    out = z * taps[0]
    for i in range(1, taps.shape[0]):
        out = out + F.pad(z, (0, 0, stride * i, 0))[:, :z.shape[1]] * taps[i]
    return out


def _rope_tables(length, dim, theta):
    """cos and sin [T, dim/2], each angle formed in double and rounded to float, as the reference does."""
    t = np.arange(length, dtype=np.float64)[:, None]
    f = np.arange(dim // 2, dtype=np.float64)[None, :]
    angle = t * np.power(float(theta), -2.0 * f / dim)
    return (torch.from_numpy(np.cos(angle).astype(np.float32)), torch.from_numpy(np.sin(angle).astype(np.float32)))


def _rope(x, cos, sin):
    half = x.shape[-1] // 2
    a, b = x[..., :half], x[..., half:]
    return torch.cat([a * cos - b * sin, b * cos + a * sin], dim=-1)


def _sinkhorn_round(m):
    m = m - torch.logsumexp(m, dim=-1, keepdim=True)
    return m - torch.logsumexp(m, dim=-2, keepdim=True)


def _sinkhorn(m):
    """20 rounds in the log domain, as the reference runs them. The gradient flows through the last
    round only (the first 19 are a constant shift of m): the value is the same, and the backward
    pass of 20 rounds of tiny 4 x 4 operations cost an eighth of a training step."""
    with torch.no_grad():
        settled = m
        for _ in range(19):
            settled = _sinkhorn_round(settled)
    return torch.exp(_sinkhorn_round(m + (settled - m).detach()))


def _mix(h, lanes):
    """h [B, T, I, 4] times the lanes [B, T, 4, D]: [B, T, I, D]. A sum of four products, not a
    matmul: as a bmm of one tiny product per token, or one broadcast product, it took most of a step."""
    return sum(h[:, :, :, k, None] * lanes[:, :, None, k] for k in range(LANES))


class NeedleModel(torch.nn.Module):
    """Parameters named as docs/model.md's tensors (dots as in the file)."""

    def __init__(self, config, tensors):
        super().__init__()
        self.config = config
        self.names = sorted(k for k, v in tensors.items() if v.is_floating_point())
        self.params = torch.nn.ParameterList([torch.nn.Parameter(tensors[k].float().clone()) for k in self.names])
        self.index = {k: i for i, k in enumerate(self.names)}
        n = mlp_sizes(config["d_model"])[0]
        self.p1 = tensors["mlp.p1"].long() if "mlp.p1" in tensors else torch.from_numpy(
            np.random.RandomState(11).permutation(n))
        self.p2 = tensors["mlp.p2"].long() if "mlp.p2" in tensors else torch.from_numpy(
            np.random.RandomState(13).permutation(n))
        self.explicit_permutations = "mlp.p1" in tensors
        self.quantized = {}
        self.lora, self.lora_alpha = {}, 1.0

    def w(self, name):
        weight = self.params[self.index[name]]
        if name in self.lora:
            a, b = self.lora[name]
            weight = weight + (self.lora_alpha / a.shape[0]) * (b @ a)  # merged before quantization, as needlec does
        bits = self.quantized.get(name)
        return fake_cq(weight, bits) if bits else weight

    def quantize_aware(self, on=True):
        """From now on (or no longer) the forward pass reads every CQ tensor as the config's
        scheme will quantize it."""
        scheme = self.config.get("quantization", {}).get("scheme", "none")
        self.quantized = {k: cq_bits(scheme, k) for k in self.names if on and cq_bits(scheme, k)}

    def add_lora(self, names, rank, alpha):
        """Freezes every weight and adapts each of `names` by (alpha / rank) B A (docs/model.md, "LoRA
        adapters"): A drawn small, B zero, so training starts from the base model. Returns the new
        parameters, the only ones to train."""
        for param in self.params:
            param.requires_grad_(False)
        self.lora_alpha = float(alpha)
        trained = []
        for name in names:
            out_features, in_features = self.w(name).shape
            a = torch.nn.Parameter(torch.randn(rank, in_features) / math.sqrt(in_features))
            b = torch.nn.Parameter(torch.zeros(out_features, rank))
            self.lora[name] = (a, b)
            trained += [a, b]
        self.lora_params = torch.nn.ParameterList(trained)
        return trained

    def lora_state(self):
        """The adapter's tensors and metadata, as needlec --lora reads them."""
        tensors = {}
        for name, (a, b) in self.lora.items():
            tensors[f"{name}.lora_A"], tensors[f"{name}.lora_B"] = a.detach().clone(), b.detach().clone()
        rank = next(iter(self.lora.values()))[0].shape[0]
        return tensors, {"lora_alpha": self.lora_alpha, "lora_r": rank}

    def state(self):
        """The tensors of model.safetensors: every parameter, and the permutations if the input had them."""
        out = {k: self.w(k).detach().clone() for k in self.names}
        if self.explicit_permutations:
            out["mlp.p1"], out["mlp.p2"] = self.p1.int(), self.p2.int()
        return out

    def forward(self, tokens, depth=None, keep=None):
        """tokens: int64 [B, T]. Returns the logits at every position [B, T, V], the confidence [B]
        and the embedding [B, embedding_dim] at ladder depth `depth`, the heads pooling the positions
        of `keep` [B, T] (default: every one whose token is not the pad, as the model pools)."""
        c = self.config
        eps = c["rms_eps"]
        depth = depth or c["num_layers"]
        kept = kept_blocks(c, depth)
        batch, length = tokens.shape
        d = c["d_model"]
        x0 = F.embedding(tokens, self.w("embed.weight")) * math.sqrt(d)
        slots = engram_slots(c, tokens.numpy())
        lanes = x0.unsqueeze(2).expand(-1, -1, LANES, -1)  # [B, T, lane, D]
        cells = [x0]
        rows = [0]
        cos, sin = _rope_tables(length, c["qk_head_dim"], c["rope_theta"])
        for position, block in enumerate(kept):
            lanes, cell = self.block(block, position, lanes, tokens, slots, cos, sin)
            cells.append(cell)
            rows.append(block + 1)
        xf = _zc(lanes.mean(2), self.w("final_norm"), eps)
        logits = xf @ self.w("embed.weight").t()
        keep = (tokens != c.get("pad_token_id", 0) if keep is None else keep).float()
        confidence = torch.sigmoid(self.head("confidence", cells, rows, keep) @ self.w("confidence.proj").t()
                                   + self.w("confidence.bias")).squeeze(-1)
        p = self.head("embedding_head", cells, rows, keep) @ self.w("embedding_head.proj").t()
        embedding = p / torch.sqrt(p.pow(2).sum(-1, keepdim=True) + 1e-12)
        return logits, confidence, embedding

    def block(self, j, position, lanes, tokens, slots, cos, sin):
        c = self.config
        eps, d = c["rms_eps"], c["d_model"]
        w = lambda name: self.w(f"blocks.{j}.{name}")
        one = F.one_hot(torch.tensor(position % LANES), LANES).float()
        nx = _unit(lanes.flatten(2), eps)
        a = w("mhc.a")
        h_pre = torch.sigmoid(a[0] * (nx @ w("mhc.phi_pre").t()) + w("mhc.b_pre") + 8 * one - 4)
        u = _mix(h_pre.unsqueeze(2), lanes).squeeze(2)
        x = u
        if j in c["engram_layers"]:
            x = u + self.engram(c["engram_layers"].index(j), u, slots)
        s = _zc(x, w("attn_norm"), eps)
        x1 = x + torch.sigmoid(w("attn_gate")) * _zc(self.attention(j, s, cos, sin), w("post_attn_norm"), eps)
        y = x1 + self.mlp(j, _zc(x1, w("mlp_norm"), eps)) - u
        h_post = 2 * torch.sigmoid(a[1] * (nx @ w("mhc.phi_post").t()) + w("mhc.b_post") - 4 * (1 - one))
        res = (nx @ w("mhc.phi_res").t()).reshape(*nx.shape[:-1], LANES, LANES)
        h = _sinkhorn(a[2] * res + w("mhc.b_res"))
        lanes = _mix(h, lanes) + h_post.unsqueeze(-1) * y.unsqueeze(2)
        return lanes, lanes.mean(2)

    def engram(self, site, u, slots):
        c = self.config
        eps, d = c["rms_eps"], c["d_model"]
        w = lambda name: self.w(f"engram.{site}.{name}")
        tables = w("tables")
        rows = []
        for t in range(tables.shape[0]):
            index = torch.from_numpy(slots[t])
            row = tables[t][index.clamp(min=0)]
            rows.append(row * (index >= 0).unsqueeze(-1).float())
        e = torch.cat(rows, dim=-1)
        k = e @ w("key").t()
        v1 = e @ w("value").t()
        v = _taps(v1, w("taps"), stride=max(c["engram_orders"]))
        gate = torch.sigmoid((_unit(u, eps) * _unit(k, eps)).sum(-1, keepdim=True) / math.sqrt(d))
        return gate * v

    def attention(self, j, s, cos, sin):
        c = self.config
        eps = c["rms_eps"]
        w = lambda name: self.w(f"blocks.{j}.attn.{name}")
        batch, length, _ = s.shape
        hq, hkv, dqk, dv = c["num_heads"], c["num_kv_heads"], c["qk_head_dim"], c["v_head_dim"]
        q = _taps(s @ w("q").t(), w("q_taps")) if c["qkv_conv_taps"] else s @ w("q").t()
        k = _taps(s @ w("k").t(), w("k_taps")) if c["qkv_conv_taps"] else s @ w("k").t()
        v = _taps(s @ w("v").t(), w("v_taps")) if c["qkv_conv_taps"] else s @ w("v").t()
        q = _rope(_zc(q.reshape(batch, length, hq, dqk), w("q_norm"), eps).transpose(1, 2), cos, sin)
        k = _rope(_zc(k.reshape(batch, length, hkv, dqk), w("k_norm"), eps).transpose(1, 2), cos, sin)
        v = v.reshape(batch, length, hkv, dv).transpose(1, 2)
        group = hq // hkv
        k = k.repeat_interleave(group, dim=1)
        v = v.repeat_interleave(group, dim=1)
        scores = q @ k.transpose(-1, -2) / math.sqrt(dqk)
        t = torch.arange(length)
        allowed = t[None, :] <= t[:, None]
        window = c["sliding_window"]
        if window and j not in c["global_layers"]:
            allowed &= (t[:, None] - t[None, :]) < window
        scores = scores.masked_fill(~allowed, float("-inf"))
        o = (torch.softmax(scores, dim=-1) @ v).transpose(1, 2).reshape(batch, length, hq * dv)
        return (o * torch.sigmoid(s @ w("gate").t())) @ w("o").t()

    def mlp(self, j, m):
        c = self.config
        w = lambda name: self.w(f"blocks.{j}.mlp.{name}")
        d = c["d_model"]
        n, ba, bb = mlp_sizes(d)
        cond = 1 + torch.softmax(m @ w("cond_v"), dim=-1) @ w("cond_u")
        z = F.pad(m, (0, n - d))

        def kron(z, wa, wb):
            zz = z.reshape(*z.shape[:-1], ba, bb)
            return (wa.t() @ (zz @ wb)).reshape(*z.shape[:-1], n)

        z = kron(w("d1") * z, w("w1a"), w("w1b"))[..., self.p1]
        z = kron(F.silu(w("d2") * cond * z + w("b2")), w("w2a"), w("w2b"))[..., self.p2]
        z = kron(w("d3") * z, w("w3a"), w("w3b"))
        return (w("d4") * z)[..., :d]

    def head(self, name, cells, rows, keep):
        """docs/model.md step 5: attention pooling of the cells over the kept positions. [B, Q*D]."""
        c = self.config
        eps, d = c["rms_eps"], c["d_model"]
        probes = self.w(f"{name}.probes")[rows]    # [R, K, D]
        gain = self.w(f"{name}.gain")[rows]        # [R, K]
        query = self.w(f"{name}.query")            # [Q, D]
        row_bias = self.w(f"{name}.row_bias")[:, rows]  # [Q, R, K]
        cell = torch.stack(cells, dim=2)           # [B, T, R, D]
        scores = torch.einsum("btrd,rkd->brkt", cell, probes) / math.sqrt(d)
        scores = scores.masked_fill(keep[:, None, None, :] == 0, float("-inf"))
        alpha = torch.nan_to_num(torch.softmax(scores, dim=-1))  # no position kept: zeros
        pooled = torch.einsum("brkt,btrd->brkd", alpha, cell)
        r = _unit(pooled, eps) * gain[None, :, :, None]         # [B, R, K, D]
        logits = torch.einsum("brkd,qd->bqrk", r, query) / math.sqrt(d) + row_bias[None]
        weights = torch.softmax(logits.flatten(2), dim=-1).reshape(logits.shape)
        return torch.einsum("bqrk,brkd->bqd", weights, r).flatten(1)


def load(directory):
    """The model of a directory holding config.json and model.safetensors (float weights)."""
    with open(f"{directory}/config.json") as f:
        config = json.load(f)
    tensors, _ = read_safetensors(f"{directory}/model.safetensors")
    return NeedleModel(config, tensors)
