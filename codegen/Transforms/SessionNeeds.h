// What each op of @step needs from a session's arena besides its results: state that persists
// from token to token, and scratch for the duration of its kernel call. The sizes are the
// runtime kernels' own (runtime/needle_contract.h), so planner and kernels cannot disagree.
#pragma once

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Operation.h"

#include <cstdint>

namespace needle {

/// What bounds a session's state: the module's needle.max_seq_len and needle.max_rollback.
/// The module attribute (unit) that asks needle-plan-session for a log of the fed tokens after the
/// header: a rung of an object of several keeps one (docs/c-interface.md, "Every rung in one object").
inline constexpr const char *kTokenLogAttr = "needle.token_log";

struct SessionLimits {
  int64_t maxSeqLen = 0;   // tokens a session holds
  int64_t maxRollback = 0; // positions it can go back (docs/c-interface.md, "Taking tokens back")
  bool tokenLog = false;   // whether the arena keeps a log of the fed tokens (kTokenLogAttr)
};

/// The module's limits; maxSeqLen is 0 when the module has no needle.max_seq_len.
SessionLimits sessionLimits(mlir::ModuleOp module);

struct SessionNeeds {
  int64_t stateBytes = 0;   // kept across tokens (KV rings, tap rings, token ring, pooling)
  int64_t scratchBytes = 0; // needed only while the op's kernel runs
};

/// The state and scratch of `op` in a session within `limits`.
SessionNeeds sessionNeeds(mlir::Operation *op, const SessionLimits &limits);

/// Positions the KV ring of an attention with `window` keeps (0 = global): the window and the
/// positions a session can go back, at most max_seq_len.
int64_t kvCapacity(int64_t window, const SessionLimits &limits);

} // namespace needle
