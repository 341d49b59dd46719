// needlec: the ahead-of-time compiler driver (spec/cli.md). This build emits .needle models;
// the MLIR pipeline and the backends arrive with later issues and say so until then.
#include "Model/ModelFiles.h"
#include "Model/NeedleFile.h"
#include "Model/Prepare.h"
#include "Support/CommandLine.h"
#include "Support/Error.h"
#include "Support/Files.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

namespace fs = std::filesystem;
using namespace needle;

namespace {

void checkName(const std::string &name) {
  bool ok = !name.empty() && (std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_');
  for (char c : name)
    ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
  if (!ok)
    fail("--name: \"{}\" is not a C identifier", name);
}

void checkTarget(const std::string &target) {
  static const char *known[] = {"host", "x86_64", "aarch64", "armv7", "riscv64", "wasm32"};
  for (const char *name : known)
    if (target == name)
      return;
  // Anything else must look like an LLVM triple: arch-vendor-os[-env].
  if (std::count(target.begin(), target.end(), '-') < 2)
    fail("--target: \"{}\" is not host, x86_64, aarch64, armv7, riscv64, wasm32 or an LLVM triple", target);
}

void printStats(const Model &model, uint64_t fileBytes) {
  uint64_t payload = 0, cqWeights = 0, cqBytes = 0;
  int cqTensors = 0;
  for (const auto &[name, t] : model.tensors) {
    payload += t.storedBytes();
    if (t.storage == Tensor::Storage::CQ) {
      ++cqTensors;
      cqWeights += t.elements();
      cqBytes += t.storedBytes();
    }
  }
  std::printf("layers: %lld\n", static_cast<long long>(model.config.numLayers));
  std::printf("parameters: %lld\n", static_cast<long long>(model.parameterCount()));
  std::printf("tensors: %zu (%d CQ)\n", model.tensors.size(), cqTensors);
  std::printf("cq bits per weight: %.4f\n", cqWeights ? 8.0 * cqBytes / cqWeights : 0.0);
  std::printf("payload bytes: %llu\n", static_cast<unsigned long long>(payload));
  std::printf("file bytes: %llu\n", static_cast<unsigned long long>(fileBytes));
  std::printf("container overhead: %.4f%%\n", 100.0 * (fileBytes - payload) / std::max<uint64_t>(payload, 1));
}

int run(int argc, char **argv) {
  CommandLine cl("needlec", "needlec MODEL [options] -o OUT",
                 {{"layers", "N", "ladder depth to compile (default: all blocks)"},
                  {"target", "T", "host (default), x86_64, aarch64, armv7, riscv64, wasm32, or an LLVM triple"},
                  {"emit", "KIND", "obj (default), cpp, needle, mlir or llvm"},
                  {"name", "NAME", "C symbol prefix (default needle_model)"},
                  {"lora", "FILE", "merge this LoRA adapter (.safetensors) before quantization"},
                  {"max-seq", "N", "lower max_seq_len to shrink the session arena"},
                  {"codebook", "KIND", "needle (default) or lloyd-max, for quantizing float weights"},
                  {"stats", "", "print figures about the compiled model"},
                  {"o", "OUT", "output path"}});
  if (!cl.parse(argc, argv))
    return 0;
  const std::string input = cl.onlyPositional("MODEL");
  const std::string emit = cl.value("emit").value_or("obj");
  if (emit == "obj" || emit == "cpp" || emit == "mlir" || emit == "llvm")
    fail("--emit {}: not implemented yet in this build (it comes with the MLIR pipeline and backends); "
         "--emit needle works",
         emit);
  if (emit != "needle")
    fail("--emit: \"{}\" is not obj, cpp, needle, mlir or llvm", emit);
  checkTarget(cl.value("target").value_or("host"));
  checkName(cl.value("name").value_or("needle_model"));
  const cq::CodebookKind codebook = cq::parseCodebookKind(cl.value("codebook").value_or("needle"));
  const std::string out = cl.value("o").value_or("");
  if (out.empty())
    fail("-o: missing; say where to write the output");

  PrepareOptions options;
  options.layers = cl.integer("layers");
  if (auto lora = cl.value("lora"))
    options.lora = *lora;
  options.codebook = codebook;
  Model model = prepareModel(input, options);
  if (std::optional<int64_t> maxSeq = cl.integer("max-seq")) {
    if (*maxSeq < 1 || *maxSeq > model.config.maxSeqLen)
      fail("--max-seq: {} is outside 1..{} (the model's max_seq_len)", *maxSeq, model.config.maxSeqLen);
    model.config.maxSeqLen = *maxSeq;
  }
  const std::vector<uint8_t> bytes = serializeNeedle(model);
  PendingOutput output(out, PendingOutput::Kind::File);
  writeFile(output.staging(), bytes);
  output.commit();
  if (cl.has("stats"))
    printStats(model, bytes.size());
  return 0;
}

} // namespace

int main(int argc, char **argv) { return runTool("needlec", run, argc, argv); }
