// The model configuration of spec/model.md: parsing config.json, every validation rule, and
// writing it back. Derived quantities live here too, so every consumer computes them one way.
#pragma once

#include "Quant/Scheme.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace needle {

namespace json {
class Value;
}

struct Config {
  int64_t vocabSize = 0;
  int64_t dModel = 0;
  int64_t numHeads = 0;
  int64_t numKvHeads = 0;
  int64_t qkHeadDim = 0;
  int64_t vHeadDim = 0;
  int64_t numLayers = 0;
  int64_t maxSeqLen = 0;
  double ropeTheta = 0;
  int64_t slidingWindow = 0;
  std::vector<int64_t> globalLayers;
  std::vector<int64_t> engramLayers;
  std::vector<int64_t> engramOrders;
  int64_t engramSlots = 0;
  int64_t engramHeads = 0; // as written; 0 = derived, see engramHeadCount()
  int64_t mhcLanes = 4;
  int64_t qkvConvTaps = 0;
  int64_t embeddingDim = 0;
  int64_t embeddingProbes = 0;
  int64_t embeddingQueries = 0;
  int64_t confidenceProbes = 0;
  int64_t confidenceQueries = 0;
  int64_t padTokenId = 0;
  double rmsEps = 0;
  std::optional<std::vector<int64_t>> ladderOrder;
  std::optional<std::vector<int64_t>> sourceBlocks;
  QuantScheme quantization;

  // Derived quantities (valid after validate()).
  int64_t engramHeadCount() const;   // E_h
  int64_t engramTableCount() const;  // len(orders) * E_h
  int64_t engramSubDim() const;      // D / (len(orders) * E_h)
  int64_t engramDelta() const;       // max(engram_orders)
  int64_t mlpWidth() const;          // n: next power of two >= D
  int64_t mlpRows() const;           // ba
  int64_t mlpCols() const;           // bb = n / ba
  int64_t headRows() const { return numLayers + 1; }
  bool isGlobal(int64_t block) const;
  /// The engram site index owned by `block`, or -1.
  int64_t engramSite(int64_t block) const;
  /// The ladder order: ladder_order, or the bisection rule.
  std::vector<int64_t> order() const;
  /// Original block ids: source_blocks, or 0..L-1.
  std::vector<int64_t> sources() const;
};

/// Parses and validates config.json text; errors name `source` and the field.
Config parseConfig(std::string_view text, std::string_view source);

/// Checks every rule of spec/model.md; errors read "<source>: <field>: <problem>".
void validateConfig(const Config &config, std::string_view source);

/// config.json text (fields in spec order, optional ones only when present).
std::string writeConfig(const Config &config);

/// The needle3 and tiny presets of spec/cli.md.
Config presetConfig(std::string_view name);

} // namespace needle
