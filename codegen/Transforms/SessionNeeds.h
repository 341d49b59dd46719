// What each op of @step needs from a session's arena besides its results: state that persists
// from token to token, and scratch for the duration of its kernel call. The sizes are the
// runtime kernels' own (runtime/needle_contract.h), so planner and kernels cannot disagree.
#pragma once

#include "mlir/IR/Operation.h"

#include <cstdint>

namespace needle {

struct SessionNeeds {
  int64_t stateBytes = 0;   // kept across tokens (KV rings, tap rings, token ring, pooling)
  int64_t scratchBytes = 0; // needed only while the op's kernel runs
};

/// The state and scratch of `op` in a session of at most `maxSeqLen` tokens.
SessionNeeds sessionNeeds(mlir::Operation *op, int64_t maxSeqLen);

/// Positions the KV ring of an attention with `window` keeps (0 = global).
int64_t kvCapacity(int64_t window, int64_t maxSeqLen);

} // namespace needle
