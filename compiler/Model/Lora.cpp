#include "Model/Lora.h"
#include "Model/Safetensors.h"
#include "Support/Error.h"

#include <charconv>
#include <cmath>
#include <fmt/ranges.h>
#include <map>

namespace needle {

namespace {

constexpr int64_t kMaxLoraRank = 1 << 16; // far above any adapter's rank, and below any cast trouble

double metadataNumber(const SafetensorsFile &file, const std::string &key) {
  auto it = file.metadata().find(key);
  if (it == file.metadata().end())
    fail("{}: __metadata__.{}: missing", file.path(), key);
  double value = 0;
  const std::string &text = it->second;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size() || !std::isfinite(value))
    fail("{}: __metadata__.{}: \"{}\" is not a number", file.path(), key, text);
  return value;
}

struct AdapterPair {
  const SafetensorsEntry *a = nullptr, *b = nullptr;
};

} // namespace

void mergeLora(Model &model, const std::filesystem::path &adapterPath) {
  mergeLora(model, SafetensorsFile::read(adapterPath));
}

void mergeLora(Model &model, const SafetensorsFile &file) {
  const std::string &p = file.path();
  const double alpha = metadataNumber(file, "lora_alpha"), rankValue = metadataNumber(file, "lora_r");
  // Bounded before the conversion, which is undefined for values past int64.
  if (rankValue < 1 || rankValue > kMaxLoraRank || rankValue != std::floor(rankValue))
    fail("{}: __metadata__.lora_r: {} is not an integer in 1..{}", p, rankValue, kMaxLoraRank);
  const int64_t rank = static_cast<int64_t>(rankValue);

  std::map<std::string, AdapterPair> pairs;
  for (const SafetensorsEntry &entry : file.entries()) {
    if (entry.name.ends_with(".lora_A"))
      pairs[entry.name.substr(0, entry.name.size() - 7)].a = &entry;
    else if (entry.name.ends_with(".lora_B"))
      pairs[entry.name.substr(0, entry.name.size() - 7)].b = &entry;
    else
      fail("{}: tensor \"{}\": adapter tensors must end in .lora_A or .lora_B", p, entry.name);
  }
  if (pairs.empty())
    fail("{}: the adapter holds no tensors", p);
  const float scale = static_cast<float>(alpha / rankValue);
  for (const auto &[target, pair] : pairs) {
    const std::string where = fmt::format("{}: adapter for \"{}\"", p, target);
    if (!pair.a || !pair.b)
      fail("{}: needs both {}.lora_A and {}.lora_B", where, target, target);
    auto it = model.tensors.find(target);
    if (it == model.tensors.end())
      fail("{}: the model has no tensor \"{}\"", where, target);
    Tensor &w = it->second;
    if (w.storage == Tensor::Storage::CQ)
      fail("{}: \"{}\" is pre-quantized; merging needs float weights", where, target);
    if (!w.isFloat() || w.shape.size() != 2)
      fail("{}: \"{}\" is not a float matrix", where, target);
    const int64_t out = w.shape[0], in = w.shape[1];
    if (pair.a->shape != std::vector<int64_t>{rank, in})
      fail("{}: lora_A has shape {}, expected [{}, {}] (lora_r, in)", where,
           fmt::format("[{}]", fmt::join(pair.a->shape, ", ")), rank, in);
    if (pair.b->shape != std::vector<int64_t>{out, rank})
      fail("{}: lora_B has shape {}, expected [{}, {}] (out, lora_r)", where,
           fmt::format("[{}]", fmt::join(pair.b->shape, ", ")), out, rank);
    const std::vector<float> a = file.floats(*pair.a), b = file.floats(*pair.b);
    for (int64_t o = 0; o < out; ++o)
      for (int64_t i = 0; i < in; ++i) {
        double delta = 0;
        for (int64_t k = 0; k < rank; ++k)
          delta += static_cast<double>(b[o * rank + k]) * a[k * in + i];
        float &merged = w.floats[o * in + i];
        merged += scale * static_cast<float>(delta);
        if (!std::isfinite(merged))
          fail("{}: the merged weight ({}, {}) is not finite", where, o, i);
      }
    w.storage = Tensor::Storage::F32; // merged values are no longer exact in F16
  }
  model.provenance.push_back(fmt::format("merged LoRA {} (r {}, alpha {}, {} tensors)",
                                         std::filesystem::path(p).filename().string(), rank, alpha, pairs.size()));
}

} // namespace needle
