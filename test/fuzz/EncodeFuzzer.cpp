// fuzz-encode: any bytes as text through a small trained byte-level tokenizer with Llama 3's
// pre-tokenizer pattern (Tokenizer/ReferenceTokenizer.h, Tokenizer/Train.h). Checked: the
// compiled scanner splits the text exactly as the regex does, decode(encode(text)) is the text
// with each maximal invalid UTF-8 subpart as U+FFFD, and the compiled tokenizer's runtime on
// needlec's tables (Tokenizer/Tables.h) gives the reference's ids and, one token at a time, its
// text.
#include "FuzzHarness.h"
#include "Tokenizer/ReferenceTokenizer.h"
#include "Tokenizer/Scanner.h"
#include "Tokenizer/Tables.h"
#include "Tokenizer/Train.h"
#include "Tokenizer/Unicode.h"

#include <string>
#include <string_view>
#include <vector>

using namespace needle;
using namespace needle::tokenizer;

namespace {

/// A small byte-level BPE, trained as the presets' tokenizers are, on text with spaces,
/// contractions and digits.
TokenizerSpec byteLevelSpec() {
  return trainByteLevelBpe("the other thing they're there then; it's 12345 and 678 in the theory", 280);
}

/// The runtime's ids for `text`, with room for exactly as many as it says it needs.
std::vector<int32_t> runtimeEncode(const needle_rt::TokTables &tables, std::string_view text) {
  std::vector<unsigned char> scratch(needle_rt::tok_encode_scratch_size(tables, text.size()));
  size_t count = 0;
  needle_rt::tok_encode(tables, text.data(), text.size(), needle_rt::TOK_ENCODE_SPECIAL, scratch.data(), scratch.size(),
                        nullptr, 0, &count);
  std::vector<int32_t> ids(count);
  NEEDLE_FUZZ_CHECK(needle_rt::tok_encode(tables, text.data(), text.size(), needle_rt::TOK_ENCODE_SPECIAL,
                                          scratch.data(), scratch.size(), ids.data(), ids.size(),
                                          &count) == needle_rt::status_ok);
  return ids;
}

/// The runtime's streaming decoding of `ids` (this tokenizer's tokens are a few bytes, so 64 bytes
/// hold any token's output: at most 3 × (3 + its bytes)).
std::string runtimeDecode(const needle_rt::TokTables &tables, const std::vector<int32_t> &ids) {
  needle_rt::TokDecoder decoder;
  needle_rt::tok_decoder_init(tables, &decoder);
  std::string text;
  char out[64];
  size_t length = 0;
  for (int32_t id : ids) {
    NEEDLE_FUZZ_CHECK(needle_rt::tok_decode_next(tables, &decoder, id, out, sizeof out, &length) ==
                      needle_rt::status_ok);
    text.append(out, length);
  }
  NEEDLE_FUZZ_CHECK(needle_rt::tok_decode_flush(tables, &decoder, out, sizeof out, &length) == needle_rt::status_ok);
  return text.append(out, length);
}

/// What every input runs through, built once before main: compiling the scanners takes seconds
/// under the sanitizers, which must not count against the first input's time limit.
struct Fixture {
  ReferenceTokenizer tokenizer{byteLevelSpec(), "fuzz-encode"};
  Regex regex{kLlama3Pattern, "fuzz-encode"};
  ScannerTables scanner = compileScanner(regex);
  TokenizerTables tables = buildTokenizerTables(tokenizer.spec(), "fuzz-encode");
  needle_rt::TokTables view = tables.view();
};
const Fixture fixture;

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string_view text(reinterpret_cast<const char *>(data), size);
  const std::vector<char32_t> points = decodeUtf8(text);
  NEEDLE_FUZZ_CHECK(fixture.scanner.splitIsolated(points) == fixture.regex.splitIsolated(points));
  const std::vector<int32_t> ids = fixture.tokenizer.encode(text);
  NEEDLE_FUZZ_CHECK(fixture.tokenizer.decode(ids) == lossyUtf8(text));
  NEEDLE_FUZZ_CHECK(runtimeEncode(fixture.view, text) == ids);
  NEEDLE_FUZZ_CHECK(runtimeDecode(fixture.view, ids) == lossyUtf8(text));
  return 0;
}
