// fuzz-needle: a .needle image (any bytes) through parseNeedle (Model/NeedleFile.h), which runs
// the FlatBuffers verifier and then validates the model. A model it accepts must serialize, read
// back and serialize again to the same bytes, and quantize as every tool prepares a model.
#include "FuzzHarness.h"
#include "Model/NeedleFile.h"
#include "Model/Quantize.h"

#include <optional>

using namespace needle;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::span<const uint8_t> bytes(data, size);
  return fuzz::guarded([&] {
    (void)looksLikeNeedle(bytes);
    Model model = parseNeedle(bytes, "input.needle");
    const std::vector<uint8_t> written = serializeNeedle(model);
    const Model again =
        fuzz::mustAccept("reading serializeNeedle's image", [&] { return parseNeedle(written, "written"); });
    NEEDLE_FUZZ_CHECK(serializeNeedle(again) == written);
    quantizeModel(model, std::nullopt);
  });
}
