// fuzz-encode: any bytes as text through a small trained byte-level tokenizer with Llama 3's
// pre-tokenizer pattern (Tokenizer/ReferenceTokenizer.h, Tokenizer/Train.h). Checked: the
// compiled scanner splits the text exactly as the regex does, and decode(encode(text)) is the
// text with each maximal invalid UTF-8 subpart as U+FFFD.
#include "FuzzHarness.h"
#include "Tokenizer/ReferenceTokenizer.h"
#include "Tokenizer/Scanner.h"
#include "Tokenizer/Train.h"
#include "Tokenizer/Unicode.h"

#include <string_view>

using namespace needle;
using namespace needle::tokenizer;

namespace {

/// A small byte-level BPE, trained as the presets' tokenizers are, on text with spaces,
/// contractions and digits.
TokenizerSpec byteLevelSpec() {
  return trainByteLevelBpe("the other thing they're there then; it's 12345 and 678 in the theory", 280);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const ReferenceTokenizer tokenizer(byteLevelSpec(), "fuzz-encode");
  static const Regex regex(kLlama3Pattern, "fuzz-encode");
  static const ScannerTables scanner = compileScanner(regex);
  const std::string_view text(reinterpret_cast<const char *>(data), size);
  const std::vector<char32_t> points = decodeUtf8(text);
  NEEDLE_FUZZ_CHECK(scanner.splitIsolated(points) == regex.splitIsolated(points));
  NEEDLE_FUZZ_CHECK(tokenizer.decode(tokenizer.encode(text)) == lossyUtf8(text));
  return 0;
}
