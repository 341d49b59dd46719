#include "Quant/Cq.h"

#include "Support/Error.h"
#include "Support/Half.h"

#include <cmath>

namespace needle::cq {

void fwht(float *x, int64_t n) {
  for (int64_t half = 1; half < n; half *= 2)
    for (int64_t block = 0; block < n; block += 2 * half)
      for (int64_t i = block; i < block + half; ++i) {
        float a = x[i], b = x[i + half];
        x[i] = a + b;
        x[i + half] = a - b;
      }
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(n)));
  for (int64_t i = 0; i < n; ++i)
    x[i] *= scale;
}

CodebookKind parseCodebookKind(std::string_view text) {
  if (text == "needle")
    return CodebookKind::Needle;
  if (text == "lloyd-max")
    return CodebookKind::LloydMax;
  fail("--codebook: \"{}\" is not needle or lloyd-max", text);
}

std::vector<float> codebook(CodebookKind kind, int bits) {
  // Needle's shipped codebooks (docs/cq-format.md): exact as written, rounded to f32.
  static const double needle2[] = {-0.13317214, -0.039902091, 0.0400352813, 0.133460447};
  static const double needle3[] = {-0.189261362, -0.117884994, -0.0661496893, -0.0210134611,
                                   0.0221010316, 0.0667850673, 0.118262075,   0.189826027};
  static const double needle4[] = {-0.239531547,  -0.180706054,  -0.140957937,  -0.109012552,
                                   -0.0815129653, -0.0565276518, -0.0329391509, -0.0101161096,
                                   0.0127108004,  0.0357079171,  0.0594582558,  0.0849770233,
                                   0.112741619,   0.144696921,   0.184239000,   0.242273703};
  // Lloyd-Max levels of N(0,1) (Max, 1960), positive half; divided by sqrt(128).
  static const double lloyd2[] = {0.4527800, 1.5104176};
  static const double lloyd3[] = {0.2450942, 0.7560053, 1.3439093, 2.1519456};
  static const double lloyd4[] = {0.1283950, 0.3880483, 0.6567591, 0.9423404,
                                  1.2562312, 1.6180464, 2.0690172, 2.7325895};
  if (bits < 2 || bits > 4)
    fail("codebook: {} bits is not supported (2, 3 or 4)", bits);
  std::vector<float> values;
  if (kind == CodebookKind::Needle) {
    const double *table = bits == 2 ? needle2 : bits == 3 ? needle3 : needle4;
    for (int i = 0; i < (1 << bits); ++i)
      values.push_back(static_cast<float>(table[i]));
  } else {
    const double *half = bits == 2 ? lloyd2 : bits == 3 ? lloyd3 : lloyd4;
    const int count = 1 << (bits - 1);
    const double scale = 1.0 / std::sqrt(128.0);
    for (int i = count - 1; i >= 0; --i)
      values.push_back(static_cast<float>(-half[i] * scale));
    for (int i = 0; i < count; ++i)
      values.push_back(static_cast<float>(half[i] * scale));
  }
  return values;
}

void validateCodebook(std::span<const float> values, int bits, std::string_view source) {
  if (values.size() != (size_t{1} << bits))
    fail("{}: codebook for {} bits has {} entries, expected {}", source, bits, values.size(), 1 << bits);
  for (size_t i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i]))
      fail("{}: codebook for {} bits: entry {} is not finite", source, bits, i);
    if (i > 0 && !(values[i] > values[i - 1]))
      fail("{}: codebook for {} bits is not sorted ascending (entry {})", source, bits, i);
  }
}

uint8_t nearestIndex(float z, std::span<const float> codebook) {
  // Distances in double are exact for f32 inputs, so a true tie is seen as one.
  uint8_t best = 0;
  double bestDistance = std::fabs(static_cast<double>(z) - codebook[0]);
  for (size_t i = 1; i < codebook.size(); ++i) {
    double distance = std::fabs(static_cast<double>(z) - codebook[i]);
    if (distance < bestDistance) {
      bestDistance = distance;
      best = static_cast<uint8_t>(i);
    }
  }
  return best;
}

void packIndices(std::span<const uint8_t> indices, int bits, uint8_t *out) {
  if (bits == 3) {
    for (size_t i = 0; i < indices.size(); i += 8) {
      uint32_t word = 0;
      for (int j = 0; j < 8; ++j)
        word |= static_cast<uint32_t>(indices[i + j] & 7) << (3 * j);
      *out++ = static_cast<uint8_t>(word);
      *out++ = static_cast<uint8_t>(word >> 8);
      *out++ = static_cast<uint8_t>(word >> 16);
    }
    return;
  }
  const int perByte = 8 / bits;
  const uint8_t mask = static_cast<uint8_t>((1 << bits) - 1);
  for (size_t i = 0; i < indices.size(); i += perByte) {
    uint8_t byte = 0;
    for (int j = 0; j < perByte; ++j)
      byte |= static_cast<uint8_t>((indices[i + j] & mask) << (bits * j));
    *out++ = byte;
  }
}

void unpackIndices(const uint8_t *packed, int64_t count, int bits, uint8_t *out) {
  if (bits == 3) {
    for (int64_t i = 0; i < count; i += 8, packed += 3) {
      uint32_t word = packed[0] | (packed[1] << 8) | (packed[2] << 16);
      for (int j = 0; j < 8; ++j)
        out[i + j] = static_cast<uint8_t>((word >> (3 * j)) & 7);
    }
    return;
  }
  const int perByte = 8 / bits;
  const uint8_t mask = static_cast<uint8_t>((1 << bits) - 1);
  for (int64_t i = 0; i < count; ++i)
    out[i] = static_cast<uint8_t>((packed[i / perByte] >> (bits * (i % perByte))) & mask);
}

Packed quantize(std::span<const float> w, int64_t rows, int64_t cols, int bits, std::span<const float> codebook,
                std::string_view name) {
  const int64_t padded = paddedCols(cols), groups = groupsPerRow(cols);
  Packed result;
  result.indices.resize(rows * packedRowBytes(cols, bits));
  result.norms.resize(rows * groups);
  std::vector<float> row(padded);
  std::vector<uint8_t> indices(padded);
  for (int64_t r = 0; r < rows; ++r) {
    std::fill(row.begin(), row.end(), 0.0f);
    std::copy(w.begin() + r * cols, w.begin() + (r + 1) * cols, row.begin());
    for (int64_t g = 0; g < groups; ++g) {
      float *group = row.data() + g * kGroup;
      fwht(group, kGroup);
      double sumSquares = 0;
      for (int64_t i = 0; i < kGroup; ++i)
        sumSquares += static_cast<double>(group[i]) * group[i];
      const float norm = static_cast<float>(std::sqrt(sumSquares));
      const uint16_t half = floatToHalf(norm);
      if (!std::isfinite(norm) || (half & 0x7FFF) == 0x7C00)
        fail("{}: row {}, group {}: norm {} overflows fp16", name, r, g, norm);
      result.norms[r * groups + g] = half;
      const float divisor = std::max(norm, 1e-12f);
      for (int64_t i = 0; i < kGroup; ++i)
        indices[g * kGroup + i] = nearestIndex(group[i] / divisor, codebook);
    }
    packIndices(indices, bits, result.indices.data() + r * packedRowBytes(cols, bits));
  }
  return result;
}

void decodeRotatedRows(const uint8_t *indices, const uint16_t *norms, int64_t rowBegin, int64_t rowEnd, int64_t cols,
                       int bits, std::span<const float> codebook, float *out) {
  const int64_t padded = paddedCols(cols), groups = groupsPerRow(cols), rowBytes = packedRowBytes(cols, bits);
  std::vector<uint8_t> rowIndices(padded);
  for (int64_t r = rowBegin; r < rowEnd; ++r, out += padded) {
    unpackIndices(indices + r * rowBytes, padded, bits, rowIndices.data());
    for (int64_t g = 0; g < groups; ++g) {
      const float norm = halfToFloat(norms[r * groups + g]);
      for (int64_t i = 0; i < kGroup; ++i)
        out[g * kGroup + i] = codebook[rowIndices[g * kGroup + i]] * norm;
    }
  }
}

void dequantizeRows(const uint8_t *indices, const uint16_t *norms, int64_t rowBegin, int64_t rowEnd, int64_t cols,
                    int bits, std::span<const float> codebook, float *out) {
  const int64_t padded = paddedCols(cols);
  std::vector<float> row(padded);
  for (int64_t r = rowBegin; r < rowEnd; ++r) {
    decodeRotatedRows(indices, norms, r, r + 1, cols, bits, codebook, row.data());
    for (int64_t g = 0; g < padded; g += kGroup)
      fwht(row.data() + g, kGroup);
    std::copy(row.begin(), row.begin() + cols, out + (r - rowBegin) * cols);
  }
}

} // namespace needle::cq
