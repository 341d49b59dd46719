#include "Reference/Numerics.h"

#include "Support/Error.h"

#include <algorithm>
#include <cmath>

namespace needle::reference {

void checkFinite(const Outputs &out, std::string_view source) {
  auto finite = [](const Vec &values) {
    return std::all_of(values.begin(), values.end(), [](float v) { return std::isfinite(v); });
  };
  if (!finite(out.logits) || !finite(out.embedding) || !std::isfinite(out.confidence))
    fail("{}: the model computes a NaN or infinite output (its weights or parameters overflow float32)", source);
}

void checkProbeFinite(const Weights &weights, std::string_view source) {
  const Config &config = weights.config;
  const int32_t probe = config.padTokenId == 0 && config.vocabSize > 1 ? 1 : 0;
  Session session(weights);
  session.feed(std::span(&probe, 1));
  checkFinite(session.outputs(), source);
}

} // namespace needle::reference
