#ifndef NEEDLE_TYPES_TD
#define NEEDLE_TYPES_TD

include "Needle/IR/NeedleDialect.td"
include "mlir/IR/AttrTypeBase.td"

class Needle_Type<string name, string typeMnemonic> : TypeDef<Needle_Dialect, name> {
  let mnemonic = typeMnemonic;
}

def Needle_CqType : Needle_Type<"Cq", "cq"> {
  let summary = "CQ-quantized weight tensor";
  let description = [{
    A weight stored in CQ (docs/cq-format.md): `bits` per index (2, 3 or 4), groups of `group`
    (128) along the last dimension, logical `shape`. Its values are packed indices and fp16
    group norms; the codebook for `bits` is the module's (`needle.codebooks`).
    Example: `!needle.cq<2, 128, [576, 768]>`.
  }];
  let parameters = (ins "unsigned":$bits, "unsigned":$group, ArrayRefParameter<"int64_t">:$shape);
  let assemblyFormat = "`<` $bits `,` $group `,` `[` $shape `]` `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Rows: the product of every dimension but the last.
    int64_t getRows() const;
    int64_t getCols() const { return getShape().back(); }
    /// The last dimension rounded up to a whole number of groups.
    int64_t getPaddedCols() const;
  }];
}

#endif // NEEDLE_TYPES_TD
