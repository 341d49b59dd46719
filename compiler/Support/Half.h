// IEEE binary16 and bfloat16 conversions (round to nearest even), exact on every input.
#pragma once

#include <bit>
#include <cstdint>

namespace needle {

inline float halfToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exponent = (h >> 10) & 0x1F;
  uint32_t mantissa = h & 0x3FF;
  if (exponent == 0x1F)
    return std::bit_cast<float>(sign | 0x7F800000 | (mantissa << 13));
  if (exponent == 0) {
    // Zero or subnormal: value = mantissa * 2^-24, exact in float.
    float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
    return sign ? -magnitude : magnitude;
  }
  return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

/// Rounds to nearest even; values beyond the largest half round to infinity.
inline uint16_t floatToHalf(float f) {
  uint32_t bits = std::bit_cast<uint32_t>(f);
  uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000);
  uint32_t magnitude = bits & 0x7FFFFFFF;
  if (magnitude > 0x7F800000) // NaN: keep it quiet
    return sign | 0x7E00;
  if (magnitude >= 0x477FF000) // rounds to >= 65520: infinity
    return sign | 0x7C00;
  if (magnitude < 0x38800000) { // below the smallest normal half: subnormal or zero
    // Scale so the half subnormal unit (2^-24) becomes 1.0; the float add rounds to nearest even.
    float scaled = std::bit_cast<float>(magnitude) * 0x1p24f;
    return sign | static_cast<uint16_t>(static_cast<uint32_t>(scaled + 0x1p23f) - 0x4B000000);
  }
  uint32_t rounded = magnitude + 0xFFF + ((magnitude >> 13) & 1);
  return sign | static_cast<uint16_t>((rounded - (112u << 23)) >> 13);
}

inline float bfloat16ToFloat(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

} // namespace needle
