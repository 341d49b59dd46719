// tokenizer-encode FILE [--special] [--compiled [--small]] < texts.jsonl: the reference tokenizer's ids for
// each line (a JSON string; an array of ids is taken as it is) and those ids decoded, one
// {"ids": [...], "decoded": "..."} line each, as test/tokenizer/oracle.mjs prints them. With
// --compiled, the compiled tokenizer's runtime (runtime/tokenizer/tokenizer.h) does both on the
// tables needlec builds (compiler/Tokenizer/Tables.h; --small: the small layout, needlec
// --tokenizer-tables small), in process, decoding one token at a time into a buffer just large enough.
#include "Support/CommandLine.h"
#include "Support/Error.h"
#include "Support/Json.h"
#include "Tokenizer/ReferenceTokenizer.h"
#include "Tokenizer/Tables.h"
#include "Tokenizer/TokenizerJson.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstring>
#include <iostream>
#include <optional>
#include <string>

using namespace needle;
using namespace needle::tokenizer;

namespace {

/// The compiled tokenizer on tables built in process.
class Compiled {
public:
  Compiled(const TokenizerSpec &spec, const std::string &source, TableLayout layout)
      : tables_(buildTokenizerTables(spec, source, layout)), view_(tables_.view()) {}

  std::vector<int32_t> encode(const std::string &text, bool special) const {
    std::vector<unsigned char> scratch(needle_rt::tok_encode_scratch_size(view_, text.size()));
    const unsigned flags =
        special ? needle_rt::TOK_ENCODE_SPECIAL | needle_rt::TOK_ENCODE_BOS_EOS : needle_rt::TOK_ENCODE_SPECIAL;
    size_t count = 0; // ask for the count first: with no room it must give it, writing nothing
    const int status = needle_rt::tok_encode(view_, text.data(), text.size(), flags, scratch.data(), scratch.size(),
                                             nullptr, 0, &count);
    if (status != (count ? needle_rt::status_err_space : needle_rt::status_ok))
      fail("tok_encode with no room returned {} for {} ids", status, count);
    std::vector<int32_t> ids(count);
    if (needle_rt::tok_encode(view_, text.data(), text.size(), flags, scratch.data(), scratch.size(), ids.data(),
                              ids.size(), &count) != needle_rt::status_ok ||
        count != ids.size())
      fail("tok_encode failed with room for {} ids", ids.size());
    return ids;
  }

  std::string decode(const std::vector<int32_t> &ids) const {
    needle_rt::TokDecoder decoder;
    needle_rt::tok_decoder_init(view_, &decoder);
    std::string text;
    for (int32_t id : ids) {
      // No room first: a token that completes nothing succeeds, else the error says how much.
      size_t length = 0;
      const int status = needle_rt::tok_decode_next(view_, &decoder, id, nullptr, 0, &length);
      if (status == needle_rt::status_err_token)
        fail("token id {} is no token of this tokenizer", id);
      if (status == needle_rt::status_ok)
        continue;
      std::string piece(length, '\0');
      if (needle_rt::tok_decode_next(view_, &decoder, id, piece.data(), piece.size(), &length) != needle_rt::status_ok)
        fail("tok_decode_next failed with room for {} bytes", piece.size());
      text += piece;
    }
    char tail[3];
    size_t length = 0;
    if (needle_rt::tok_decode_flush(view_, &decoder, tail, sizeof tail, &length) != needle_rt::status_ok)
      fail("tok_decode_flush failed");
    return text.append(tail, length);
  }

private:
  TokenizerTables tables_;
  needle_rt::TokTables view_;
};

int run(int argc, char **argv) {
  std::vector<std::string> flags(argv + std::min(argc, 2), argv + argc);
  const bool special = std::erase(flags, "--special") > 0, compiled = std::erase(flags, "--compiled") > 0;
  const TableLayout layout = std::erase(flags, "--small") > 0 ? TableLayout::Small : TableLayout::Fast;
  if (argc < 2 || !flags.empty() || (layout == TableLayout::Small && !compiled))
    fail("usage: tokenizer-encode FILE [--special] [--compiled [--small]] < texts.jsonl");
  const ReferenceTokenizer reference(readTokenizerJson(argv[1]), argv[1]);
  const std::optional<Compiled> runtime =
      compiled ? std::optional<Compiled>(std::in_place, reference.spec(), argv[1], layout) : std::nullopt;
  std::string line;
  for (int number = 1; std::getline(std::cin, line); ++number) {
    if (line.empty())
      continue;
    const json::Value input = json::parse(line, fmt::format("<stdin>: line {}", number));
    std::vector<int32_t> ids;
    if (input.kind == json::Value::Kind::String)
      ids = runtime ? runtime->encode(input.string, special) : reference.encode(input.string, special);
    else if (input.kind == json::Value::Kind::Array)
      for (const json::Value &id : input.items)
        ids.push_back(static_cast<int32_t>(id.integer));
    else
      fail("<stdin>: line {}: expected a JSON string or an array of ids", number);
    std::string decoded;
    json::appendQuoted(decoded, runtime ? runtime->decode(ids) : reference.decode(ids));
    std::cout << fmt::format("{{\"ids\":[{}],\"decoded\":{}}}\n", fmt::join(ids, ","), decoded);
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) { return runTool("tokenizer-encode", run, argc, argv); }
