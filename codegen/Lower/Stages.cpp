#include "codegen/Lower/Stages.h"
#include "codegen/Select/KernelRegistry.h"

#include <map>
#include <set>
#include <utility>

namespace needle {

namespace {

using Mode = StepStage::Kind;
using ArgKind = KernelArg::Kind;

bool perToken(const KernelArg &arg, int64_t outputsEnd) {
  return arg.kind == ArgKind::Arena && arg.value >= outputsEnd;
}

/// cq_matvec(packed, norms, codebook, bits, rows, cols, x, y) on per-token x and y.
bool batchable(const KernelCall &call, int64_t outputsEnd) {
  return call.kernel == "cq_matvec" && perToken(argument(call, "x_rot"), outputsEnd) &&
         perToken(argument(call, "y"), outputsEnd);
}

/// The shared arena buffers (by offset) `arg` names, pointer lists included.
void collectShared(const KernelArg &arg, int64_t outputsEnd, std::set<int64_t> &shared) {
  if (arg.kind == ArgKind::Arena && arg.value < outputsEnd)
    shared.insert(arg.value);
  for (const KernelArg &pointer : arg.pointers)
    collectShared(pointer, outputsEnd, shared);
}

/// Each call's stage number, for `modes`: a new stage where the mode changes and at every
/// Batched call.
std::vector<int> stageNumbers(const std::vector<Mode> &modes) {
  std::vector<int> stage(modes.size());
  for (size_t i = 1; i < modes.size(); ++i)
    stage[i] = stage[i - 1] + (modes[i] != modes[i - 1] || modes[i] == Mode::Batched ? 1 : 0);
  return stage;
}

/// Whether the calls at `refs` (ascending) touch their shared buffer in one-token order: all
/// their EachToken calls in one stage, and no EachToken call after a LastToken one.
bool inTokenOrder(const std::vector<size_t> &refs, const std::vector<Mode> &modes, const std::vector<int> &stage) {
  int eachStage = -1;
  bool afterLast = false;
  for (size_t i : refs) {
    if (modes[i] == Mode::LastToken) {
      afterLast = true;
    } else if (modes[i] == Mode::EachToken) {
      if (afterLast || (eachStage >= 0 && eachStage != stage[i]))
        return false;
      eachStage = stage[i];
    }
  }
  return true;
}

/// The calls' modes: outputs-only calls LastToken, batchable matvecs Batched, the rest
/// EachToken; then every call between two that break a shared buffer's order becomes
/// EachToken, until none does (each round only merges stages, so this ends).
std::vector<Mode> chooseModes(const std::vector<StepCall> &calls, int64_t outputsEnd, bool batching) {
  std::vector<Mode> modes;
  std::map<int64_t, std::vector<size_t>> refs; // by shared buffer
  for (size_t i = 0; i < calls.size(); ++i) {
    const KernelCall &call = calls[i].call;
    modes.push_back(calls[i].outputsOnly                      ? Mode::LastToken
                    : batching && batchable(call, outputsEnd) ? Mode::Batched
                                                              : Mode::EachToken);
    std::set<int64_t> shared;
    for (const KernelArg &arg : call.args)
      collectShared(arg, outputsEnd, shared);
    for (int64_t buffer : shared)
      refs[buffer].push_back(i);
  }
  for (bool changed = true; changed;) {
    changed = false;
    const std::vector<int> stage = stageNumbers(modes);
    for (const auto &[buffer, at] : refs)
      if (!inTokenOrder(at, modes, stage))
        for (size_t i = at.front(); i <= at.back(); ++i)
          if (modes[i] != Mode::EachToken) {
            modes[i] = Mode::EachToken;
            changed = true;
          }
  }
  return modes;
}

KernelCall batched(KernelCall call, int64_t tokenStride) {
  call.kernel = "cq_matmul";
  call.args.push_back(KernelArg::i64(tokenStride / static_cast<int64_t>(sizeof(float))));
  call.args.push_back(KernelArg::of(ArgKind::Count));
  return call;
}

} // namespace

std::vector<StepStage> planStages(const std::vector<StepCall> &calls, int64_t outputsEnd, int64_t tokenStride,
                                  int64_t batch) {
  // Comment lines ride on the next call.
  std::vector<StepCall> real;
  std::string comment;
  for (const StepCall &call : calls) {
    if (call.call.kernel.empty()) {
      comment += (comment.empty() ? "" : "\n") + call.call.comment;
      continue;
    }
    real.push_back(call);
    if (!comment.empty())
      real.back().call.comment = std::exchange(comment, {});
  }
  const std::vector<Mode> modes = chooseModes(real, outputsEnd, batch > 1);
  std::vector<StepStage> stages;
  for (size_t i = 0; i < real.size(); ++i) {
    if (stages.empty() || modes[i] != stages.back().kind || modes[i] == Mode::Batched)
      stages.push_back({modes[i], {}});
    stages.back().calls.push_back(modes[i] == Mode::Batched ? batched(real[i].call, tokenStride) : real[i].call);
  }
  return stages;
}

} // namespace needle
