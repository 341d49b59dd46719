// fuzz-config: config.json text through parseConfig and validateConfig (Model/Config.h). A config
// that passes every rule must give its derived quantities and tensor layout (Model/Layout.h)
// without a fault, and writeConfig's text must read back to the same config, byte for byte.
#include "FuzzHarness.h"
#include "Model/Config.h"
#include "Model/Layout.h"

#include <string_view>

using namespace needle;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string_view text(reinterpret_cast<const char *>(data), size);
  return fuzz::guarded([&] {
    const Config config = parseConfig(text, "config.json");
    validateConfig(config, "config.json");
    // Each divides or shifts by a validated field: UBSan watches them.
    (void)config.engramSubDim(), (void)config.engramDelta(), (void)config.mlpRows(), (void)config.mlpCols();
    (void)config.order(), (void)config.sources(), (void)modelLayout(config);

    const std::string written = writeConfig(config);
    const Config again =
        fuzz::mustAccept("reading writeConfig's text", [&] { return parseConfig(written, "written"); });
    fuzz::mustAccept("validating writeConfig's text", [&] { validateConfig(again, "written"); });
    NEEDLE_FUZZ_CHECK(writeConfig(again) == written);
  });
}
