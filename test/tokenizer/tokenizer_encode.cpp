// tokenizer-encode FILE [--special] < texts.jsonl: the reference tokenizer's ids for each line (a
// JSON string; an array of ids is taken as it is) and those ids decoded, one {"ids": [...],
// "decoded": "..."} line each, as test/tokenizer/oracle.mjs prints them.
#include "Support/CommandLine.h"
#include "Support/Error.h"
#include "Support/Json.h"
#include "Tokenizer/ReferenceTokenizer.h"
#include "Tokenizer/TokenizerJson.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstring>
#include <iostream>
#include <string>

using namespace needle;
using namespace needle::tokenizer;

namespace {

int run(int argc, char **argv) {
  if (argc < 2 || argc > 3 || (argc == 3 && std::strcmp(argv[2], "--special")))
    fail("usage: tokenizer-encode FILE [--special] < texts.jsonl");
  const ReferenceTokenizer tokenizer(readTokenizerJson(argv[1]), argv[1]);
  std::string line;
  for (int number = 1; std::getline(std::cin, line); ++number) {
    if (line.empty())
      continue;
    const json::Value input = json::parse(line, fmt::format("<stdin>: line {}", number));
    std::vector<int32_t> ids;
    if (input.kind == json::Value::Kind::String)
      ids = tokenizer.encode(input.string, argc == 3);
    else if (input.kind == json::Value::Kind::Array)
      for (const json::Value &id : input.items)
        ids.push_back(static_cast<int32_t>(id.integer));
    else
      fail("<stdin>: line {}: expected a JSON string or an array of ids", number);
    std::string decoded;
    json::appendQuoted(decoded, tokenizer.decode(ids));
    std::cout << fmt::format("{{\"ids\":[{}],\"decoded\":{}}}\n", fmt::join(ids, ","), decoded);
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) { return runTool("tokenizer-encode", run, argc, argv); }
