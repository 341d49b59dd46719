#include "Needle/IR/NeedleDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

#include "Quant/Cq.h"

using namespace mlir;
using namespace needle::ir;

#include "Needle/IR/NeedleOpsDialect.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "Needle/IR/NeedleOpsTypes.cpp.inc"

#define GET_OP_CLASSES
#include "Needle/IR/NeedleOps.cpp.inc"

void NeedleDialect::initialize() {
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

int64_t CqType::getPaddedCols() const { return (getCols() + getGroup() - 1) / getGroup() * getGroup(); }

//===----------------------------------------------------------------------===//
// Verifier helpers
//===----------------------------------------------------------------------===//

#define CHECK(expr)                                                                                           \
  if (failed(expr))                                                                                           \
    return failure();

namespace {

/// Every tensor operand and result has a static shape.
LogicalResult verifyStatic(Operation *op) {
  auto check = [&](Type type) -> LogicalResult {
    if (auto tensor = dyn_cast<RankedTensorType>(type); tensor && !tensor.hasStaticShape())
      return op->emitOpError("needs static shapes, got ") << type;
    return success();
  };
  for (Type type : op->getOperandTypes())
    CHECK(check(type));
  for (Type type : op->getResultTypes())
    CHECK(check(type));
  return success();
}

int64_t length(Value value) { return cast<RankedTensorType>(value.getType()).getDimSize(0); }
ArrayRef<int64_t> shapeOf(Value value) { return cast<RankedTensorType>(value.getType()).getShape(); }

/// Emits "<what> has length N, expected M" unless equal.
LogicalResult expectLength(Operation *op, Value value, int64_t expected, StringRef what) {
  if (length(value) != expected)
    return op->emitOpError() << what << " has length " << length(value) << ", expected " << expected;
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

LogicalResult expectPositive(Operation *op, int64_t value, StringRef what) {
  if (value <= 0)
    return op->emitOpError() << what << " must be positive, got " << value;
  return success();
}

int64_t roundUp(int64_t n, int64_t group) { return (n + group - 1) / group * group; }

} // namespace

//===----------------------------------------------------------------------===//
// Weights and CQ
//===----------------------------------------------------------------------===//

LogicalResult WeightOp::verify() {
  CHECK(verifyStatic(*this));
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
  CHECK(verifyStatic(*this));
  CqType type = getWeight().getType();
  return expectShape(*this, getResult(), {type.getRows(), type.getPaddedCols()}, "result");
}

LogicalResult MatmulOp::verify() {
  CHECK(verifyStatic(*this));
  ArrayRef<int64_t> matrix = shapeOf(getMatrix());
  CHECK(expectLength(*this, getInput(), matrix[1], "input"));
  return expectLength(*this, getResult(), matrix[0], "result");
}

LogicalResult CqMatmulOp::verify() {
  CHECK(verifyStatic(*this));
  CqType type = getWeight().getType();
  if (type.getShape().size() != 2)
    return emitOpError("weight must be a CQ matrix");
  CHECK(expectLength(*this, getInput(), type.getPaddedCols(),
                     "input (rotated, padded to whole groups)"));
  return expectLength(*this, getResult(), type.getRows(), "result");
}

LogicalResult HadamardOp::verify() {
  CHECK(verifyStatic(*this));
  const int64_t group = getGroup();
  if (group < 1 || (group & (group - 1)))
    return emitOpError("group must be a power of two, got ") << group;
  return expectLength(*this, getResult(), roundUp(length(getInput()), group), "result");
}

OpFoldResult HadamardOp::fold(FoldAdaptor adaptor) {
  // H is its own inverse: hadamard(hadamard(x)) = x when no padding was added.
  if (auto inner = getInput().getDefiningOp<HadamardOp>())
    if (inner.getGroup() == getGroup() && inner.getInput().getType() == getType())
      return inner.getInput();
  // Rotations of constants are done at compile time.
  if (auto constant = dyn_cast_or_null<DenseElementsAttr>(adaptor.getInput())) {
    std::vector<float> values(constant.getValues<float>().begin(), constant.getValues<float>().end());
    values.resize(length(getResult()), 0.0f);
    for (size_t g = 0; g < values.size(); g += getGroup())
      needle::cq::fwht(values.data() + g, getGroup());
    return DenseElementsAttr::get(getType(), ArrayRef<float>(values));
  }
  return {};
}

LogicalResult CqGatherOp::verify() {
  CHECK(verifyStatic(*this));
  CqType type = getTable().getType();
  if (type.getShape().size() != 2)
    return emitOpError("table must be a CQ matrix");
  return expectLength(*this, getResult(), type.getPaddedCols(), "result");
}

LogicalResult EngramGatherOp::verify() {
  CHECK(verifyStatic(*this));
  CqType type = getTables().getType();
  if (type.getShape().size() != 3)
    return emitOpError("tables must be [tables, slots, sub_dim]");
  if (getOrders().empty())
    return emitOpError("needs at least one order");
  for (int64_t order : getOrders())
    CHECK(expectPositive(*this, order, "every order"));
  CHECK(expectPositive(*this, getHeads(), "heads"));
  const int64_t tables = static_cast<int64_t>(getOrders().size()) * static_cast<int64_t>(getHeads());
  if (type.getShape()[0] != tables)
    return emitOpError("has ") << type.getShape()[0] << " tables, orders x heads is " << tables;
  return expectLength(*this, getResult(), type.getShape()[0] * type.getPaddedCols(), "result");
}

LogicalResult UnpadRowsOp::verify() {
  CHECK(verifyStatic(*this));
  CHECK(expectPositive(*this, getRows(), "rows"));
  CHECK(expectPositive(*this, getWidth(), "width"));
  const int64_t rows = static_cast<int64_t>(getRows()), width = static_cast<int64_t>(getWidth());
  if (length(getInput()) % rows || length(getInput()) / rows < width)
    return emitOpError("input of length ") << length(getInput()) << " is not " << getRows()
                                           << " rows of at least " << getWidth();
  return expectLength(*this, getResult(), getRows() * getWidth(), "result");
}

//===----------------------------------------------------------------------===//
// Lanes
//===----------------------------------------------------------------------===//

LogicalResult ScaleOp::verify() {
  CHECK(verifyStatic(*this));
  return expectLength(*this, getResult(), length(getInput()), "result");
}

LogicalResult LanesInitOp::verify() {
  CHECK(verifyStatic(*this));
  return expectShape(*this, getResult(), {4, length(getInput())}, "result");
}

namespace {
LogicalResult verifyLanes(Operation *op, Value lanes) {
  if (shapeOf(lanes)[0] != 4)
    return op->emitOpError("lanes must be [4, d_model], got ") << lanes.getType();
  return success();
}
} // namespace

LogicalResult LaneNormOp::verify() {
  CHECK(verifyStatic(*this));
  CHECK(verifyLanes(*this, getLanes()));
  return expectLength(*this, getResult(), 4 * shapeOf(getLanes())[1], "result");
}

LogicalResult MhcGatesOp::verify() {
  CHECK(verifyStatic(*this));
  CHECK(expectLength(*this, getPre(), 4, "pre"));
  CHECK(expectLength(*this, getPost(), 4, "post"));
  CHECK(expectLength(*this, getRes(), 16, "res"));
  CHECK(expectLength(*this, getA(), 3, "a"));
  CHECK(expectLength(*this, getBPre(), 4, "b_pre"));
  CHECK(expectLength(*this, getBPost(), 4, "b_post"));
  CHECK(expectShape(*this, getBRes(), {4, 4}, "b_res"));
  CHECK(expectLength(*this, getHPre(), 4, "h_pre"));
  CHECK(expectLength(*this, getHPost(), 4, "h_post"));
  CHECK(expectShape(*this, getMix(), {4, 4}, "mix"));
  if (getPositionAttr().getInt() < 0)
    return emitOpError("position must be non-negative, got ") << getPositionAttr().getInt();
  return success();
}

LogicalResult LaneReadOp::verify() {
  CHECK(verifyStatic(*this));
  CHECK(verifyLanes(*this, getLanes()));
  CHECK(expectLength(*this, getHPre(), 4, "h_pre"));
  return expectLength(*this, getResult(), shapeOf(getLanes())[1], "result");
}

LogicalResult LaneWriteOp::verify() {
  CHECK(verifyStatic(*this));
  CHECK(verifyLanes(*this, getLanes()));
  CHECK(expectShape(*this, getMix(), {4, 4}, "mix"));
  CHECK(expectLength(*this, getHPost(), 4, "h_post"));
  CHECK(expectLength(*this, getUpdate(), shapeOf(getLanes())[1], "update"));
  return expectShape(*this, getResult(), shapeOf(getLanes()), "result");
}

LogicalResult LaneMeanOp::verify() {
  CHECK(verifyStatic(*this));
  CHECK(verifyLanes(*this, getLanes()));
  return expectLength(*this, getResult(), shapeOf(getLanes())[1], "result");
}

//===----------------------------------------------------------------------===//
// Block internals
//===----------------------------------------------------------------------===//

LogicalResult EngramGateOp::verify() {
  CHECK(verifyStatic(*this));
  CHECK(expectLength(*this, getKey(), length(getU()), "key"));
  CHECK(expectLength(*this, getValue(), length(getU()), "value"));
  return expectLength(*this, getResult(), length(getU()), "result");
}

LogicalResult CausalTapsOp::verify() {
  CHECK(verifyStatic(*this));
  CHECK(expectPositive(*this, getStride(), "stride"));
  CHECK(expectPositive(*this, shapeOf(getTaps())[0], "the number of taps"));
  CHECK(expectLength(*this, getInput(), shapeOf(getTaps())[1], "input"));
  return expectLength(*this, getResult(), length(getInput()), "result");
}

LogicalResult ZcNormOp::verify() {
  CHECK(verifyStatic(*this));
  CHECK(expectPositive(*this, getHeads(), "heads"));
  if (length(getInput()) % getHeads())
    return emitOpError("input of length ") << length(getInput()) << " does not split into " << getHeads()
                                           << " heads";
  CHECK(expectLength(*this, getScale(), length(getInput()) / getHeads(), "scale"));
  return expectLength(*this, getResult(), length(getInput()), "result");
}

LogicalResult RopeOp::verify() {
  CHECK(verifyStatic(*this));
  CHECK(expectPositive(*this, getHeads(), "heads"));
  if (length(getInput()) % (2 * getHeads()))
    return emitOpError("input of length ") << length(getInput()) << " does not split into " << getHeads()
                                           << " heads of even size";
  if (!(getTheta().convertToDouble() > 0))
    return emitOpError("theta must be positive");
  return expectLength(*this, getResult(), length(getInput()), "result");
}

LogicalResult AttentionOp::verify() {
  CHECK(verifyStatic(*this));
  CHECK(expectPositive(*this, getHeads(), "heads"));
  CHECK(expectPositive(*this, getKvHeads(), "kv_heads"));
  if (getHeads() % getKvHeads())
    return emitOpError("kv_heads ") << getKvHeads() << " does not divide heads " << getHeads();
  if (getWindowAttr().getInt() < 0)
    return emitOpError("window must be non-negative, got ") << getWindowAttr().getInt();
  if (length(getQuery()) % getHeads() || length(getValue()) % getKvHeads())
    return emitOpError("query and value must split evenly into heads");
  const int64_t headDim = length(getQuery()) / getHeads(), valueDim = length(getValue()) / getKvHeads();
  CHECK(expectLength(*this, getKey(), getKvHeads() * headDim, "key"));
  return expectLength(*this, getResult(), getHeads() * valueDim, "result");
}

LogicalResult SigmoidGateOp::verify() {
  CHECK(verifyStatic(*this));
  CHECK(expectLength(*this, getGate(), length(getInput()), "gate"));
  return expectLength(*this, getResult(), length(getInput()), "result");
}

LogicalResult ResidualGateOp::verify() {
  CHECK(verifyStatic(*this));
  CHECK(expectLength(*this, getUpdate(), length(getInput()), "update"));
  CHECK(expectLength(*this, getNorm(), length(getInput()), "norm"));
  CHECK(expectLength(*this, getGate(), 1, "gate"));
  return expectLength(*this, getResult(), length(getInput()), "result");
}

LogicalResult KronMlpOp::verify() {
  CHECK(verifyStatic(*this));
  const int64_t d = length(getInput()), n = length(getD1());
  const int64_t ba = shapeOf(getW1a())[0], bb = shapeOf(getW1b())[0];
  if (n < d || (n & (n - 1)))
    return emitOpError("MLP width ") << n << " must be a power of two >= d_model " << d;
  if (ba * bb != n)
    return emitOpError("factors ") << ba << " x " << bb << " do not multiply to the MLP width " << n;
  CHECK(expectLength(*this, getNorm(), d, "norm"));
  for (auto [value, name] : {std::pair{getW1a(), "w1a"}, {getW2a(), "w2a"}, {getW3a(), "w3a"}})
    CHECK(expectShape(*this, value, {ba, ba}, name));
  for (auto [value, name] : {std::pair{getW1b(), "w1b"}, {getW2b(), "w2b"}, {getW3b(), "w3b"}})
    CHECK(expectShape(*this, value, {bb, bb}, name));
  for (auto [value, name] : {std::pair{getD2(), "d2"}, {getB2(), "b2"}, {getD3(), "d3"}, {getD4(), "d4"},
                             {getP1(), "p1"}, {getP2(), "p2"}})
    CHECK(expectLength(*this, value, n, name));
  CHECK(expectShape(*this, getCondV(), {d, 8}, "cond_v"));
  CHECK(expectShape(*this, getCondU(), {8, n}, "cond_u"));
  return expectLength(*this, getResult(), d, "result");
}

LogicalResult BlockUpdateOp::verify() {
  CHECK(verifyStatic(*this));
  CHECK(expectLength(*this, getMlp(), length(getX1()), "mlp"));
  CHECK(expectLength(*this, getU(), length(getX1()), "u"));
  return expectLength(*this, getResult(), length(getX1()), "result");
}

//===----------------------------------------------------------------------===//
// Structure and heads
//===----------------------------------------------------------------------===//

LogicalResult BlockOp::verify() {
  CHECK(verifyStatic(*this));
  CHECK(verifyLanes(*this, getLanes()));
  if (getIdAttr().getInt() < 0 || getSourceAttr().getInt() < 0)
    return emitOpError("id and source must be non-negative");
  if (getEngramSiteAttr() && getEngramSiteAttr().getInt() < 0)
    return emitOpError("engram_site must be non-negative");
  if (getResult().getType() != getLanes().getType())
    return emitOpError("must yield lanes of the input's type");
  CHECK(expectLength(*this, getCell(), shapeOf(getLanes())[1], "cell"));
  Block &body = getBody().front();
  if (body.getNumArguments() != 3 || body.getArgument(0).getType() != getLanes().getType() ||
      body.getArgument(1).getType() != getToken().getType() ||
      body.getArgument(2).getType() != getPosition().getType())
    return emitOpError("body must take (lanes, token, position) of the op's operand types");
  auto yield = dyn_cast<YieldOp>(body.getTerminator());
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
    return emitOpError(engram ? "gathers engram rows but has no engram_site" : "has an engram_site but no engram_gather");
  return success();
}

LogicalResult HeadOp::verify() {
  CHECK(verifyStatic(*this));
  if (getKind() != "confidence" && getKind() != "embedding")
    return emitOpError("kind must be \"confidence\" or \"embedding\", got \"") << getKind() << "\"";
  ArrayRef<int64_t> probes = shapeOf(getProbes());
  if (probes.size() != 3)
    return emitOpError("probes must be [rows, probes, d_model]");
  const int64_t rows = probes[0], count = probes[1], d = probes[2];
  if (static_cast<int64_t>(getCells().size()) != rows)
    return emitOpError("has ") << getCells().size() << " cells but " << rows
                               << " head rows; each cell (x0, then one per block) needs its row";
  for (Value cell : getCells())
    CHECK(expectLength(*this, cell, d, "every cell"));
  CHECK(expectShape(*this, getGain(), {rows, count}, "gain"));
  const int64_t queries = shapeOf(getQuery())[0];
  CHECK(expectShape(*this, getQuery(), {queries, d}, "query"));
  CHECK(expectShape(*this, getRowBias(), {queries, rows, count}, "row_bias"));
  const int64_t out = shapeOf(getProj())[0];
  CHECK(expectShape(*this, getProj(), {out, queries * d}, "proj"));
  const bool confidence = getKind() == "confidence";
  if (confidence != static_cast<bool>(getBias()))
    return emitOpError(confidence ? "confidence needs a bias" : "embedding takes no bias");
  if (getBias())
    CHECK(expectLength(*this, getBias(), out, "bias"));
  return expectLength(*this, getResult(), out, "result");
}
