// The lowering both backends share: a planned module (needle-plan-session has run) over its
// model file becomes a KernelProgram (codegen/Lower/KernelProgram.h).
#pragma once

#include "codegen/Lower/KernelProgram.h"

#include "Model/Model.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>
#include <unordered_map>
#include <vector>

namespace needle {

/// The weights of a program's rungs: each tensor's bytes stored once, however many rungs read
/// them (a deeper rung's blocks are a shallower one's and more).
class WeightStore {
public:
  /// The offset in `weights` of a copy of `bytes` bytes at `data` stored for a tensor of `shape`
  /// (a CQ matrix's, which a kernel may re-lay; empty for one no kernel re-lays): one already
  /// there, or one appended.
  int64_t add(std::vector<uint8_t> &weights, const void *data, size_t bytes, const std::string &shape);

private:
  struct Stored {
    int64_t offset;
    size_t bytes;
    std::string shape;
  };
  std::unordered_map<uint64_t, std::vector<Stored>> stored_; // by a hash of the bytes
};

/// Lowers planned `module` over `model` as one more rung of `program`, after those it holds, for
/// up to `batch` tokens per call of the step (the arena holds that many copies of the scratch):
/// its weights go through `store`, which shares them with the rungs before. `backend` (e.g.
/// "--emit cpp") prefixes every error.
void lowerRung(mlir::ModuleOp module, const Model &model, const std::string &backend, int64_t batch,
               KernelProgram &program, WeightStore &store);

/// The program of `module` alone: one rung.
KernelProgram lowerToKernelCalls(mlir::ModuleOp module, const Model &model, const std::string &backend, int64_t batch);

} // namespace needle
