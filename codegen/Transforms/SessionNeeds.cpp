#include "codegen/Transforms/SessionNeeds.h"

#include "Needle/IR/NeedleDialect.h"
#include "needle_contract.h"

#include "llvm/ADT/TypeSwitch.h"

#include <algorithm>

using namespace mlir;
using namespace needle::ir;

namespace {

constexpr int64_t kFloat = sizeof(float);

} // namespace

needle::SessionLimits needle::sessionLimits(ModuleOp module) {
  SessionLimits limits;
  if (auto maxSeq = module->getAttrOfType<IntegerAttr>(kMaxSeqLenAttr))
    limits.maxSeqLen = maxSeq.getInt();
  if (auto rollback = module->getAttrOfType<IntegerAttr>(kMaxRollbackAttr))
    limits.maxRollback = rollback.getInt();
  limits.tokenLog = module->hasAttr(kTokenLogAttr);
  return limits;
}

int64_t needle::kvCapacity(int64_t window, const SessionLimits &limits) {
  return window > 0 ? std::min(window + limits.maxRollback, limits.maxSeqLen) : limits.maxSeqLen;
}

needle::SessionNeeds needle::sessionNeeds(Operation *op, const SessionLimits &limits) {
  return llvm::TypeSwitch<Operation *, SessionNeeds>(op)
      .Case([&](AttentionOp attention) {
        const int64_t capacity = kvCapacity(attention.getWindow(), limits);
        const int64_t width = lengthOf(attention.getKey()) + lengthOf(attention.getValue());
        return SessionNeeds{
            capacity * width * kFloat,
            needle_rt::attention_scratch_floats(capacity, attention.getHeads(), attention.getKvHeads()) * kFloat};
      })
      .Case([&](CausalTapsOp taps) {
        const int64_t floats = needle_rt::taps_state_floats(lengthOf(taps.getInput()), shapeOf(taps.getTaps())[0],
                                                            taps.getStride(), limits.maxRollback);
        return SessionNeeds{floats * kFloat, 0};
      })
      .Case([&](EngramGatherOp gather) {
        const int64_t longest = *std::max_element(gather.getOrders().begin(), gather.getOrders().end());
        return SessionNeeds{(longest + limits.maxRollback) * static_cast<int64_t>(sizeof(int32_t)), 0};
      })
      .Case([&](HeadOp head) { // its output is computed when asked, on the head function's stack
        const ArrayRef<int64_t> probes = shapeOf(head.getProbes());
        return SessionNeeds{needle_rt::head_slot_floats(probes[0], probes[1], probes[2], limits.maxRollback) * kFloat,
                            0};
      })
      .Case([&](KronMlpOp mlp) {
        return SessionNeeds{0, needle_rt::kron_mlp_scratch_floats(lengthOf(mlp.getD1())) * kFloat};
      })
      .Default([](Operation *) { return SessionNeeds{}; });
}
