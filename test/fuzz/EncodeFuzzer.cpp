// fuzz-encode: any bytes as text through a byte-level tokenizer with Llama 3's pre-tokenizer
// pattern (Tokenizer/ReferenceTokenizer.h). Checked: the compiled scanner splits the text
// exactly as the regex does; decode(encode(text)) is the text, with each maximal invalid UTF-8
// subpart as U+FFFD; a text made only of whole tokens' bytes round-trips to itself.
#include "FuzzHarness.h"
#include "Tokenizer/ReferenceTokenizer.h"
#include "Tokenizer/Scanner.h"
#include "Tokenizer/Unicode.h"

#include <string_view>

using namespace needle;
using namespace needle::tokenizer;

namespace {

const char *const kLlama3Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

/// A byte-level BPE: the 256 byte tokens and a few merges over ASCII letters and spaces.
TokenizerSpec byteLevelSpec() {
  TokenizerSpec spec;
  std::vector<std::string> &vocab = spec.model.vocab;
  char32_t next = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
    std::string token;
    appendUtf8(token, printable ? static_cast<char32_t>(b) : next++);
    vocab.push_back(token);
  }
  for (const auto &[left, right] : {std::pair<int, int>{'t', 'h'}, {'e', 'r'}, {' ', 't'}}) {
    const std::string merged = vocab[left] + vocab[right];
    spec.model.merges.push_back({left, right});
    spec.model.mergedIds.push_back(static_cast<int32_t>(vocab.size()));
    vocab.push_back(merged);
  }
  PreTokenizerStep split{}, byteLevel{};
  split.kind = PreTokenizerStep::Kind::Split;
  split.pattern = kLlama3Pattern;
  byteLevel.kind = PreTokenizerStep::Kind::ByteLevel;
  spec.preTokenizer = {split, byteLevel};
  DecoderStep decoder{};
  decoder.kind = DecoderStep::Kind::ByteLevel;
  spec.decoder = {decoder};
  return spec;
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
