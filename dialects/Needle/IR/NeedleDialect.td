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

// Every tensor an op takes or gives is within needle's size limit (kMaxTensorElements in
// compiler/Support/Limits.h), so no verified IR makes a fold, a pass or the evaluator allocate
// without bound.
def Needle_BoundedTensors : NativeOpTrait<"BoundedTensors"> {
  let cppNamespace = "::needle::ir";
}

class Needle_Op<string mnemonic, list<Trait> traits = []>
    : Op<Needle_Dialect, mnemonic, !listconcat(traits, [Needle_BoundedTensors])>;

#endif // NEEDLE_DIALECT_TD
