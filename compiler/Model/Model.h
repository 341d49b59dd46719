// A model in memory: its config, its tensors (float, int32 or CQ), the codebooks its CQ tensors
// index, and where it came from. Every file format reads into and writes from this.
#pragma once

#include "Model/Config.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace needle {

struct Tensor {
  /// How the values are stored in a file. F16 tensors keep their values as f32 in memory
  /// (exactly) and are written back as F16.
  enum class Storage { F32, F16, I32, CQ };

  Storage storage = Storage::F32;
  std::vector<int64_t> shape;
  std::vector<float> floats;   // F32, F16
  std::vector<int32_t> ints;   // I32
  int bits = 0;                // CQ: 2, 3 or 4
  std::vector<uint8_t> packed; // CQ: indices [rows, packedRowBytes(cols, bits)]
  std::vector<uint16_t> norms; // CQ: fp16 norms [rows, groupsPerRow(cols)]

  bool isFloat() const { return storage == Storage::F32 || storage == Storage::F16; }
  int64_t elements() const;
  int64_t rows() const { return shape.empty() ? 1 : elements() / shape.back(); }
  int64_t cols() const { return shape.empty() ? 1 : shape.back(); }
  /// Bytes this tensor takes in a .needle payload.
  uint64_t storedBytes() const;
};

struct Model {
  Config config;
  std::map<std::string, Tensor> tensors;       // sorted by name: files are written deterministically
  std::map<int, std::vector<float>> codebooks; // by bits: one for each CQ width in use
  std::vector<std::string> provenance;         // what this model was made from, oldest first
  /// The model's tokenizer.json as its bytes, validated (setTokenizer); empty when it has none.
  std::string tokenizerJson;
  std::string tokenizerSource; // where tokenizerJson came from, for errors
  /// The tokenizer_config.json that came with it, as its bytes, validated; empty when none did.
  std::string tokenizerConfigJson;
  std::string tokenizerConfigSource;

  const Tensor &tensor(const std::string &name) const;
  /// Values of any float or CQ tensor as f32 (CQ decoded with the model's codebook).
  std::vector<float> floats(const std::string &name) const;
  int64_t parameterCount() const;
};

} // namespace needle
