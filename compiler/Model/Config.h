// The model configuration of docs/model.md: parsing config.json, every validation rule, and
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
#define NEEDLE_CONFIG_INT(key, member, init) int64_t member = init;
#define NEEDLE_CONFIG_REAL(key, member) double member = 0;
#define NEEDLE_CONFIG_LIST(key, member) std::vector<int64_t> member;
#define NEEDLE_CONFIG_OPTIONAL_LIST(key, member) std::optional<std::vector<int64_t>> member;
#include "Model/ConfigFields.def"
  QuantScheme quantization;

  // Derived quantities (valid after validate()).
  int64_t engramHeadCount() const;  // E_h
  int64_t engramTableCount() const; // len(orders) * E_h
  int64_t engramSubDim() const;     // D / (len(orders) * E_h)
  int64_t engramDelta() const;      // max(engram_orders)
  int64_t mlpWidth() const;         // n: next power of two >= D
  int64_t mlpRows() const;          // ba
  int64_t mlpCols() const;          // bb = n / ba
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

/// Checks every rule of docs/model.md; errors read "<source>: <field>: <problem>".
void validateConfig(const Config &config, std::string_view source);

/// config.json text (fields in spec order, optional ones only when present).
std::string writeConfig(const Config &config);

/// The needle3 and tiny presets of docs/command-line.md.
Config presetConfig(std::string_view name);

} // namespace needle
