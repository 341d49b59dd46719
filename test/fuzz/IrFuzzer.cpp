// fuzz-ir: needle-dialect IR text parsed and verified as needle-run reads FILE.mlir
// (tools/needle-run/main.cpp), and a module that verifies evaluated (Evaluate/Evaluator.h) for a
// whole session. The IR names a weights file (needle.model); the harness ignores it and always
// evaluates with the small seed model built in memory at startup, so fuzzing never opens a file.
// The seeds' IR was made from that model (make-seeds.sh), so their weights and codebooks match.
#include "Evaluate/Evaluator.h"
#include "FuzzHarness.h"
#include "Import/Importer.h"
#include "Model/Quantize.h"
#include "Model/Synth.h"
#include "Support/Limits.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

#include <optional>

using namespace needle;

namespace {

/// The model make-seeds.sh compiled the IR seeds from: the small config, seed 1, quantized.
const Model &smallModel() {
  static const Model model = [] {
    Model m = synthesizeModel(parseConfig(fuzz::kSmallConfig, "small.json"), 1, SynthInit::Spread);
    quantizeModel(m, std::nullopt);
    return m;
  }();
  return model;
}

/// Feeds max_seq_len tokens one by one (every ring wraps), then checks a full session refuses more.
void evaluate(mlir::ModuleOp module, const Model &model) {
  IrEvaluator evaluator(module, model);
  const Config &c = model.config;
  for (int64_t t = 0; t < c.maxSeqLen; ++t) {
    const int32_t token = static_cast<int32_t>((7 * t + 1) % c.vocabSize);
    evaluator.feed(std::span(&token, 1));
  }
  (void)evaluator.outputs();
  const int32_t more = 0;
  NEEDLE_FUZZ_CHECK(fuzz::refuses([&] { evaluator.feed(std::span(&more, 1)); }));
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const Model &model = smallModel();
  // A fresh context per input (as MLIR's own mlir-parser-fuzzer does): nothing an input uniques
  // outlives it. No threads: one context per run would otherwise start a thread pool each time.
  mlir::MLIRContext context(mlir::MLIRContext::Threading::DISABLED);
  loadNeedleDialects(context);
  mlir::ScopedDiagnosticHandler quiet(&context, [](mlir::Diagnostic &) { return mlir::success(); });
  return fuzz::guarded([&] {
    // As needle-run reads FILE.mlir: the nesting check first, since MLIR's parser recurses per level.
    const std::string_view text(reinterpret_cast<const char *>(data), size);
    checkIrNesting(text, "input.mlir");
    llvm::SourceMgr sources;
    sources.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(text, "input.mlir"), llvm::SMLoc());
    mlir::OwningOpRef<mlir::ModuleOp> module = mlir::parseSourceFile<mlir::ModuleOp>(sources, &context);
    if (module && mlir::succeeded(mlir::verify(*module)))
      evaluate(*module, model);
  });
}
