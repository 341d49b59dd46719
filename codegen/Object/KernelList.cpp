#include "codegen/Object/KernelList.h"

#include "codegen/Select/KernelRegistry.h"
#include "codegen/Select/WeightLayouts.h"
#include "runtime/needle_contract.h"

#include <fmt/format.h>

namespace needle {

namespace {

std::string scalarOf(const KernelArg &arg) {
  switch (arg.kind) {
  case KernelArg::Kind::I32:
  case KernelArg::Kind::I64:
    return fmt::format("{}", arg.value);
  case KernelArg::Kind::F32:
    return fmt::format("{}", static_cast<float>(arg.real));
  case KernelArg::Kind::F64:
    return fmt::format("{}", arg.real);
  default:
    return "";
  }
}

/// The layouts of a cq_row_panels gather's panels, a run of one layout named once with its
/// count: "CqLut16*7,CqX8" (Halide's tiles as "tiled" and their rows).
std::string panelLayouts(const std::vector<int64_t> &panels) {
  constexpr std::string_view names[] = {"file", "CqX8", "CqLut16", "CqLutDword", "CqLutChunkMajor", "tiled"};
  std::vector<std::string> each;
  for (size_t k = 0; k < panels.size(); k += needle_rt::cq_panel_fields)
    each.push_back(fmt::format("{}{}", names[panels[k + 1]],
                               panels[k + 1] == needle_rt::cq_panel_tiled ? std::to_string(panels[k + 2]) : ""));
  std::string text;
  for (size_t k = 0, run = 1; k < each.size(); k += run, run = 1) {
    while (k + run < each.size() && each[k + run] == each[k])
      ++run;
    text += (text.empty() ? "" : ",") + each[k] + (run > 1 ? fmt::format("*{}", run) : "");
  }
  return text;
}

/// One call's line; `task` "K/N" for task K of a parallel stage of N, "token" for a loop whose
/// tokens are tasks (docs/codegen.md, "Parallel stages").
std::string lineOf(std::string_view where, const KernelCall &call, const HalideKernels &halide,
                   const std::string &task = {}) {
  const KernelInfo *info = findKernel(call.kernel);
  std::string line;
  if (const HalideKernel *kernel = halideKernelOf(halide, call))
    line = fmt::format("{:<15} {} halide {}", where, call.kernel == "cq_matmul" ? kernel->batched : kernel->name,
                       isCqMatvec(call) ? "tiled" : "file");
  else
    line = fmt::format("{:<15} {} {} {}", where, call.kernel, isaName(info->isa), layoutName(info->layout));
  for (size_t i = 0; i < call.args.size(); ++i)
    if (const std::string value = scalarOf(call.args[i]); !value.empty())
      line += fmt::format(" {}={}", info->parameters[i], value);
  if (call.kernel == kGatherFromPanels)
    line += " layouts=" + panelLayouts(argument(call, "panels").ints);
  return line + (task.empty() ? "" : " task=" + task) + "\n";
}

std::string_view stageName(StepStage::Kind kind) {
  switch (kind) {
  case StepStage::Kind::EachToken:
    return "each-token";
  case StepStage::Kind::LastToken:
    return "last-token";
  case StepStage::Kind::Batched:
    return "batched";
  }
  return "";
}

} // namespace

std::string describeKernels(const KernelProgram &program, const HalideKernels &halide) {
  verifyKernelCalls(program);
  std::string text;
  for (const RungProgram &rung : program.rungs) {
    if (program.rungs.size() > 1)
      text += fmt::format("depth {}:\n", rung.facts.numLayers);
    for (const StepStage &stage : rung.step)
      for (size_t i = 0; i < stage.calls.size(); ++i)
        if (!stage.calls[i].kernel.empty())
          text += lineOf(stageName(stage.kind), stage.calls[i], halide,
                         !stage.parallel                            ? ""
                         : stage.kind == StepStage::Kind::EachToken ? "token"
                                                                    : fmt::format("{}/{}", i, stage.calls.size()));
    for (const auto &[where, calls] :
         {std::pair{"confidence-head", &rung.confidenceHead}, std::pair{"embedding-head", &rung.embeddingHead}})
      for (const KernelCall &call : *calls)
        if (!call.kernel.empty())
          text += lineOf(where, call, halide);
  }
  return text;
}

} // namespace needle
