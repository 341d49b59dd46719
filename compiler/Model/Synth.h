// needle-synth's model generator: random weights for any valid config, deterministic for a
// seed on every platform (own generator, no std:: distributions).
#pragma once

#include "Model/Model.h"

#include <cstdint>
#include <string>
#include <vector>

namespace needle {

enum class SynthInit {
  Spread, // around Needle's initial values with enough spread that every path matters
  Needle, // Needle's exact initial values
};

/// Float tensors are F16 (values exactly representable); no mlp.p1/p2 (Needle's defaults).
Model synthesizeModel(const Config &config, uint64_t seed, SynthInit init);

/// `count` normal values of `stddev`, drawn from (seed, name) alone.
std::vector<float> randomNormals(uint64_t seed, const std::string &name, int64_t count, double stddev);

} // namespace needle
