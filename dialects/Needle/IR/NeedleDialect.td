#ifndef NEEDLE_DIALECT_TD
#define NEEDLE_DIALECT_TD

include "mlir/IR/OpBase.td"

def Needle_Dialect : Dialect {
  let name = "needle";
  let summary = "The SAN ladder graph of Needle-style models";
  let description = [{
    One decode step of a Needle 3 ladder model (docs/model.md), at the granularity the
    compiler's passes need: one `needle.block` per ladder block (its id, lane position, source
    block, global attention and engram site are attributes, so slicing is visible), and the
    CQ quantization spelled out as `needle.hadamard`, `needle.cq_dequant`, `needle.matmul` and
    `needle.cq_matmul`, so Hadamard folding and CQ fusion are local rewrites. Everything else
    (lane mixing, norms, taps, RoPE, attention, the Kronecker MLP, the heads) is one op per
    formula of the spec.

    Weights are never printed: `needle.weight` names a tensor of the model file named by the
    module attribute `needle.model`, by its leaf name and its source block.
  }];
  let cppNamespace = "::needle::ir";
  let useDefaultTypePrinterParser = 1;
  let useDefaultAttributePrinterParser = 1;
  let hasConstantMaterializer = 1;
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

class Needle_Op<string mnemonic, list<Trait> traits = []> : Op<Needle_Dialect, mnemonic, traits>;

#endif // NEEDLE_DIALECT_TD
