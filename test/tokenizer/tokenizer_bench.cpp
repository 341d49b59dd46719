// tokenizer-bench FILE TEXT [--small]: how fast the compiled tokenizer's runtime encodes (and
// decodes) the bytes of TEXT with the tables needlec builds from FILE (--small: in the small
// layout of needlec --tokenizer-tables small), in process, best of three; and how
// long building the tables takes. One JSON line; scripts/bench-tokenizer.sh puts it beside the
// npm tokenizers' figures on the same text.
#include "Support/CommandLine.h"
#include "Support/Error.h"
#include "Support/Files.h"
#include "Tokenizer/Tables.h"
#include "Tokenizer/TokenizerJson.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

using namespace needle;
using namespace needle::tokenizer;

namespace {

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

int run(int argc, char **argv) {
  if (argc != 3 && !(argc == 4 && std::string(argv[3]) == "--small"))
    fail("usage: tokenizer-bench FILE TEXT [--small]");
  const TableLayout layout = argc == 4 ? TableLayout::Small : TableLayout::Fast;
  const std::vector<uint8_t> bytes = readFile(argv[2]);
  const std::string text(bytes.begin(), bytes.end());
  auto start = std::chrono::steady_clock::now();
  const std::vector<uint8_t> image = buildTokenizerTables(readTokenizerJson(argv[1]), argv[1], layout).image();
  const double buildSeconds = secondsSince(start);
  const needle_rt::TokTables view = needle_rt::tok_tables(image.data()); // what an object holds

  std::vector<unsigned char> scratch(needle_rt::tok_encode_scratch_size(view, text.size()));
  std::vector<int32_t> ids(text.size() + 16);
  size_t count = 0;
  double encodeSeconds = 1e30, decodeSeconds = 1e30;
  std::string decoded;
  for (int round = 0; round < 3; ++round) {
    start = std::chrono::steady_clock::now();
    if (needle_rt::tok_encode(view, text.data(), text.size(), 0, scratch.data(), scratch.size(), ids.data(), ids.size(),
                              &count) != needle_rt::status_ok)
      fail("tok_encode failed");
    encodeSeconds = std::min(encodeSeconds, secondsSince(start));
    start = std::chrono::steady_clock::now();
    needle_rt::TokDecoder decoder;
    needle_rt::tok_decoder_init(view, &decoder);
    decoded.assign(text.size() + 64, '\0');
    size_t at = 0, length = 0;
    for (size_t i = 0; i < count; ++i, at += length)
      if (needle_rt::tok_decode_next(view, &decoder, ids[i], decoded.data() + at, decoded.size() - at, &length))
        fail("tok_decode_next failed");
    decodeSeconds = std::min(decodeSeconds, secondsSince(start));
    decoded.resize(at);
  }
  std::printf("%s\n", fmt::format(R"({{"engine": "{}", "bytes": {}, "tokens": {}, "encode_s": {:.4f}, )"
                                  R"("encode_mb_s": {:.2f}, "tokens_s": {:.0f}, "decode_s": {:.4f}, )"
                                  R"("round_trip": {}, "tables_s": {:.3f}, "table_bytes": {}}})",
                                  layout == TableLayout::Small ? "needlec, small tables" : "needlec", text.size(),
                                  count, encodeSeconds, text.size() / encodeSeconds / 1e6, count / encodeSeconds,
                                  decodeSeconds, decoded == text, buildSeconds, image.size())
                          .c_str());
  return 0;
}

} // namespace

int main(int argc, char **argv) { return runTool("tokenizer-bench", run, argc, argv); }
