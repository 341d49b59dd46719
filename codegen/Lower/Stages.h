// Batched steps: @step's calls for one token become stages that carry n tokens at once
// (StepStage in KernelProgram.h, docs/codegen.md "Batched steps"). Plain C++, no MLIR.
#pragma once

#include "codegen/Lower/KernelProgram.h"

namespace needle {

/// A call of the one-token step, and whether its results reach only the outputs (the logits),
/// so that only the last token of a batch needs it.
struct StepCall {
  KernelCall call;
  bool outputsOnly = false;
};

/// Groups the one-token step `calls` into stages. Scratch (arena offsets >= `outputsEnd`) is
/// per token; everything else in the arena (state and outputs) is shared by the batch, so the
/// calls that touch one shared buffer keep their one-token order: they stay in one EachToken
/// loop, or EachToken calls followed by LastToken ones. A CQ matvec between two such calls is not
/// batched, and an outputs-only call among them runs for every token. Batched calls are
/// cq_matmul(packed, norms, codebook, bits, rows, cols, x, y, stride, n), stride in floats; a
/// `batch` of 1 has none.
std::vector<StepStage> planStages(const std::vector<StepCall> &calls, int64_t outputsEnd, int64_t tokenStride,
                                  int64_t batch);

} // namespace needle
