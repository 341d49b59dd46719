// tokenizer-train VOCAB_SIZE OUT FILE...: a byte-level BPE of VOCAB_SIZE tokens trained on the
// files (compiler/Tokenizer/Train.h), written as OUT (tokenizer.json), for the lit tests until
// needle-synth gives every preset one.
#include "Support/CommandLine.h"
#include "Support/Error.h"
#include "Support/Files.h"
#include "Tokenizer/Train.h"

#include <string>

using namespace needle;
using namespace needle::tokenizer;

namespace {

int run(int argc, char **argv) {
  if (argc < 4)
    fail("usage: tokenizer-train VOCAB_SIZE OUT FILE...");
  std::string corpus;
  for (int i = 3; i < argc; ++i) {
    const std::vector<uint8_t> bytes = readFile(argv[i]);
    corpus.append(bytes.begin(), bytes.end());
  }
  writeFile(argv[2], writeTokenizerJson(trainByteLevelBpe(corpus, std::stoll(argv[1]))));
  return 0;
}

} // namespace

int main(int argc, char **argv) { return runTool("tokenizer-train", run, argc, argv); }
