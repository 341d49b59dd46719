// fuzz-lora: a LoRA adapter (any bytes) merged by mergeLora (Model/Lora.h) into the tiny preset's
// model, made once, in memory: the adapter is read by SafetensorsFile::parse, the checks
// SafetensorsFile::read makes on a file. A merge changes only the tensors the adapter names (and
// the provenance), so a run restores just those from the pristine model: copying the whole model
// would dominate the run.
#include "FuzzHarness.h"
#include "Model/Lora.h"
#include "Model/Safetensors.h"
#include "Model/Synth.h"

#include <algorithm>

using namespace needle;

namespace {

/// Undoes whatever mergeLora(model, adapter) may have changed, fully merged or not.
void restore(Model &model, const Model &pristine, std::span<const uint8_t> adapter) {
  model.provenance = pristine.provenance;
  try {
    const SafetensorsFile file = SafetensorsFile::parse(adapter, "adapter.safetensors");
    for (const SafetensorsEntry &entry : file.entries()) {
      // "X.lora_A" and "X.lora_B" name X; other names make mergeLora fail before any change.
      const std::string target = entry.name.substr(0, entry.name.size() - std::min<size_t>(7, entry.name.size()));
      if (auto it = pristine.tensors.find(target); it != pristine.tensors.end())
        model.tensors.at(target) = it->second;
    }
  } catch (const Error &) {
    // mergeLora read the same file first and failed there, before touching the model.
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const Model pristine = synthesizeModel(presetConfig("tiny"), 1, SynthInit::Spread);
  static Model model = pristine;
  const std::span<const uint8_t> adapter(data, size);
  fuzz::guarded([&] { mergeLora(model, SafetensorsFile::parse(adapter, "adapter.safetensors")); });
  restore(model, pristine, adapter);
  return 0;
}
