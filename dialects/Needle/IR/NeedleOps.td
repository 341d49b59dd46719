#ifndef NEEDLE_OPS_TD
#define NEEDLE_OPS_TD

include "Needle/IR/NeedleAttrs.td"
include "Needle/IR/NeedleTypes.td"
include "mlir/IR/BuiltinAttributes.td"
include "mlir/IR/CommonTypeConstraints.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

// Every tensor has a static shape: the compiler plans each byte of a session at compile time.
class Needle_StaticTensorOf<list<Type> types, list<int> ranks>
    : Type<And<[TensorRankOf<types, ranks>.predicate, HasStaticShapePred]>,
           "statically shaped " # TensorRankOf<types, ranks>.summary, "::mlir::RankedTensorType">;
def Needle_Vector : Needle_StaticTensorOf<[F32], [1]>;
def Needle_Matrix : Needle_StaticTensorOf<[F32], [2]>;
def Needle_Lanes : Needle_StaticTensorOf<[F32], [2]>;
def Needle_Tensor : StaticShapeTensorOf<[F32]>;
def Needle_IndexVector : Needle_StaticTensorOf<[I32], [1]>;
def Needle_Weight : AnyTypeOf<[Needle_CqType, Needle_Tensor, StaticShapeTensorOf<[I32]>]>;

// Ops whose result depends on earlier tokens keep per-session state: they read and write it.
def Needle_Stateful : MemoryEffects<[MemRead, MemWrite]>;

// Most ops: operands, attributes, then the types as a function type.
class Needle_PureOp<string mnemonic, list<Trait> traits = []>
    : Needle_Op<mnemonic, !listconcat([Pure], traits)> {
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}
class Needle_StatefulOp<string mnemonic, list<Trait> traits = []>
    : Needle_Op<mnemonic, !listconcat([Needle_Stateful], traits)> {
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Weights and CQ
//===----------------------------------------------------------------------===//

def Needle_WeightOp : Needle_Op<"weight", [Pure]> {
  let summary = "A weight of the module's model file";
  let description = [{
    Names a tensor of the model file (module attribute `needle.model`) by its leaf name and,
    for block and engram tensors, the source block that owns it (the block id of the original,
    unsliced model), so the IR of a slice and the IR of the sliced file name the same weights.
    A head tensor (probes, gain, row_bias) takes only the head rows of `rows`: x0's row, then
    the row of each listed source block.

        %q = needle.weight "attn.q" block 9 : !needle.cq<2, 128, [576, 768]>
        %e = needle.weight "embed.weight" : !needle.cq<4, 128, [8192, 768]>
        %p = needle.weight "confidence.probes" rows [0, 19] : tensor<3x4x768xf32>
  }];
  let arguments = (ins StrAttr:$name, OptionalAttr<I64Attr>:$block, OptionalAttr<DenseI64ArrayAttr>:$rows);
  let results = (outs Needle_Weight:$result);
  let assemblyFormat = "$name (`block` $block^)? (`rows` $rows^)? attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Needle_CqDequantOp : Needle_PureOp<"cq_dequant"> {
  let summary = "CQ matrix in the rotated domain: codebook[index] * norm";
  let description = [{
    The float matrix C = c[idx] · n16 of a CQ weight, [rows, padded cols], *without* the
    inverse rotation: the dequantized weight is C·H (H per group), so W x = C (H x). Feeding a
    `needle.matmul` it materializes a float weight; `needle-fuse-cq-matmul` removes it.
  }];
  let arguments = (ins Needle_CqType:$weight);
  let results = (outs Needle_Matrix:$result);
}

def Needle_MatmulOp : Needle_PureOp<"matmul"> {
  let summary = "y = W x";
  let arguments = (ins Needle_Matrix:$matrix, Needle_Vector:$input);
  let results = (outs Needle_Vector:$result);
}

def Needle_CqMatmulOp : Needle_PureOp<"cq_matmul"> {
  let summary = "y = C x_rot on packed indices and norms";
  let description = [{
    `y[r] = Σ_g n16[r,g] Σ_i c[idx[r,g,i]] x_rot[g·G + i]`: a CQ matmul whose input is already
    rotated (`needle.hadamard`). Equal to `needle.matmul(needle.cq_dequant(w), x_rot)`, without
    a float weight.
  }];
  let arguments = (ins Needle_CqType:$weight, Needle_Vector:$input);
  let results = (outs Needle_Vector:$result);
}

def Needle_HadamardOp : Needle_PureOp<"hadamard"> {
  let summary = "Normalized Walsh-Hadamard rotation of each group";
  let description = [{
    Pads the input with zeros to a multiple of `group`, then applies the normalized
    Walsh-Hadamard transform H (its own inverse) to each group. One per token is an online
    rotation; `needle-fold-hadamard` removes every one that algebra allows.
  }];
  let arguments = (ins Needle_Vector:$input, I64Attr:$group);
  let results = (outs Needle_Vector:$result);
  let hasFolder = 1;
}

def Needle_CqGatherOp : Needle_PureOp<"cq_gather"> {
  let summary = "One row of a CQ matrix in the rotated domain";
  let description = [{
    Row `index` of a CQ weight as codebook[index] * norm ([padded cols]); a
    `needle.hadamard` decodes it. The embedding lookup.
  }];
  let arguments = (ins Needle_CqType:$table, I32:$index);
  let results = (outs Needle_Vector:$result);
}

def Needle_GatherOp : Needle_PureOp<"gather"> {
  let summary = "One row of a float matrix";
  let description = [{
    Row `index` of a float weight [rows, cols]: the embedding lookup of a model whose scheme
    keeps the embedding float (a CQ embedding uses `needle.cq_gather`).
  }];
  let arguments = (ins Needle_Matrix:$table, I32:$index);
  let results = (outs Needle_Vector:$result);
}

def Needle_EngramGatherOp : Needle_StatefulOp<"engram_gather"> {
  let summary = "Hashed n-gram lookup of every engram table";
  let description = [{
    For each order `orders[oi]` and head h, hashes the last tokens (docs/model.md, Engram)
    and gathers row `slot` of table `oi·heads + h` (zeros when the position is before
    order - 1). The rows are concatenated. CQ tables give their rows in the rotated domain,
    each padded to whole groups: [tables · padded sub_dim], decoded by a `needle.hadamard`;
    float tables give the rows themselves: [tables · sub_dim]. Keeps the token history as
    state.
  }];
  let arguments = (ins AnyTypeOf<[Needle_CqType, Needle_StaticTensorOf<[F32], [3]>]>:$tables, I32:$token,
                       I32:$position, DenseI64ArrayAttr:$orders, I64Attr:$heads);
  let results = (outs Needle_Vector:$result);
}

def Needle_UnpadRowsOp : Needle_PureOp<"unpad_rows"> {
  let summary = "Drops the group padding of concatenated rows";
  let description = [{
    [rows · padded] -> [rows · width]: keeps the first `width` values of every `padded`-long
    row. Needed after decoding engram rows whose sub_dim is not a multiple of 128.
  }];
  let arguments = (ins Needle_Vector:$input, I64Attr:$rows, I64Attr:$width);
  let results = (outs Needle_Vector:$result);
}

//===----------------------------------------------------------------------===//
// Lanes (mHC)
//===----------------------------------------------------------------------===//

def Needle_ScaleOp : Needle_PureOp<"scale", [SameOperandsAndResultType]> {
  let hasVerifier = 0; // the traits say it all
  let summary = "x * factor";
  let arguments = (ins Needle_Vector:$input, F32Attr:$factor);
  let results = (outs Needle_Vector:$result);
}

def Needle_LanesInitOp : Needle_PureOp<"lanes_init"> {
  let summary = "Four lanes, each equal to x0";
  let arguments = (ins Needle_Vector:$input);
  let results = (outs Needle_Lanes:$result);
}

def Needle_LaneNormOp : Needle_PureOp<"lane_norm"> {
  let summary = "nx = unit(concat(lanes))";
  let arguments = (ins Needle_Lanes:$lanes, F32Attr:$eps);
  let results = (outs Needle_Vector:$result);
}

def Needle_MhcGatesOp : Needle_PureOp<"mhc_gates"> {
  let summary = "h_pre, h_post and the Sinkhorn lane mix of a block";
  let description = [{
    From the projections Φ_pre nx, Φ_post nx, Φ_res nx and the block's a, b_pre, b_post,
    b_res, at lane position `position` (one = onehot(position mod 4)):
    h_pre = σ(a0·pre + b_pre + 8·one − 4), h_post = 2σ(a1·post + b_post − 4(1 − one)),
    mix = sinkhorn(a2·reshape(res, 4×4) + b_res) with 20 rounds.
  }];
  let arguments = (ins Needle_Vector:$pre, Needle_Vector:$post, Needle_Vector:$res, Needle_Vector:$a,
                       Needle_Vector:$b_pre, Needle_Vector:$b_post, Needle_Matrix:$b_res, I64Attr:$position);
  let results = (outs Needle_Vector:$h_pre, Needle_Vector:$h_post, Needle_Matrix:$mix);
}

def Needle_LaneReadOp : Needle_PureOp<"lane_read"> {
  let summary = "u = Σ_l h_pre[l] lane_l";
  let arguments = (ins Needle_Lanes:$lanes, Needle_Vector:$h_pre);
  let results = (outs Needle_Vector:$result);
}

def Needle_LaneWriteOp : Needle_PureOp<"lane_write", [AllTypesMatch<["lanes", "result"]>]> {
  let summary = "lane_i <- Σ_k mix[i][k] lane_k + h_post[i] y";
  let arguments = (ins Needle_Lanes:$lanes, Needle_Matrix:$mix, Needle_Vector:$h_post, Needle_Vector:$update);
  let results = (outs Needle_Lanes:$result);
}

def Needle_LaneMeanOp : Needle_PureOp<"lane_mean"> {
  let summary = "The mean over the lanes (a block's cell; the input of the final norm)";
  let arguments = (ins Needle_Lanes:$lanes);
  let results = (outs Needle_Vector:$result);
}

//===----------------------------------------------------------------------===//
// Block internals
//===----------------------------------------------------------------------===//

def Needle_EngramGateOp : Needle_PureOp<"engram_gate", [SameOperandsAndResultType]> {
  let hasVerifier = 0; // the traits say it all
  let summary = "x = u + σ(<unit(u), unit(k)> / sqrt(D)) v";
  let arguments = (ins Needle_Vector:$u, Needle_Vector:$key, Needle_Vector:$value, F32Attr:$eps);
  let results = (outs Needle_Vector:$result);
}

def Needle_CausalTapsOp : Needle_StatefulOp<"causal_taps", [AllTypesMatch<["input", "result"]>]> {
  let summary = "z_t = Σ_i taps[i] ⊙ x_{t − stride·i}";
  let description = [{
    Depthwise causal taps over positions (terms before position 0 dropped). stride 1 for the
    q/k/v taps, δ = max(engram_orders) for the engram value taps. Keeps the last
    stride·(count − 1) inputs as state.
  }];
  let arguments = (ins Needle_Vector:$input, Needle_Matrix:$taps, I64Attr:$stride);
  let results = (outs Needle_Vector:$result);
}

def Needle_ZcNormOp : Needle_PureOp<"zc_norm", [AllTypesMatch<["input", "result"]>]> {
  let summary = "Zero-centred RMSNorm (1 + s) ⊙ x / sqrt(mean(x²) + eps), per head";
  let description = [{
    Splits the input into `heads` equal parts and normalizes each with the shared scale
    (heads = 1 for a whole-vector norm; q/k norms use one per head).
  }];
  let arguments = (ins Needle_Vector:$input, Needle_Vector:$scale, I64Attr:$heads, F32Attr:$eps);
  let results = (outs Needle_Vector:$result);
}

def Needle_RopeOp : Needle_PureOp<"rope", [AllTypesMatch<["input", "result"]>]> {
  let summary = "Rotate-half RoPE of every head at the token's position";
  let arguments = (ins Needle_Vector:$input, I32:$position, I64Attr:$heads, F64Attr:$theta);
  let results = (outs Needle_Vector:$result);
}

def Needle_AttentionOp : Needle_StatefulOp<"attention"> {
  let summary = "Causal GQA attention with its KV state";
  let description = [{
    Appends (k, v) to the block's KV state and attends the query to every earlier position
    (window = 0) or the last `window` positions: scores q·k / sqrt(head_dim), softmax,
    o = concat_h Σ α v; head h reads kv head h / (heads / kv_heads).
  }];
  let arguments = (ins Needle_Vector:$query, Needle_Vector:$key, Needle_Vector:$value, I64Attr:$heads,
                       I64Attr:$kv_heads, I64Attr:$window);
  let results = (outs Needle_Vector:$result);
}

def Needle_SigmoidGateOp : Needle_PureOp<"sigmoid_gate", [SameOperandsAndResultType]> {
  let hasVerifier = 0; // the traits say it all
  let summary = "x ⊙ σ(gate)";
  let arguments = (ins Needle_Vector:$input, Needle_Vector:$gate);
  let results = (outs Needle_Vector:$result);
}

def Needle_ResidualGateOp : Needle_PureOp<"residual_gate", [AllTypesMatch<["input", "update", "norm", "result"]>]> {
  let summary = "x1 = x + σ(gate) · zc(a; norm)";
  let arguments = (ins Needle_Vector:$input, Needle_Vector:$update, Needle_Vector:$norm, Needle_Vector:$gate,
                       F32Attr:$eps);
  let results = (outs Needle_Vector:$result);
}

def Needle_KronMlpOp : Needle_PureOp<"kron_mlp", [AllTypesMatch<["input", "norm", "result"]>]> {
  let summary = "The Kronecker (Monarch-Hadamard) MLP of docs/model.md";
  let description = [{
    On m = zc(x1; norm): cond = 1 + softmax(cond_vᵀ m)·cond_u; z = pad(m, n);
    z = K1(d1 z)[p1]; z = K2(silu(d2 cond z + b2))[p2]; z = K3(d3 z); y = (d4 z)[:D], with
    K_i(z) = w_ia^T reshape(z, [ba, bb]) w_ib.
  }];
  let arguments = (ins Needle_Vector:$input, Needle_Vector:$norm, Needle_Matrix:$w1a, Needle_Matrix:$w2a,
                       Needle_Matrix:$w3a, Needle_Matrix:$w1b, Needle_Matrix:$w2b, Needle_Matrix:$w3b,
                       Needle_Vector:$d1, Needle_Vector:$d2, Needle_Vector:$b2, Needle_Vector:$d3,
                       Needle_Vector:$d4, Needle_Matrix:$cond_v, Needle_Matrix:$cond_u,
                       Needle_IndexVector:$p1, Needle_IndexVector:$p2, F32Attr:$eps);
  let results = (outs Needle_Vector:$result);
}

def Needle_BlockUpdateOp : Needle_PureOp<"block_update", [SameOperandsAndResultType]> {
  let hasVerifier = 0; // the traits say it all
  let summary = "y = x1 + y_mlp − u, the block's update";
  let arguments = (ins Needle_Vector:$x1, Needle_Vector:$mlp, Needle_Vector:$u);
  let results = (outs Needle_Vector:$result);
}

//===----------------------------------------------------------------------===//
// Structure and heads
//===----------------------------------------------------------------------===//

def Needle_BlockOp : Needle_Op<"block", [IsolatedFromAbove, SingleBlock, Needle_Stateful,
                                         AllTypesMatch<["lanes", "result"]>]> {
  let summary = "One ladder block";
  let description = [{
    `id` is the block's index among the kept blocks (its lane position), `source` the block
    of the original model it comes from (its weights and head row), `global` whether it
    attends to every earlier position, `engram_site` the index of its engram site among the
    kept sites. The body's arguments are the lanes, the token and its position; it yields
    the new lanes and the block's cell (their mean).
  }];
  let arguments = (ins Needle_Lanes:$lanes, I32:$token, I32:$position, I64Attr:$id, I64Attr:$source,
                       BoolAttr:$global, OptionalAttr<I64Attr>:$engram_site);
  let results = (outs Needle_Lanes:$result, Needle_Vector:$cell);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results) $body";
  let hasVerifier = 1;
  // The body's checks read its ops, so they run once those ops are verified.
  let hasRegionVerifier = 1;
}

def Needle_YieldOp : Needle_Op<"yield", [Pure, Terminator, HasParent<"BlockOp">]> {
  let summary = "The lanes and the cell a block produces";
  let arguments = (ins Needle_Lanes:$lanes, Needle_Vector:$cell);
  let assemblyFormat = "$lanes `,` $cell attr-dict `:` type($lanes) `,` type($cell)";
}

def Needle_HeadOp : Needle_StatefulOp<"head", [AttrSizedOperandSegments]> {
  let summary = "A pooling head (confidence or embedding)";
  let description = [{
    Pools the cells [x0, cell of each kept block] over every position whose token is not
    `pad` (online softmax over positions, kept as state), then mixes the probes by the
    queries (docs/model.md, Heads). The probes, gains and row biases hold one head row per
    cell (see `needle.weight` rows). `confidence` gives σ(proj·pooled + bias) [1];
    `embedding` gives p / sqrt(Σp² + 1e-12).
  }];
  let arguments = (ins Variadic<Needle_Vector>:$cells, I32:$token, Needle_Tensor:$probes,
                       Needle_Matrix:$gain, Needle_Matrix:$query, Needle_Tensor:$row_bias,
                       Needle_Matrix:$proj, Optional<Needle_Vector>:$bias, Needle_HeadKindAttr:$kind,
                       I64Attr:$pad, F32Attr:$eps);
  let results = (outs Needle_Vector:$result);
  let assemblyFormat = [{
    custom<HeadKind>($kind) `(` $cells `)` `token` $token `weights` `(` $probes `,` $gain `,` $query `,` $row_bias `,` $proj
    (`,` $bias^)? `)` attr-dict `:` functional-type(operands, results)
  }];
}

#endif // NEEDLE_OPS_TD
