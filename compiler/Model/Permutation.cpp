#include "Model/Permutation.h"

#include <utility>

namespace needle {

namespace {

/// MT19937 as numpy's legacy generator seeds it from an integer (init_genrand).
class Mt19937 {
public:
  explicit Mt19937(uint32_t seed) {
    state_[0] = seed;
    for (int i = 1; i < 624; ++i)
      state_[i] = 1812433253u * (state_[i - 1] ^ (state_[i - 1] >> 30)) + static_cast<uint32_t>(i);
  }

  uint32_t next() {
    if (index_ >= 624)
      twist();
    uint32_t y = state_[index_++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9D2C5680u;
    y ^= (y << 15) & 0xEFC60000u;
    y ^= y >> 18;
    return y;
  }

private:
  void twist() {
    for (int i = 0; i < 624; ++i) {
      uint32_t y = (state_[i] & 0x80000000u) | (state_[(i + 1) % 624] & 0x7FFFFFFFu);
      state_[i] = state_[(i + 397) % 624] ^ (y >> 1) ^ ((y & 1) ? 0x9908B0DFu : 0u);
    }
    index_ = 0;
  }

  uint32_t state_[624];
  int index_ = 624;
};

/// numpy's random_interval: uniform in [0, max] by masked rejection.
uint32_t randomInterval(Mt19937 &rng, uint32_t max) {
  if (max == 0)
    return 0;
  uint32_t mask = max;
  for (int shift = 1; shift < 32; shift *= 2)
    mask |= mask >> shift;
  uint32_t value;
  while ((value = rng.next() & mask) > max) {
  }
  return value;
}

} // namespace

std::vector<int32_t> numpyLegacyPermutation(uint32_t seed, uint32_t n) {
  std::vector<int32_t> values(n);
  for (uint32_t i = 0; i < n; ++i)
    values[i] = static_cast<int32_t>(i);
  Mt19937 rng(seed);
  for (uint32_t i = n; i-- > 1;)
    std::swap(values[i], values[randomInterval(rng, i)]);
  return values;
}

std::vector<int32_t> mlpPermutation(const Model &model, int which) {
  const std::string name = which == 1 ? "mlp.p1" : "mlp.p2";
  auto it = model.tensors.find(name);
  if (it != model.tensors.end())
    return it->second.ints;
  return numpyLegacyPermutation(which == 1 ? 11 : 13, static_cast<uint32_t>(model.config.mlpWidth()));
}

} // namespace needle
