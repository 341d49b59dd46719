// fuzz-tokenizer: tokenizer.json text through parseTokenizerJson (Tokenizer/TokenizerJson.h). A
// file it accepts and the reference tokenizer takes must encode a few texts (invalid UTF-8
// included) to ids it knows, and decode them back without a fault.
#include "FuzzHarness.h"
#include "Tokenizer/ReferenceTokenizer.h"
#include "Tokenizer/TokenizerJson.h"

#include <string_view>

using namespace needle;
using namespace needle::tokenizer;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string_view text(reinterpret_cast<const char *>(data), size);
  return fuzz::guarded([&] {
    TokenizerSpec spec = parseTokenizerJson(text, "tokenizer.json");
    const int64_t ids = spec.idCount();
    const ReferenceTokenizer tokenizer(std::move(spec), "tokenizer.json");
    for (std::string_view sample :
         {"Hello World", " it's 12345 \r\n\t", "\xff\xc3 \xe2\x82", "\xe6\x97\xa5\xf0\x9f\x98\x80"}) {
      const std::vector<int32_t> encoded = tokenizer.encode(sample, true);
      for (int32_t id : encoded)
        NEEDLE_FUZZ_CHECK(id >= 0 && id < ids);
      (void)tokenizer.decode(encoded);
    }
  });
}
