#include "codegen/Halide/Bitcode.h"
#include "codegen/Halide/Kernels.h"

#include <cmath>

namespace needle {

using namespace Halide;

void HalideKernelSet::addHadamard(const HadamardShape &shape, const std::string &name) {
  const int group = static_cast<int>(shape.group);
  ImageParam x(Float(32), 1, "in");
  Var i("i"), g("g"), j("j");

  // As needle_rt::fwht per group: butterflies stage by stage (half = 1, 2, 4, ...), then one
  // scale. Each stage is a whole group in vector registers.
  std::vector<Func> stages;
  stages.emplace_back("stage0");
  stages[0](i, g) = x(g * group + i);
  for (int half = 1; half < group; half *= 2) {
    const Func &previous = stages.back();
    Func next("stage" + std::to_string(stages.size()));
    const Expr lower = (i & half) == 0;
    next(i, g) = select(lower, previous(i, g) + previous(min(i + half, group - 1), g),
                        previous(max(i - half, 0), g) - previous(i, g));
    stages.push_back(next);
  }
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(group)));
  Func out("out");
  out(j) = stages.back()(j % group, j / group) * scale;

  out.split(j, g, i, group).vectorize(i);
  for (Func &stage : stages)
    stage.compute_at(out, g).vectorize(i).store_in(MemoryType::Register);

  x.dim(0).set_min(0).set_stride(1);
  out.output_buffer().dim(0).set_min(0).set_stride(1);
  modules_->modules.push_back(kernelModule(out, {x}, target_, name));
}

} // namespace needle
