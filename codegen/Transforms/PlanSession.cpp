// needle-plan-session: every byte of a session gets a compile-time place in one arena
// (Passes.td has the layout).
#include "codegen/Transforms/Passes.h"
#include "codegen/Transforms/SessionNeeds.h"

#include "Support/RoundUp.h"
#include "needle_contract.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <algorithm>

namespace needle {
#define GEN_PASS_DEF_PLANSESSION
#include "codegen/Transforms/Passes.h.inc"
} // namespace needle

using namespace mlir;
using namespace needle::ir;

namespace {

constexpr int64_t kAlign = 64;       // every region and buffer starts on a cache line
constexpr int64_t kHeaderBytes = 64; // the position counter and the session's bookkeeping

int64_t bytesOf(Value v) {
  auto type = cast<RankedTensorType>(v.getType());
  return type.getNumElements() * type.getElementTypeBitWidth() / 8;
}

/// Values that live in the arena: tensors computed per token, not weights, constants or heads' outputs.
bool inArena(Value v) {
  if (!isa<RankedTensorType>(v.getType()))
    return false;
  Operation *def = v.getDefiningOp();
  // A head's output is computed when the C interface asks for it, into the caller's memory.
  return !def || !(isa<WeightOp, HeadOp>(def) || def->hasTrait<OpTrait::ConstantLike>());
}

/// A byte range that must not overlap any other whose lifetime [first, last] overlaps it.
struct Lifetime {
  int64_t first = 0, last = 0, bytes = 0;
  int64_t offset = -1;
};

/// First fit by lifetime: each range takes the lowest aligned offset free of every range still
/// alive when it starts. Returns the bytes used.
int64_t placeFirstFit(std::vector<Lifetime *> &ranges) {
  std::stable_sort(ranges.begin(), ranges.end(), [](Lifetime *a, Lifetime *b) { return a->first < b->first; });
  std::vector<Lifetime *> alive;
  int64_t used = 0;
  for (Lifetime *range : ranges) {
    std::erase_if(alive, [&](Lifetime *other) { return other->last < range->first; });
    std::sort(alive.begin(), alive.end(), [](Lifetime *a, Lifetime *b) { return a->offset < b->offset; });
    int64_t offset = 0;
    for (Lifetime *other : alive) {
      if (offset + range->bytes <= other->offset)
        break;
      offset = std::max(offset, needle::roundUp(other->offset + other->bytes, kAlign));
    }
    range->offset = offset;
    used = std::max(used, offset + range->bytes);
    alive.push_back(range);
  }
  return used;
}

class SessionPlanner {
public:
  SessionPlanner(func::FuncOp step, const needle::SessionLimits &limits) : step_(step), limits_(limits) {}

  /// Plans the arena and records it on the ops; returns the module's arena description.
  DictionaryAttr run();

private:
  void number(Block &block);
  void addValue(Value v, int64_t definedAt);
  Value find(Value v);
  void unite(Value a, Value b);
  DenseI64ArrayAttr pair(int64_t offset, int64_t bytes) { return b_.getDenseI64ArrayAttr({offset, bytes}); }

  func::FuncOp step_;
  needle::SessionLimits limits_;
  OpBuilder b_{step_.getContext()};
  std::vector<Operation *> ops_;               // program order, block bodies in place
  llvm::DenseMap<Operation *, int64_t> index_; // position in ops_
  llvm::DenseMap<Value, Value> parent_;        // values sharing a buffer (union-find)
  std::vector<Value> values_;                  // in program order: the plan must not depend on hashing
  llvm::DenseMap<Value, int64_t> definedAt_;
  llvm::MapVector<Value, Lifetime> buffers_; // by class representative
};

void SessionPlanner::number(Block &block) {
  for (Operation &op : block) {
    index_[&op] = static_cast<int64_t>(ops_.size());
    ops_.push_back(&op);
    if (auto inner = dyn_cast<BlockOp>(op))
      number(inner.getBody().front());
  }
}

void SessionPlanner::addValue(Value v, int64_t definedAt) {
  if (!inArena(v))
    return;
  parent_[v] = v;
  definedAt_[v] = definedAt;
  values_.push_back(v);
}

Value SessionPlanner::find(Value v) {
  Value root = v;
  while (parent_.lookup(root) != root)
    root = parent_.lookup(root);
  return root;
}

void SessionPlanner::unite(Value a, Value b) {
  if (!parent_.count(a) || !parent_.count(b))
    return; // a weight or a constant: not in the arena
  parent_[find(b)] = find(a);
}

DictionaryAttr SessionPlanner::run() {
  number(step_.getBody().front());
  for (Operation *op : ops_) {
    for (Value result : op->getResults())
      addValue(result, index_[op]);
    if (auto block = dyn_cast<BlockOp>(op))
      addValue(block.getBody().front().getArgument(0), index_[op]);
  }
  // A block works on its operand's lanes in place and yields into its results.
  for (Operation *op : ops_)
    if (auto block = dyn_cast<BlockOp>(op)) {
      Block &body = block.getBody().front();
      unite(block.getLanes(), body.getArgument(0));
      auto yield = cast<YieldOp>(body.getTerminator());
      unite(yield.getLanes(), block.getResult());
      unite(yield.getCell(), block.getCell());
    }
  // One lifetime per class: from its first definition to its last use.
  for (Value value : values_) {
    Lifetime &life = buffers_.try_emplace(find(value), Lifetime{INT64_MAX, 0, bytesOf(value)}).first->second;
    life.first = std::min(life.first, definedAt_[value]);
    life.last = std::max(life.last, definedAt_[value]);
    for (OpOperand &use : value.getUses())
      life.last = std::max(life.last, index_[use.getOwner()]);
  }

  int64_t cursor = kHeaderBytes;
  const int64_t tokenLog = limits_.tokenLog ? cursor : 0;
  if (limits_.tokenLog)
    cursor += needle_rt::token_log_bytes(limits_.maxSeqLen);
  for (Operation *op : ops_)
    if (const int64_t bytes = needle::sessionNeeds(op, limits_).stateBytes) {
      op->setAttr("needle.state", pair(cursor, bytes));
      cursor = needle::roundUp(cursor + bytes, kAlign);
    }
  const int64_t stateEnd = cursor;
  // What @step returns must outlive the call: it is read after feed() returns.
  llvm::DenseSet<Value> outputs;
  for (Value returned : step_.getBody().front().getTerminator()->getOperands())
    if (parent_.count(returned) && outputs.insert(find(returned)).second) {
      buffers_[find(returned)].offset = cursor;
      cursor = needle::roundUp(cursor + buffers_[find(returned)].bytes, kAlign);
    }
  const int64_t outputsEnd = cursor;

  std::vector<Lifetime> kernelScratch(ops_.size());
  std::vector<Lifetime *> scratch;
  for (auto &[root, life] : buffers_)
    if (!outputs.contains(root))
      scratch.push_back(&life);
  for (size_t i = 0; i < ops_.size(); ++i)
    if (const int64_t bytes = needle::sessionNeeds(ops_[i], limits_).scratchBytes) {
      kernelScratch[i] = Lifetime{static_cast<int64_t>(i), static_cast<int64_t>(i), bytes};
      scratch.push_back(&kernelScratch[i]);
    }
  const int64_t scratchBytes = placeFirstFit(scratch);
  for (Lifetime *life : scratch)
    life->offset += outputsEnd;

  for (size_t i = 0; i < ops_.size(); ++i) {
    Operation *op = ops_[i];
    if (kernelScratch[i].bytes)
      op->setAttr("needle.scratch", pair(kernelScratch[i].offset, kernelScratch[i].bytes));
    if (llvm::none_of(op->getResults(), [&](Value v) { return parent_.count(v); }))
      continue;
    SmallVector<int64_t> offsets;
    for (Value result : op->getResults())
      offsets.push_back(parent_.count(result) ? buffers_[find(result)].offset : -1);
    op->setAttr("needle.buffers", b_.getDenseI64ArrayAttr(offsets));
  }
  const int64_t size = needle::roundUp(outputsEnd + scratchBytes, kAlign);
  SmallVector<NamedAttribute> plan = {b_.getNamedAttr("align", b_.getI64IntegerAttr(kAlign)),
                                      b_.getNamedAttr("size", b_.getI64IntegerAttr(size)),
                                      b_.getNamedAttr("state_end", b_.getI64IntegerAttr(stateEnd)),
                                      b_.getNamedAttr("outputs_end", b_.getI64IntegerAttr(outputsEnd))};
  if (tokenLog)
    plan.push_back(b_.getNamedAttr("token_log", b_.getI64IntegerAttr(tokenLog)));
  return b_.getDictionaryAttr(plan);
}

struct PlanSessionPass : needle::impl::PlanSessionBase<PlanSessionPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    const needle::SessionLimits limits = needle::sessionLimits(module);
    if (limits.maxSeqLen < 1) {
      module.emitError("needle-plan-session: the module needs a positive ") << kMaxSeqLenAttr;
      return signalPassFailure();
    }
    if (limits.maxRollback < 0 || limits.maxRollback > limits.maxSeqLen) {
      module.emitError("needle-plan-session: ") << kMaxRollbackAttr << " must be within 0.." << kMaxSeqLenAttr;
      return signalPassFailure();
    }
    auto step = module.lookupSymbol<func::FuncOp>("step");
    if (!step) {
      module.emitError("needle-plan-session: the module has no func.func @step");
      return signalPassFailure();
    }
    module->setAttr(kArenaAttr, SessionPlanner(step, limits).run());
  }
};

} // namespace
