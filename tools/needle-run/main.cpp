// needle-run: runs the reference interpreter on a model and prints one JSON object (docs/command-line.md).
#include "Evaluate/Evaluator.h"
#include "Import/Importer.h"
#include "Model/Ladder.h"
#include "Model/ModelFiles.h"
#include "Model/Prepare.h"
#include "Reference/Interpreter.h"
#include "Reference/Numerics.h"
#include "Support/CommandLine.h"
#include "Support/Error.h"
#include "Support/Files.h"
#include "Support/Json.h"
#include "Support/Limits.h"
#include "Support/Text.h"
#include "Tokenizer/ReferenceTokenizer.h"
#include "Tokenizer/TokenizerJson.h"

#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/SourceMgr.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <numeric>

namespace fs = std::filesystem;
using namespace needle;
using namespace needle::reference;

namespace {

/// --tokens IDS, or none with --no-tokens, or --text (encoded once the model is read: nullopt):
/// exactly one of them.
std::optional<std::vector<int32_t>> tokensOf(const CommandLine &cl) {
  if (cl.has("no-tokens") + cl.has("tokens") + cl.has("text") > 1)
    fail("--tokens, --text and --no-tokens: give one of them");
  if (cl.has("no-tokens"))
    return std::vector<int32_t>{};
  if (cl.has("text"))
    return std::nullopt;
  if (!cl.has("tokens"))
    fail("--tokens: missing; give the token ids to run, e.g. --tokens 1,2,3 (or --text, or --no-tokens)");
  const std::string text = *cl.value("tokens");
  if (text.empty())
    fail("--tokens: empty; give the token ids to run, or --no-tokens for the outputs before any token");
  std::vector<int32_t> tokens;
  for (std::string_view item : splitList(text)) {
    int64_t value = 0;
    auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), value);
    if (item.empty() || ec != std::errc() || ptr != item.data() + item.size())
      fail("--tokens: \"{}\" is not an integer token id", item);
    if (value < INT32_MIN || value > INT32_MAX)
      fail("--tokens: token {} is outside 0..vocab_size-1", value);
    tokens.push_back(static_cast<int32_t>(value));
  }
  return tokens;
}

/// The model's tokenizer, for --text; errors say how to give one.
tokenizer::ReferenceTokenizer tokenizerOf(const Model &model, const std::string &input) {
  if (model.tokenizerJson.empty())
    fail("--text: {} has no tokenizer; give --tokenizer FILE or put tokenizer.json beside config.json", input);
  return tokenizer::ReferenceTokenizer(tokenizer::parseTokenizerJson(model.tokenizerJson, input), input);
}

/// The JSON report. With a tokenizer, the ids the text became and each top-5 token's text too,
/// and with `pieces` each id's own text.
std::string report(const Outputs &out, double seconds, int64_t timedTokens,
                   const tokenizer::ReferenceTokenizer *tokenizer, const std::vector<int32_t> &tokens, bool pieces) {
  std::vector<int32_t> order(out.logits.size());
  std::iota(order.begin(), order.end(), 0);
  const size_t top = std::min<size_t>(5, order.size());
  std::partial_sort(order.begin(), order.begin() + top, order.end(), [&](int32_t a, int32_t b) {
    return out.logits[a] > out.logits[b] || (out.logits[a] == out.logits[b] && a < b);
  });
  std::string text = fmt::format("{{\"position\": {}, ", out.position);
  if (tokenizer)
    text += fmt::format("\"tokens\": [{}], ", fmt::join(tokens, ", "));
  if (tokenizer && pieces) {
    text += "\"pieces\": [";
    for (size_t i = 0; i < tokens.size(); ++i) {
      text += i ? ", " : "";
      json::appendQuoted(text, tokenizer->decode({tokens[i]}));
    }
    text += "], ";
  }
  text += "\"top5\": [";
  for (size_t i = 0; i < top; ++i) {
    text += fmt::format("{}{{\"token\": {}, \"logit\": {}", i ? ", " : "", order[i],
                        json::formatNumber(out.logits[order[i]]));
    if (tokenizer && order[i] < tokenizer->spec().idCount()) { // ids past the tokenizer's are unused
      text += ", \"text\": ";
      json::appendQuoted(text, tokenizer->decode({order[i]}));
    }
    text += "}";
  }
  text += fmt::format("], \"confidence\": {}", json::formatNumber(out.confidence));
  if (seconds >= 0)
    text += fmt::format(", \"seconds\": {:.4f}, \"tokens_per_second\": {:.2f}", seconds,
                        timedTokens / std::max(seconds, 1e-9));
  return text + "}\n";
}

/// Fails before any work when --logits or --embedding would overwrite an input or each other.
void checkOutputPaths(const CommandLine &cl, const std::vector<std::string> &inputs) {
  const std::optional<std::string> logits = cl.value("logits"), embedding = cl.value("embedding");
  if (logits && embedding && sameFile(*logits, *embedding))
    fail("--logits and --embedding: both name {}; give each its own file", *logits);
  for (const std::optional<std::string> &output : {logits, embedding})
    for (const std::string &input : inputs)
      if (output)
        checkNotInput(*output, input, output == logits ? "--logits" : "--embedding");
}

/// Writes --logits and --embedding (both or neither appear) and prints the report.
void writeOutputs(const CommandLine &cl, const std::string &input, const Outputs &out,
                  const std::vector<int32_t> &tokens, double seconds,
                  const tokenizer::ReferenceTokenizer *tokenizer = nullptr) {
  reference::checkFinite(out, input);
  std::vector<std::unique_ptr<PendingOutput>> outputs;
  auto stage = [&](const char *flag, const Vec &values) {
    if (auto path = cl.value(flag)) {
      outputs.push_back(std::make_unique<PendingOutput>(*path, PendingOutput::Kind::File, std::string("--") + flag));
      outputs.back()->write(std::span(reinterpret_cast<const uint8_t *>(values.data()), 4 * values.size()));
    }
  };
  stage("logits", out.logits);
  stage("embedding", out.embedding);
  for (auto &output : outputs)
    output->commit();
  writeStdout(report(out, seconds, static_cast<int64_t>(tokens.size()), tokenizer, tokens, cl.has("print-tokens")));
}

/// Evaluates needle-dialect IR token by token with the weights file it names; `seconds` gets the
/// evaluation time.
Outputs runIr(const CommandLine &cl, const std::string &path, const std::vector<int32_t> &tokens, double &seconds) {
  mlir::MLIRContext context;
  loadNeedleDialects(context);
  llvm::SourceMgr sources;
  std::string diagnostics;
  llvm::raw_string_ostream diagnosticStream(diagnostics);
  mlir::SourceMgrDiagnosticHandler handler(sources, &context, diagnosticStream);
  const std::vector<uint8_t> bytes = readFile(path, kMaxIrBytes);
  const llvm::StringRef text(reinterpret_cast<const char *>(bytes.data()), bytes.size());
  checkIrNesting(text, path);
  sources.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(text, path), llvm::SMLoc());
  mlir::OwningOpRef<mlir::ModuleOp> module = mlir::parseSourceFile<mlir::ModuleOp>(sources, &context);
  if (!module || mlir::failed(mlir::verify(*module))) {
    diagnosticStream.flush();
    std::string first = diagnostics.substr(0, diagnostics.find('\n'));
    fail("{}", first.empty() ? path + ": not valid needle IR" : first);
  }
  const fs::path weightsPath = moduleWeightsPath(*module, fs::path(path).parent_path());
  checkOutputPaths(cl, {weightsPath.string()});
  const Model weights = loadModel(weightsPath);
  IrEvaluator evaluator(*module, weights);
  const auto start = std::chrono::steady_clock::now();
  evaluator.feed(tokens);
  seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return evaluator.outputs();
}

int run(int argc, char **argv) {
  CommandLine cl("needle-run",
                 "needle-run MODEL|FILE.mlir [--layers N] --tokens 1,2,3|--text TEXT|--no-tokens [options]",
                 {{"layers", "N", "ladder depth to run (default: all blocks)"},
                  {"tokens", "IDS", "comma-separated token ids"},
                  {"text", "TEXT",
                   "run this text, encoded by the model's tokenizer with its BOS/EOS (docs/tokenizer.md); "
                   "the report then shows the ids and each top-5 token's text"},
                  {"tokenizer", "FILE", "the tokenizer.json for --text (default: the model's)"},
                  {"print-tokens", "", "with --text: the report also gives each token's own text (\"pieces\")"},
                  {"no-tokens", "", "run no token: the outputs before any token (docs/model.md)"},
                  {"logits", "FILE", "write the last position's logits as raw little-endian f32"},
                  {"embedding", "FILE", "write the embedding as raw little-endian f32"},
                  {"lora", "FILE", "merge this LoRA adapter first"},
                  {"codebook", "KIND", "needle (default) or lloyd-max, for quantizing float weights"},
                  {"incremental", "", "feed tokens one by one (default: whole sequence at once)"},
                  {"time", "", "add decode time and tokens/s (token-by-token) to the report"}});
  if (!cl.parse(argc, argv))
    return 0;
  const std::string input = cl.onlyPositional("MODEL");
  const std::optional<std::vector<int32_t>> ids = tokensOf(cl);
  for (const char *flag : {"tokenizer", "print-tokens"})
    if (cl.has(flag) && !cl.has("text"))
      fail("--{}: only meaningful with --text", flag);
  std::vector<std::string> inputs = {input};
  for (const char *flag : {"lora", "tokenizer"})
    if (auto file = cl.value(flag))
      inputs.push_back(*file);
  checkOutputPaths(cl, inputs);
  if (fs::path(input).extension() == ".mlir") {
    for (const char *flag : {"layers", "lora", "codebook"})
      if (cl.has(flag))
        fail("--{}: not for IR input: the IR fixes the depth and the weights", flag);
    if (cl.has("text"))
      fail("--text: not for IR input: the IR carries no tokenizer");
    double seconds = -1;
    const Outputs out = runIr(cl, input, *ids, seconds);
    writeOutputs(cl, input, out, *ids, cl.has("time") ? seconds : -1);
    return 0;
  }

  PrepareOptions options; // the depth is run by the interpreter itself, not by slicing the file
  if (auto lora = cl.value("lora"))
    options.lora = *lora;
  if (auto file = cl.value("tokenizer"))
    options.tokenizer = *file;
  if (auto codebook = cl.value("codebook"))
    options.codebook = cq::parseCodebookKind(*codebook);
  const Model model = prepareModel(input, options);
  std::optional<tokenizer::ReferenceTokenizer> tokenizer;
  if (!ids)
    tokenizer.emplace(tokenizerOf(model, input));
  const std::vector<int32_t> tokens = ids ? *ids : tokenizer->encode(*cl.value("text"), true);
  const int64_t depth = cl.integer("layers").value_or(model.config.numLayers);
  validateDepth(depth, model.config.numLayers, input);
  const Weights weights(model, depth);

  Outputs out;
  double seconds = -1;
  if (cl.has("incremental") || cl.has("time")) {
    Session session(weights);
    const auto start = std::chrono::steady_clock::now();
    for (int32_t token : tokens)
      session.feed(std::span(&token, 1));
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    out = session.outputs();
  } else {
    out = runSequence(weights, tokens);
  }
  writeOutputs(cl, input, out, tokens, cl.has("time") ? seconds : -1, tokenizer ? &*tokenizer : nullptr);
  return 0;
}

} // namespace

int main(int argc, char **argv) { return runTool("needle-run", run, argc, argv); }
