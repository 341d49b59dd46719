#include "Needle/IR/NeedleDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

#include "Quant/Cq.h"
#include "Support/Limits.h"
#include "Support/RoundUp.h"

using namespace mlir;
using namespace needle::ir;

#include "Needle/IR/NeedleOpsDialect.cpp.inc"

#include "Needle/IR/NeedleEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "Needle/IR/NeedleAttrs.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "Needle/IR/NeedleOpsTypes.cpp.inc"

namespace {

/// needle.head's kind as a bare keyword: `needle.head confidence(...)`.
ParseResult parseHeadKind(OpAsmParser &parser, HeadKindAttr &kind) {
  StringRef keyword;
  const SMLoc loc = parser.getCurrentLocation();
  if (failed(parser.parseKeyword(&keyword)))
    return failure();
  std::optional<HeadKind> value = symbolizeHeadKind(keyword);
  if (!value)
    return parser.emitError(loc, "head kind must be confidence or embedding, got ") << keyword;
  kind = HeadKindAttr::get(parser.getContext(), *value);
  return success();
}

void printHeadKind(OpAsmPrinter &printer, Operation *, HeadKindAttr kind) {
  printer << stringifyHeadKind(kind.getValue());
}

} // namespace

#define GET_OP_CLASSES
#include "Needle/IR/NeedleOps.cpp.inc"

void NeedleDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "Needle/IR/NeedleAttrs.cpp.inc"
      >();
  addTypes<
#define GET_TYPEDEF_LIST
#include "Needle/IR/NeedleOpsTypes.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "Needle/IR/NeedleOps.cpp.inc"
      >();
}

Operation *NeedleDialect::materializeConstant(OpBuilder &builder, Attribute value, Type type, Location loc) {
  return arith::ConstantOp::materialize(builder, value, type, loc);
}

//===----------------------------------------------------------------------===//
// CqType
//===----------------------------------------------------------------------===//

LogicalResult CqType::verify(function_ref<InFlightDiagnostic()> emitError, unsigned bits, unsigned group,
                             ArrayRef<int64_t> shape) {
  if (bits < 2 || bits > 4)
    return emitError() << "CQ bits must be 2, 3 or 4, got " << bits;
  if (group < 8 || (group & (group - 1)))
    return emitError() << "CQ group must be a power of two >= 8, got " << group;
  if (shape.empty())
    return emitError() << "CQ shape must not be empty";
  for (int64_t dim : shape)
    if (dim <= 0)
      return emitError() << "CQ dimensions must be positive";
  return success();
}

int64_t CqType::getRows() const {
  int64_t rows = 1;
  for (int64_t dim : getShape().drop_back())
    rows *= dim;
  return rows;
}

int64_t CqType::getPaddedCols() const { return needle::roundUp(getCols(), getGroup()); }

//===----------------------------------------------------------------------===//
// Verifier helpers
//===----------------------------------------------------------------------===//

namespace {

/// Emits "<what> has length N, expected M" unless equal.
LogicalResult expectLength(Operation *op, Value value, int64_t expected, StringRef what) {
  if (lengthOf(value) != expected)
    return op->emitOpError() << what << " has length " << lengthOf(value) << ", expected " << expected;
  return success();
}

LogicalResult expectShape(Operation *op, Value value, ArrayRef<int64_t> expected, StringRef what) {
  if (shapeOf(value) != expected) {
    auto diag = op->emitOpError() << what << " has shape [";
    llvm::interleaveComma(shapeOf(value), diag);
    diag << "], expected [";
    llvm::interleaveComma(expected, diag);
    return diag << "]";
  }
  return success();
}

/// One expected shape of a verifier's list; a single dimension is reported as a length.
struct Expected {
  Value value;
  SmallVector<int64_t, 2> shape;
  StringRef what;
};

/// Checks each value in order and reports the first that differs.
LogicalResult expectShapes(Operation *op, std::initializer_list<Expected> expected) {
  for (const Expected &e : expected) {
    const LogicalResult result =
        e.shape.size() == 1 ? expectLength(op, e.value, e.shape[0], e.what) : expectShape(op, e.value, e.shape, e.what);
    if (failed(result))
      return failure();
  }
  return success();
}

LogicalResult expectPositive(Operation *op, int64_t value, StringRef what) {
  if (value <= 0)
    return op->emitOpError() << what << " must be positive, got " << value;
  return success();
}

LogicalResult verifyLanes(Operation *op, Value lanes) {
  if (shapeOf(lanes)[0] != 4)
    return op->emitOpError("lanes must be [4, d_model], got ") << lanes.getType();
  return success();
}

} // namespace

LogicalResult needle::ir::verifyBoundedTensors(Operation *op) {
  auto check = [&](Type type) -> LogicalResult {
    ArrayRef<int64_t> shape;
    if (auto cq = dyn_cast<CqType>(type))
      shape = cq.getShape();
    else if (auto tensor = dyn_cast<RankedTensorType>(type); tensor && tensor.hasStaticShape())
      shape = tensor.getShape();
    if (shape.size() > needle::kMaxTensorRank || needle::elementCountWithin(shape) < 0)
      return op->emitOpError("has a tensor of more than ")
             << needle::kMaxTensorElements << " elements or " << needle::kMaxTensorRank << " dimensions: " << type;
    return success();
  };
  for (Type type : op->getOperandTypes())
    if (failed(check(type)))
      return failure();
  for (Type type : op->getResultTypes())
    if (failed(check(type)))
      return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// Weights and CQ
//===----------------------------------------------------------------------===//

LogicalResult WeightOp::verify() {
  if (getName().empty())
    return emitOpError("needs a weight name");
  // I64Attr getters are unsigned; the signed value is what was written.
  if (getBlockAttr() && getBlockAttr().getInt() < 0)
    return emitOpError("block must be non-negative, got ") << getBlockAttr().getInt();
  if (getRows())
    for (int64_t row : getRowsAttr().asArrayRef())
      if (row < 0)
        return emitOpError("rows must be non-negative source block ids, got ") << row;
  return success();
}

LogicalResult CqDequantOp::verify() {
  CqType type = getWeight().getType();
  return expectShape(*this, getResult(), {type.getRows(), type.getPaddedCols()}, "result");
}

LogicalResult MatmulOp::verify() {
  ArrayRef<int64_t> matrix = shapeOf(getMatrix());
  return expectShapes(*this, {{getInput(), {matrix[1]}, "input"}, {getResult(), {matrix[0]}, "result"}});
}

LogicalResult CqMatmulOp::verify() {
  CqType type = getWeight().getType();
  if (type.getShape().size() != 2)
    return emitOpError("weight must be a CQ matrix");
  return expectShapes(*this, {{getInput(), {type.getPaddedCols()}, "input (rotated, padded to whole groups)"},
                              {getResult(), {type.getRows()}, "result"}});
}

LogicalResult HadamardOp::verify() {
  const int64_t group = getGroup();
  if (group < 1 || (group & (group - 1)) || group > needle::kMaxTensorElements)
    return emitOpError("group must be a power of two up to ") << needle::kMaxTensorElements << ", got " << group;
  return expectLength(*this, getResult(), needle::roundUp(lengthOf(getInput()), group), "result");
}

OpFoldResult HadamardOp::fold(FoldAdaptor adaptor) {
  // H is its own inverse: hadamard(hadamard(x)) = x when no padding was added.
  if (auto inner = getInput().getDefiningOp<HadamardOp>())
    if (inner.getGroup() == getGroup() && inner.getInput().getType() == getType())
      return inner.getInput();
  // Rotations of constants are done at compile time, up to the size a folder may materialise.
  auto constant = dyn_cast_or_null<DenseElementsAttr>(adaptor.getInput());
  if (constant && lengthOf(getResult()) <= needle::kMaxFoldedElements) {
    std::vector<float> values(constant.getValues<float>().begin(), constant.getValues<float>().end());
    values.resize(lengthOf(getResult()), 0.0f);
    for (size_t g = 0; g < values.size(); g += getGroup())
      needle::cq::fwht(values.data() + g, getGroup());
    return DenseElementsAttr::get(getType(), ArrayRef<float>(values));
  }
  return {};
}

LogicalResult CqGatherOp::verify() {
  CqType type = getTable().getType();
  if (type.getShape().size() != 2)
    return emitOpError("table must be a CQ matrix");
  return expectLength(*this, getResult(), type.getPaddedCols(), "result");
}

LogicalResult GatherOp::verify() { return expectLength(*this, getResult(), shapeOf(getTable())[1], "result"); }

LogicalResult EngramGatherOp::verify() {
  auto cq = dyn_cast<CqType>(getTables().getType());
  const ArrayRef<int64_t> shape = cq ? cq.getShape() : shapeOf(getTables());
  if (shape.size() != 3)
    return emitOpError("tables must be [tables, slots, sub_dim]");
  if (getOrders().empty())
    return emitOpError("needs at least one order");
  for (int64_t order : getOrders())
    if (failed(expectPositive(*this, order, "every order")))
      return failure();
  if (failed(expectPositive(*this, getHeads(), "heads")))
    return failure();
  const int64_t tables = static_cast<int64_t>(getOrders().size()) * static_cast<int64_t>(getHeads());
  if (shape[0] != tables)
    return emitOpError("has ") << shape[0] << " tables, orders x heads is " << tables;
  return expectLength(*this, getResult(), tables * (cq ? cq.getPaddedCols() : shape[2]), "result");
}

LogicalResult UnpadRowsOp::verify() {
  if (failed(expectPositive(*this, getRows(), "rows")) || failed(expectPositive(*this, getWidth(), "width")))
    return failure();
  const int64_t rows = static_cast<int64_t>(getRows()), width = static_cast<int64_t>(getWidth());
  if (lengthOf(getInput()) % rows || lengthOf(getInput()) / rows < width)
    return emitOpError("input of length ")
           << lengthOf(getInput()) << " is not " << getRows() << " rows of at least " << getWidth();
  return expectLength(*this, getResult(), getRows() * getWidth(), "result");
}

//===----------------------------------------------------------------------===//
// Lanes
//===----------------------------------------------------------------------===//

LogicalResult LanesInitOp::verify() { return expectShape(*this, getResult(), {4, lengthOf(getInput())}, "result"); }

LogicalResult LaneNormOp::verify() {
  if (failed(verifyLanes(*this, getLanes())))
    return failure();
  return expectLength(*this, getResult(), 4 * shapeOf(getLanes())[1], "result");
}

LogicalResult MhcGatesOp::verify() {
  if (failed(expectShapes(*this, {{getPre(), {4}, "pre"},
                                  {getPost(), {4}, "post"},
                                  {getRes(), {16}, "res"},
                                  {getA(), {3}, "a"},
                                  {getBPre(), {4}, "b_pre"},
                                  {getBPost(), {4}, "b_post"},
                                  {getBRes(), {4, 4}, "b_res"},
                                  {getHPre(), {4}, "h_pre"},
                                  {getHPost(), {4}, "h_post"},
                                  {getMix(), {4, 4}, "mix"}})))
    return failure();
  if (getPositionAttr().getInt() < 0)
    return emitOpError("position must be non-negative, got ") << getPositionAttr().getInt();
  return success();
}

LogicalResult LaneReadOp::verify() {
  if (failed(verifyLanes(*this, getLanes())))
    return failure();
  return expectShapes(*this, {{getHPre(), {4}, "h_pre"}, {getResult(), {shapeOf(getLanes())[1]}, "result"}});
}

LogicalResult LaneWriteOp::verify() {
  if (failed(verifyLanes(*this, getLanes())))
    return failure();
  return expectShapes(
      *this,
      {{getMix(), {4, 4}, "mix"}, {getHPost(), {4}, "h_post"}, {getUpdate(), {shapeOf(getLanes())[1]}, "update"}});
}

LogicalResult LaneMeanOp::verify() {
  if (failed(verifyLanes(*this, getLanes())))
    return failure();
  return expectLength(*this, getResult(), shapeOf(getLanes())[1], "result");
}

//===----------------------------------------------------------------------===//
// Block internals
//===----------------------------------------------------------------------===//

LogicalResult CausalTapsOp::verify() {
  if (failed(expectPositive(*this, getStride(), "stride")) ||
      failed(expectPositive(*this, shapeOf(getTaps())[0], "the number of taps")))
    return failure();
  return expectLength(*this, getInput(), shapeOf(getTaps())[1], "input");
}

LogicalResult ZcNormOp::verify() {
  if (failed(expectPositive(*this, getHeads(), "heads")))
    return failure();
  if (lengthOf(getInput()) % getHeads())
    return emitOpError("input of length ") << lengthOf(getInput()) << " does not split into " << getHeads() << " heads";
  return expectLength(*this, getScale(), lengthOf(getInput()) / getHeads(), "scale");
}

LogicalResult RopeOp::verify() {
  if (failed(expectPositive(*this, getHeads(), "heads")))
    return failure();
  if (lengthOf(getInput()) % (2 * getHeads()))
    return emitOpError("input of length ")
           << lengthOf(getInput()) << " does not split into " << getHeads() << " heads of even size";
  if (!(getTheta().convertToDouble() > 0))
    return emitOpError("theta must be positive");
  return success();
}

LogicalResult AttentionOp::verify() {
  if (failed(expectPositive(*this, getHeads(), "heads")) || failed(expectPositive(*this, getKvHeads(), "kv_heads")))
    return failure();
  if (getHeads() % getKvHeads())
    return emitOpError("kv_heads ") << getKvHeads() << " does not divide heads " << getHeads();
  if (getWindowAttr().getInt() < 0)
    return emitOpError("window must be non-negative, got ") << getWindowAttr().getInt();
  if (lengthOf(getQuery()) % getHeads() || lengthOf(getValue()) % getKvHeads())
    return emitOpError("query and value must split evenly into heads");
  const int64_t headDim = lengthOf(getQuery()) / getHeads(), valueDim = lengthOf(getValue()) / getKvHeads();
  return expectShapes(*this, {{getKey(), {static_cast<int64_t>(getKvHeads()) * headDim}, "key"},
                              {getResult(), {static_cast<int64_t>(getHeads()) * valueDim}, "result"}});
}

LogicalResult ResidualGateOp::verify() { return expectLength(*this, getGate(), 1, "gate"); }

LogicalResult KronMlpOp::verify() {
  const int64_t d = lengthOf(getInput()), n = lengthOf(getD1());
  const int64_t ba = shapeOf(getW1a())[0], bb = shapeOf(getW1b())[0];
  if (n < d || (n & (n - 1)))
    return emitOpError("MLP width ") << n << " must be a power of two >= d_model " << d;
  if (ba * bb != n)
    return emitOpError("factors ") << ba << " x " << bb << " do not multiply to the MLP width " << n;
  return expectShapes(*this, {{getW1a(), {ba, ba}, "w1a"},
                              {getW2a(), {ba, ba}, "w2a"},
                              {getW3a(), {ba, ba}, "w3a"},
                              {getW1b(), {bb, bb}, "w1b"},
                              {getW2b(), {bb, bb}, "w2b"},
                              {getW3b(), {bb, bb}, "w3b"},
                              {getD2(), {n}, "d2"},
                              {getB2(), {n}, "b2"},
                              {getD3(), {n}, "d3"},
                              {getD4(), {n}, "d4"},
                              {getP1(), {n}, "p1"},
                              {getP2(), {n}, "p2"},
                              {getCondV(), {d, 8}, "cond_v"},
                              {getCondU(), {8, n}, "cond_u"}});
}

//===----------------------------------------------------------------------===//
// Structure and heads
//===----------------------------------------------------------------------===//

LogicalResult BlockOp::verify() {
  if (failed(verifyLanes(*this, getLanes())))
    return failure();
  if (getIdAttr().getInt() < 0 || getSourceAttr().getInt() < 0)
    return emitOpError("id and source must be non-negative");
  if (getEngramSiteAttr() && getEngramSiteAttr().getInt() < 0)
    return emitOpError("engram_site must be non-negative");
  return expectLength(*this, getCell(), shapeOf(getLanes())[1], "cell");
}

// After the body's ops are verified: before, an attention without its window attribute (or a
// yield without its operands) would be read here unchecked.
LogicalResult BlockOp::verifyRegions() {
  Block &body = getBody().front();
  if (body.getNumArguments() != 3 || body.getArgument(0).getType() != getLanes().getType() ||
      body.getArgument(1).getType() != getToken().getType() || body.getArgument(2).getType() != getPosition().getType())
    return emitOpError("body must take (lanes, token, position) of the op's operand types");
  auto yield = body.empty() ? YieldOp() : dyn_cast<YieldOp>(body.back());
  if (!yield)
    return emitOpError("body must end in needle.yield");
  if (yield.getLanes().getType() != getResult().getType() || yield.getCell().getType() != getCell().getType())
    return emitOpError("body yields types that differ from the op's results");
  // The attributes describe the body; keep them from going stale.
  bool windowed = false, engram = false;
  body.walk([&](AttentionOp attention) { windowed = windowed || attention.getWindow() != 0; });
  body.walk([&](EngramGatherOp) { engram = true; });
  if (getGlobal() && windowed)
    return emitOpError("is global but its attention has a window");
  if (engram != static_cast<bool>(getEngramSite()))
    return emitOpError(engram ? "gathers engram rows but has no engram_site"
                              : "has an engram_site but no engram_gather");
  return success();
}

LogicalResult HeadOp::verify() {
  ArrayRef<int64_t> probes = shapeOf(getProbes());
  if (probes.size() != 3)
    return emitOpError("probes must be [rows, probes, d_model]");
  const int64_t rows = probes[0], count = probes[1], d = probes[2];
  if (static_cast<int64_t>(getCells().size()) != rows)
    return emitOpError("has ") << getCells().size() << " cells but " << rows
                               << " head rows; each cell (x0, then one per block) needs its row";
  for (Value cell : getCells())
    if (failed(expectLength(*this, cell, d, "every cell")))
      return failure();
  const int64_t queries = shapeOf(getQuery())[0], out = shapeOf(getProj())[0];
  if (failed(expectShapes(*this, {{getGain(), {rows, count}, "gain"},
                                  {getQuery(), {queries, d}, "query"},
                                  {getRowBias(), {queries, rows, count}, "row_bias"},
                                  {getProj(), {out, queries * d}, "proj"}})))
    return failure();
  const bool confidence = getKind() == HeadKind::Confidence;
  if (confidence != static_cast<bool>(getBias()))
    return emitOpError(confidence ? "confidence needs a bias" : "embedding takes no bias");
  if (getBias() && failed(expectLength(*this, getBias(), out, "bias")))
    return failure();
  return expectLength(*this, getResult(), out, "result");
}
