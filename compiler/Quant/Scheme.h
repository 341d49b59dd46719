// quantization.scheme of docs/cq-format.md: which tensors become CQ and at how many bits.
#pragma once

#include "Quant/Cq.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace needle {

struct QuantScheme {
  std::string text = "none"; // as written in config.json
  int64_t groupSize = cq::kGroup;
  std::vector<std::pair<std::string, int>> rules; // prefix=bits, in written order, no default
  int defaultBits = 0;                            // 0 with "none"

  bool isNone() const { return defaultBits == 0; }
  /// Bits for a CQ-eligible tensor of `kind` (embedding, mhc, engram, attn) named `name`; 0 keeps
  /// it float. The longest matching prefix wins; a prefix matches the kind, or the name at a
  /// component boundary ("blocks.3" matches "blocks.3.attn.q", not "blocks.30.attn.q").
  int bitsFor(std::string_view kind, std::string_view name) const;
};

/// Parses "prefix=bits,...,default=bits" or "none"; errors read
/// "<source>: quantization.scheme: <problem>".
QuantScheme parseScheme(std::string_view text, int64_t groupSize, std::string_view source);

} // namespace needle
