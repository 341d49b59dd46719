// tokenizer-summary FILE: what needlec read from a tokenizer.json (compiler/Tokenizer), as one
// JSON line that test/tokenizer/summary.py compares with its own reading of the same file.
#include "Support/CommandLine.h"
#include "Support/Error.h"
#include "Tokenizer/Scanner.h"
#include "Tokenizer/TokenizerJson.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdio>

using namespace needle;
using namespace needle::tokenizer;

namespace {

template <typename Step> std::vector<int> kinds(const std::vector<Step> &steps) {
  std::vector<int> out;
  for (const Step &step : steps)
    out.push_back(static_cast<int>(step.kind));
  return out;
}

int run(int argc, char **argv) {
  if (argc != 2)
    fail("usage: tokenizer-summary FILE");
  const TokenizerSpec spec = readTokenizerJson(argv[1]);
  const auto tokens = std::count_if(spec.model.vocab.begin(), spec.model.vocab.end(),
                                    [](const std::string &token) { return !token.empty(); });
  const auto special =
      std::count_if(spec.added.begin(), spec.added.end(), [](const AddedToken &t) { return t.special; });
  // The scanners of the splits (Split steps, ByteLevel's use_regex): symbols, states, code point
  // runs (for docs/tokenizer.md); what each keeps; whether ByteLevel adds a prefix space.
  std::vector<std::string> scanners, splits;
  bool prefixSpace = false;
  for (const PreTokenizerStep &step : spec.preTokenizer) {
    const bool byteLevelSplit = step.kind == PreTokenizerStep::Kind::ByteLevel && step.useRegex;
    prefixSpace |= step.kind == PreTokenizerStep::Kind::ByteLevel && step.addPrefixSpace;
    if (step.kind != PreTokenizerStep::Kind::Split && !byteLevelSplit)
      continue;
    const ScannerTables tables =
        compileScanner(Regex(byteLevelSplit ? kByteLevelPattern : step.pattern, "pre_tokenizer"));
    scanners.push_back(fmt::format("[{}, {}, {}]", tables.symbols, tables.states, tables.runStarts.size()));
    splits.push_back(step.matchesOnly ? R"("matches")" : R"("all")");
  }
  std::printf(
      "%s\n",
      fmt::format(
          R"({{"scanners": [{}], "ids": {}, "vocab": {}, "merges": {}, "added": {}, "special": {}, )"
          R"("byte_fallback": {}, "ignore_merges": {}, "normalizer": [{}], )"
          R"("pre_tokenizer": [{}], "splits": [{}], "prefix_space": {}, "decoder": [{}], "prefix": [{}], "suffix": [{}]}})",
          fmt::join(scanners, ", "), spec.idCount(), tokens, spec.model.merges.size(), spec.added.size(), special,
          spec.model.byteFallback, spec.model.ignoreMerges, fmt::join(kinds(spec.normalizer), ", "),
          fmt::join(kinds(spec.preTokenizer), ", "), fmt::join(splits, ", "), prefixSpace,
          fmt::join(kinds(spec.decoder), ", "), fmt::join(spec.prefixIds, ", "), fmt::join(spec.suffixIds, ", "))
          .c_str());
  return 0;
}

} // namespace

int main(int argc, char **argv) { return runTool("tokenizer-summary", run, argc, argv); }
