// fuzz-safetensors: the safetensors reader (Model/Safetensors.h) on any bytes, in memory
// (SafetensorsFile::parse makes read()'s checks). A file it accepts must decode (floats()),
// survive serializeSafetensors and a second parse unchanged, and go through the model loader
// (modelFromSafetensors, Model/ModelFiles.h) as the tensors of the small seed model's
// config.json, then through quantization, as every tool prepares a model.
#include "FuzzHarness.h"
#include "Model/ModelFiles.h"
#include "Model/Quantize.h"
#include "Model/Safetensors.h"

#include <algorithm>
#include <optional>

using namespace needle;

namespace {

/// Writes the accepted file's tensors and metadata back and reads them again: the same tensors
/// (names, dtypes, shapes, bytes, in order) and the same metadata.
void checkRoundTrip(const SafetensorsFile &file) {
  std::vector<SafetensorsWriteEntry> written;
  for (const SafetensorsEntry &entry : file.entries()) {
    const std::span<const uint8_t> bytes = file.bytes(entry);
    written.push_back({entry.name, entry.dtype, entry.shape, {bytes.begin(), bytes.end()}});
  }
  const std::vector<uint8_t> bytes = serializeSafetensors(written, file.metadata());
  const SafetensorsFile again =
      fuzz::mustAccept("reading the written file", [&] { return SafetensorsFile::parse(bytes, "written"); });
  NEEDLE_FUZZ_CHECK(again.metadata() == file.metadata());
  NEEDLE_FUZZ_CHECK(again.entries().size() == written.size());
  for (size_t i = 0; i < written.size(); ++i) {
    const SafetensorsEntry &entry = again.entries()[i];
    const std::span<const uint8_t> bytes = again.bytes(entry);
    NEEDLE_FUZZ_CHECK(entry.name == written[i].name && entry.dtype == written[i].dtype &&
                      entry.shape == written[i].shape);
    NEEDLE_FUZZ_CHECK(std::equal(bytes.begin(), bytes.end(), written[i].bytes.begin(), written[i].bytes.end()));
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const Config config = parseConfig(fuzz::kSmallConfig, "config.json");
  return fuzz::guarded([&] {
    const SafetensorsFile file = SafetensorsFile::parse({data, size}, "model.safetensors");
    for (const SafetensorsEntry &entry : file.entries())
      if (entry.dtype == DType::F32 || entry.dtype == DType::F16 || entry.dtype == DType::BF16)
        NEEDLE_FUZZ_CHECK(file.floats(entry).size() == static_cast<size_t>(entry.elements()));
    checkRoundTrip(file);
    Model model = modelFromSafetensors(config, file);
    quantizeModel(model, std::nullopt);
  });
}
