// The tensors a config implies (docs/model.md "Tensors"): names, shapes and how each is stored.
// The one source of truth for loading, synthesis, quantization and slicing.
#pragma once

#include "Model/Config.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace needle {

struct TensorSpec {
  enum class Role { Float, Quantizable, Permutation };
  std::string name;
  std::vector<int64_t> shape;
  Role role = Role::Float;
  std::string kind; // Quantizable: embedding, mhc, engram or attn
  bool optional = false;
};

std::vector<TensorSpec> modelLayout(const Config &config);

/// Who owns a tensor: "blocks.7.attn.q" -> {Block, 7, "attn.q"}, "engram.2.key" ->
/// {Engram, 2, "key"}, anything else -> {Model, -1, name}.
struct TensorOwner {
  enum class Kind { Model, Block, Engram };
  Kind kind = Kind::Model;
  int64_t index = -1;
  std::string leaf;
};
TensorOwner tensorOwner(const std::string &name);

/// The tensor the IR names as (leaf, source block): "attn.q" of source 9 is "blocks.<i>.attn.q"
/// where source_blocks[i] = 9; "engram.key" goes through the block's engram site. Errors name
/// the source block when the model does not have it.
std::string sourceTensorName(const Config &config, const std::string &leaf, int64_t source);

/// Keeps `rows` (in order) along `axis` of a row-major tensor of `shape`.
std::vector<float> selectRows(const std::vector<float> &values, const std::vector<int64_t> &shape, size_t axis,
                              const std::vector<int64_t> &rows);

/// The head-row axis of a head tensor: 1 for `*.row_bias` [Q, rows, K], 0 for probes and gain.
size_t headRowAxis(std::string_view name);

/// The element count of `shape`, refusing negative dimensions and products past 2^40 before
/// they can overflow (hostile headers); errors name `where`.
uint64_t checkedElementCount(const std::vector<int64_t> &shape, std::string_view where);

/// "[a, b, c]".
std::string shapeString(const std::vector<int64_t> &shape);

} // namespace needle
