#include "Model/Synth.h"

#include "Model/Layout.h"
#include "Quant/Cq.h"
#include "Support/Half.h"

#include <cmath>
#include <fmt/format.h>

#include <functional>

namespace needle {

namespace {

/// SplitMix64 with Box-Muller normals: small, fast and identical everywhere.
class Random {
public:
  explicit Random(uint64_t seed) : state_(seed) {}

  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1p-53; } // [0, 1)
  double normal() {
    const double u = 1.0 - uniform(), v = uniform();
    return std::sqrt(-2.0 * std::log(u)) * std::cos(2.0 * M_PI * v);
  }

private:
  uint64_t state_;
};

uint64_t hashName(const std::string &name) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char c : name)
    h = (h ^ c) * 0x100000001B3ull;
  return h;
}

/// Normalized Sylvester Walsh-Hadamard matrix of size n.
std::vector<float> walsh(int64_t n) {
  std::vector<float> h(n * n, 0.0f);
  for (int64_t i = 0; i < n; ++i)
    h[i * n + i] = 1.0f;
  for (int64_t i = 0; i < n; ++i)
    cq::fwht(h.data() + i * n, n);
  return h;
}

struct Filler {
  const Config &c;
  Random &rng;
  bool spread;

  double normal(double stddev) { return stddev * rng.normal(); }
  /// Needle's value plus, in spread mode, noise of `noise`.
  double around(double base, double noise) { return base + (spread ? normal(noise) : 0.0); }

  void fill(const TensorSpec &spec, std::vector<float> &v) {
    const std::string leaf = tensorOwner(spec.name).leaf;
    const int64_t cols = spec.shape.back();
    const double fanIn = static_cast<double>(cols);
    // Spread mode scales projections by fan-in so activations stay O(1) and every path counts.
    const double projection = spread ? 1.0 / std::sqrt(fanIn) : 0.02;
    const double residual = spread ? projection : 0.02 / std::sqrt(2.0 * c.numLayers);
    auto each = [&](const std::function<double(int64_t)> &f) {
      for (size_t i = 0; i < v.size(); ++i)
        v[i] = static_cast<float>(f(static_cast<int64_t>(i)));
    };
    if (leaf == "attn.o" || leaf == "attn.v" || leaf == "value") {
      each([&](int64_t) { return normal(residual); });
    } else if ((leaf.starts_with("attn.") && leaf.ends_with("_taps")) || leaf == "taps") {
      each([&](int64_t i) { return around(i < cols ? 1.0 : 0.0, i < cols ? 0.1 : 0.3); });
    } else if (leaf.ends_with("norm") || leaf == "final_norm") {
      each([&](int64_t) { return around(0.0, 0.2); });
    } else if (leaf == "attn_gate") {
      each([&](int64_t) { return around(0.0, 1.0); });
    } else if (leaf.starts_with("mlp.w")) {
      std::vector<float> h = walsh(cols);
      each([&](int64_t i) { return around(h[i], 0.1); });
    } else if (leaf == "mlp.d1" || leaf == "mlp.d2" || leaf == "mlp.d3" || leaf == "mlp.d4") {
      each([&](int64_t) { return around(1.0, 0.2); });
    } else if (leaf == "mlp.b2") {
      each([&](int64_t) { return around(0.0, 0.1); });
    } else if (leaf == "mlp.cond_v") {
      each([&](int64_t) { return normal(spread ? 1.0 / std::sqrt(static_cast<double>(c.dModel)) : 0.02); });
    } else if (leaf == "mlp.cond_u") {
      each([&](int64_t) { return around(0.0, 0.5); });
    } else if (leaf == "mhc.a") {
      each([&](int64_t) { return spread ? 0.3 + 0.7 * rng.uniform() : 0.01; });
    } else if (leaf == "mhc.b_pre" || leaf == "mhc.b_post") {
      each([&](int64_t) { return around(0.0, 0.5); });
    } else if (leaf == "mhc.b_res") {
      each([&](int64_t i) { return around(i / 4 == i % 4 ? 4.0 : 0.0, 0.5); });
    } else if (leaf.ends_with(".gain")) {
      each([&](int64_t) { return around(1.0, 0.2); });
    } else if (leaf.ends_with(".row_bias") || leaf.ends_with(".bias")) {
      each([&](int64_t) { return around(0.0, 0.5); });
    } else if (leaf.ends_with(".probes") || leaf.ends_with(".query") || leaf == "tables") {
      each([&](int64_t) { return normal(spread ? 1.0 : 0.02); });
    } else if (leaf == "embed.weight") {
      each([&](int64_t) { return normal(spread ? 0.05 : 0.02); });
    } else { // q, k, gate, key, Φ, head projections
      each([&](int64_t) { return normal(projection); });
    }
    for (float &x : v) // stored as F16: keep exactly the values the file will hold
      x = halfToFloat(floatToHalf(x));
  }
};

} // namespace

std::vector<float> randomNormals(uint64_t seed, const std::string &name, int64_t count, double stddev) {
  Random rng(seed ^ hashName(name));
  std::vector<float> values(count);
  for (float &v : values)
    v = static_cast<float>(stddev * rng.normal());
  return values;
}

Model synthesizeModel(const Config &config, uint64_t seed, SynthInit init) {
  Model model;
  model.config = config;
  for (const TensorSpec &spec : modelLayout(config)) {
    if (spec.optional)
      continue;
    Random rng(seed ^ hashName(spec.name));
    Filler filler{config, rng, init == SynthInit::Spread};
    Tensor t;
    t.storage = Tensor::Storage::F16;
    t.shape = spec.shape;
    t.floats.resize(t.elements());
    filler.fill(spec, t.floats);
    model.tensors[spec.name] = std::move(t);
  }
  model.provenance.push_back(
      fmt::format("needle-synth seed {} init {}", seed, init == SynthInit::Spread ? "spread" : "needle"));
  return model;
}

} // namespace needle
