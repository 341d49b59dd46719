// needle-synth: writes a random model (or LoRA adapter) for tests and demos (docs/command-line.md).
#include "Model/Config.h"
#include "Model/Layout.h"
#include "Model/ModelFiles.h"
#include "Model/ModelTokenizer.h"
#include "Model/Quantize.h"
#include "Model/Safetensors.h"
#include "Model/Synth.h"
#include "Support/CommandLine.h"
#include "Support/Error.h"
#include "Support/Files.h"
#include "Support/Json.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace fs = std::filesystem;
using namespace needle;

namespace {

/// Applies "key=value" (value as JSON, or a bare string; dotted keys reach into objects).
void applySetting(json::Value &config, const std::string &setting) {
  const size_t eq = setting.find('=');
  if (eq == std::string::npos || eq == 0)
    fail("--set: \"{}\" is not key=value", setting);
  const std::string path = setting.substr(0, eq), text = setting.substr(eq + 1);
  json::Value value;
  try {
    value = json::parse(text, "--set " + path);
  } catch (const Error &) {
    value.kind = json::Value::Kind::String;
    value.string = text;
  }
  json::Value *node = &config;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    auto it = std::find_if(node->members.begin(), node->members.end(), [&](auto &m) { return m.first == key; });
    if (it == node->members.end())
      it = node->members.insert(node->members.end(), {key, json::Value{}});
    if (dot == std::string::npos) {
      it->second = value;
      return;
    }
    if (it->second.kind != json::Value::Kind::Object)
      fail("--set: \"{}\" is not an object", path.substr(0, dot));
    node = &it->second;
    start = dot + 1;
  }
}

Config buildConfig(const CommandLine &cl) {
  const std::string preset = cl.value("preset").value_or("tiny");
  json::Value config = json::parse(writeConfig(presetConfig(preset)), "preset");
  for (const std::string &setting : cl.values("set"))
    applySetting(config, setting);
  return parseConfig(json::serialize(config), "--set");
}

/// A LoRA adapter for every attention projection: A random, B random (spread) or zero (needle:
/// LoRA's own initialization, so the adapter changes nothing).
void writeAdapter(const Config &config, int64_t rank, uint64_t seed, bool zeroB, const fs::path &path) {
  std::vector<SafetensorsWriteEntry> entries;
  auto asBytes = [](const std::vector<float> &values) {
    std::vector<uint8_t> bytes(4 * values.size());
    std::memcpy(bytes.data(), values.data(), bytes.size());
    return bytes;
  };
  for (const TensorSpec &spec : modelLayout(config)) {
    if (spec.kind != "attn")
      continue;
    const int64_t out = spec.shape[0], in = spec.shape[1];
    std::vector<float> a = randomNormals(seed, spec.name + ".lora_A", rank * in, 1.0 / std::sqrt(in));
    std::vector<float> b = randomNormals(seed, spec.name + ".lora_B", out * rank, zeroB ? 0.0 : 0.05);
    entries.push_back({spec.name + ".lora_A", DType::F32, {rank, in}, asBytes(a)});
    entries.push_back({spec.name + ".lora_B", DType::F32, {out, rank}, asBytes(b)});
  }
  writeSafetensors(path, entries, {{"lora_alpha", std::to_string(2 * rank)}, {"lora_r", std::to_string(rank)}});
}

/// What --tokenizer-split and --tokenizer-corpus ask of the trained tokenizer.
TokenizerTraining tokenizerTraining(const CommandLine &cl, const Config &config) {
  TokenizerTraining training;
  for (const char *flag : {"tokenizer-split", "tokenizer-corpus"}) {
    if (cl.has(flag) && cl.has("tokenizer"))
      fail("--{}: shapes the trained tokenizer, not one given by --tokenizer", flag);
    if (cl.has(flag) && config.vocabSize <= 256)
      fail("--{}: a vocabulary of {} ids has no merges to learn", flag, config.vocabSize);
  }
  training.split = cl.value("tokenizer-split").value_or("");
  training.splitSource = "--tokenizer-split";
  if (cl.has("tokenizer-split") && training.split.empty())
    fail("--tokenizer-split: empty; give a regex");
  if (std::optional<std::string> corpus = cl.value("tokenizer-corpus")) {
    const std::vector<uint8_t> bytes = readFile(*corpus);
    training.moreCorpus.assign(bytes.begin(), bytes.end());
  }
  return training;
}

int run(int argc, char **argv) {
  CommandLine cl("needle-synth", "needle-synth --preset needle3|tiny [options] -o OUT",
                 {{"preset", "NAME", "needle3 or tiny (default tiny)"},
                  {"seed", "N", "random seed (default 1)"},
                  {"set", "KEY=VALUE", "override a config field (repeatable), e.g. num_layers=6", true},
                  {"init", "MODE", "spread (default): around Needle's init, every path active; needle: exact init"},
                  {"quantized", "", "store CQ tensors pre-quantized (default: float16)"},
                  {"codebook", "KIND", "needle (default) or lloyd-max, with --quantized"},
                  {"lora-adapter", "RANK", "write a LoRA adapter for the model's attention instead (OUT.safetensors)"},
                  {"tokenizer", "FILE",
                   "the model's tokenizer.json (default: a byte-level BPE of vocab_size tokens trained on "
                   "Debian's license texts and word list); none: no tokenizer"},
                  {"tokenizer-split", "REGEX",
                   "the trained tokenizer's pre-tokenizer pattern (default: Llama 3's, which joins a letter run to "
                   "the space or mark before it)"},
                  {"tokenizer-corpus", "FILE", "more text to train the tokenizer on, after Debian's: a product's own"},
                  {"o", "OUT", "output directory, or OUT.needle for the container"}});
  if (!cl.parse(argc, argv))
    return 0;
  if (!cl.positionals().empty())
    fail("unexpected argument \"{}\"", cl.positionals()[0]);
  const std::string out = cl.value("o").value_or("");
  if (out.empty())
    fail("-o: missing; say where to write the model");
  const std::string initName = cl.value("init").value_or("spread");
  if (initName != "spread" && initName != "needle")
    fail("--init: \"{}\" is not spread or needle", initName);
  const int64_t seed = cl.integer("seed").value_or(1);
  if (seed < 0)
    fail("--seed: must be non-negative");
  const SynthInit init = initName == "needle" ? SynthInit::Needle : SynthInit::Spread;
  const Config config = buildConfig(cl);
  if (std::optional<int64_t> rank = cl.integer("lora-adapter")) {
    for (const char *flag : {"tokenizer", "tokenizer-split", "tokenizer-corpus"})
      if (cl.has(flag))
        fail("--{}: not with --lora-adapter: an adapter has no tokenizer", flag);
    if (*rank < 1 || *rank > 1024)
      fail("--lora-adapter: rank {} is outside 1..1024", *rank);
    PendingOutput output(out, PendingOutput::Kind::File);
    output.writeWith([&](const fs::path &staging) {
      writeAdapter(config, *rank, static_cast<uint64_t>(seed), init == SynthInit::Needle, staging);
    });
    output.commit();
    return 0;
  }
  Model model = synthesizeModel(config, static_cast<uint64_t>(seed), init);
  const std::string tokenizer = cl.value("tokenizer").value_or("");
  const TokenizerTraining training = tokenizerTraining(cl, config);
  if (tokenizer.empty())
    trainTokenizer(model, training);
  else if (tokenizer != "none")
    readTokenizer(model, tokenizer);
  const cq::CodebookKind codebook = cq::parseCodebookKind(cl.value("codebook").value_or("needle"));
  if (cl.has("codebook") && !cl.has("quantized"))
    fail("--codebook: only meaningful with --quantized");
  if (cl.has("quantized"))
    quantizeModel(model, codebook);
  if (fs::path(out).extension() == ".needle") {
    PendingOutput output(out, PendingOutput::Kind::File);
    output.writeWith([&](const fs::path &staging) { writeNeedleModel(model, staging); });
    output.commit();
  } else {
    PendingOutput output(out, PendingOutput::Kind::Directory);
    output.writeWith([&](const fs::path &staging) { writeSafetensorsModel(model, staging); });
    output.commit();
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) { return runTool("needle-synth", run, argc, argv); }
