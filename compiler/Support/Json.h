// A small strict JSON reader and writer for config.json and safetensors headers.
// Strict on purpose: duplicate keys, trailing garbage and non-finite numbers are errors, and an
// error names the source and the line and column.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace needle::json {

class Value {
public:
  enum class Kind { Null, Bool, Number, String, Array, Object };

  // Declared here, and the destructor defined after the class: clang (C++20, libstdc++) would
  // otherwise instantiate pair<string, Value> while Value is still incomplete.
  Value() = default;
  Value(const Value &) = default;
  Value(Value &&) noexcept = default;
  Value &operator=(const Value &) = default;
  Value &operator=(Value &&) noexcept = default;

  Kind kind = Kind::Null;
  bool boolean = false;
  double number = 0;
  bool isInteger = false; // written without fraction or exponent, and fits int64
  int64_t integer = 0;
  std::string string;
  std::vector<Value> items;                           // Array
  std::vector<std::pair<std::string, Value>> members; // Object, in file order

  ~Value();

  const Value *find(std::string_view key) const;
  static const char *kindName(Kind kind);
};

inline Value::~Value() = default;

/// Values one parse may make by default: a parsed value takes ~100 bytes whatever its text, so
/// "[0,0,0,...]" would cost 50 times its size; counting values bounds the tree. A config has a
/// few hundred values, the safetensors header of a 1024-block model about half a million.
inline constexpr size_t kMaxValues = size_t(1) << 20;

/// Parses `text` into at most `maxValues` values; errors read "<source>: line L, column C:
/// <problem>".
Value parse(std::string_view text, std::string_view source, size_t maxValues = kMaxValues);

/// Compact JSON text of a value (numbers in shortest round-trip form).
std::string serialize(const Value &value);

/// Appends `text` as a JSON string literal.
void appendQuoted(std::string &out, std::string_view text);

/// Shortest text that reads back as the same double.
std::string formatNumber(double value);

} // namespace needle::json
