#ifndef NEEDLE_ATTRS_TD
#define NEEDLE_ATTRS_TD

include "Needle/IR/NeedleDialect.td"
include "mlir/IR/EnumAttr.td"

def Needle_HeadKind : I32EnumAttr<"HeadKind", "what a pooling head computes", [
    I32EnumAttrCase<"Confidence", 0, "confidence">,
    I32EnumAttrCase<"Embedding", 1, "embedding">]> {
  let cppNamespace = "::needle::ir";
  let genSpecializedAttr = 0;
}

// `#needle.head_kind<confidence>` on its own; a bare keyword inside needle.head
// (`needle.head confidence(...)`, see custom<HeadKind>).
def Needle_HeadKindAttr : EnumAttr<Needle_Dialect, Needle_HeadKind, "head_kind">;

#endif // NEEDLE_ATTRS_TD
