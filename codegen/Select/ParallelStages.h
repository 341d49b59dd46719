// Parallel stages (docs/codegen.md, "Parallel stages"): the large CQ matrix products of @step
// cut into panels of rows, each a matrix of its own, and the independent products of a run of
// stages gathered into one stage whose calls may run in any order on any thread (the pool a
// product lends a session, docs/c-interface.md "Every core"). The cut is made here, at compile
// time, so every worker count computes the same sums. Plain C++, no MLIR.
#pragma once

#include "codegen/Lower/KernelProgram.h"

#include <cstdint>
#include <vector>

namespace needle {

/// A CQ matrix of at least 2·kPanelRows rows is cut into panels of about kPanelRows rows (a
/// multiple of kPanelMultiple, so every layout's tiles stay whole), at most kMostPanels of them.
inline constexpr int64_t kPanelRows = 256, kPanelMultiple = 64, kMostPanels = 8;

/// A stage of fewer weights than this runs on the calling thread: handing its tasks to a pool
/// would cost more than it saves.
inline constexpr int64_t kParallelMinWeights = int64_t{1} << 18;

/// A loop over the tokens whose calls touch only each token's scratch runs its tokens as tasks
/// when it has a Kronecker MLP or at least this many calls.
inline constexpr int64_t kTokenStageMinCalls = 4;

/// The rows of each panel a CQ matrix of `rows` rows is cut into (one entry: not cut).
std::vector<int64_t> panelRows(int64_t rows);

/// Cuts the CQ products of the program's Batched and LastToken stages (still on the file's
/// layout: run before the kernels are chosen) into panels and gathers consecutive products that
/// neither read nor write what another writes into parallel stages (StepStage::parallel); and
/// marks the EachToken loops whose tokens are independent (tokens as tasks, in a batch).
void planParallelStages(KernelProgram &program);

} // namespace needle
