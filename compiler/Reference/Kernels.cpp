#include "Reference/Kernels.h"

#include <algorithm>
#include <cmath>

namespace needle::reference {

float dot(std::span<const float> a, std::span<const float> b) {
  double sum = 0;
  for (size_t i = 0; i < a.size(); ++i)
    sum += static_cast<double>(a[i]) * b[i];
  return static_cast<float>(sum);
}

Vec matvec(std::span<const float> w, int64_t rows, std::span<const float> x) {
  const size_t cols = x.size();
  Vec y(rows);
  for (int64_t r = 0; r < rows; ++r)
    y[r] = dot(w.subspan(r * cols, cols), x);
  return y;
}

float sigmoid(float x) { return static_cast<float>(1.0 / (1.0 + std::exp(-static_cast<double>(x)))); }

float silu(float x) { return x * sigmoid(x); }

Vec unit(std::span<const float> x, float eps) {
  double sumSquares = 0;
  for (float v : x)
    sumSquares += static_cast<double>(v) * v;
  const float inverse = static_cast<float>(1.0 / std::sqrt(sumSquares / x.size() + eps));
  Vec y(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    y[i] = x[i] * inverse;
  return y;
}

Vec zc(std::span<const float> x, std::span<const float> scale, float eps) {
  Vec y = unit(x, eps);
  for (size_t i = 0; i < y.size(); ++i)
    y[i] *= 1.0f + scale[i];
  return y;
}

void rope(std::span<float> head, int64_t t, double theta) {
  const size_t half = head.size() / 2;
  for (size_t f = 0; f < half; ++f) {
    const double angle = static_cast<double>(t) * std::pow(theta, -2.0 * f / static_cast<double>(head.size()));
    const float c = static_cast<float>(std::cos(angle)), s = static_cast<float>(std::sin(angle));
    const float a = head[f], b = head[f + half];
    head[f] = a * c - b * s;
    head[f + half] = b * c + a * s;
  }
}

namespace {

float logSumExp(const float *x, int stride) {
  float m = x[0];
  for (int i = 1; i < 4; ++i)
    m = std::max(m, x[i * stride]);
  double sum = 0;
  for (int i = 0; i < 4; ++i)
    sum += std::exp(static_cast<double>(x[i * stride]) - m);
  return m + static_cast<float>(std::log(sum));
}

} // namespace

std::array<float, 16> sinkhorn(std::array<float, 16> m) {
  for (int round = 0; round < 20; ++round) {
    for (int row = 0; row < 4; ++row) {
      const float lse = logSumExp(&m[row * 4], 1);
      for (int col = 0; col < 4; ++col)
        m[row * 4 + col] -= lse;
    }
    for (int col = 0; col < 4; ++col) {
      const float lse = logSumExp(&m[col], 4);
      for (int row = 0; row < 4; ++row)
        m[row * 4 + col] -= lse;
    }
  }
  for (float &v : m)
    v = std::exp(v);
  return m;
}

Vec kronecker(std::span<const float> z, std::span<const float> wa, std::span<const float> wb, int64_t ba, int64_t bb) {
  // T = Z wb, then out = wa^T T.
  std::vector<double> t(ba * bb, 0.0);
  for (int64_t a = 0; a < ba; ++a)
    for (int64_t b = 0; b < bb; ++b)
      for (int64_t c = 0; c < bb; ++c)
        t[a * bb + c] += static_cast<double>(z[a * bb + b]) * wb[b * bb + c];
  Vec out(ba * bb);
  for (int64_t r = 0; r < ba; ++r)
    for (int64_t c = 0; c < bb; ++c) {
      double sum = 0;
      for (int64_t a = 0; a < ba; ++a)
        sum += static_cast<double>(wa[a * ba + r]) * t[a * bb + c];
      out[r * bb + c] = static_cast<float>(sum);
    }
  return out;
}

uint32_t engramSlot(std::span<const int32_t> tokens, int64_t t, int64_t orderIndex, int64_t order, int64_t head,
                    int64_t headsPerOrder, int64_t slots) {
  uint32_t acc = 0x9E3779B9u * static_cast<uint32_t>(orderIndex * headsPerOrder + head + 1);
  for (int64_t i = 0; i < order; ++i) {
    const uint32_t token = t - i >= 0 ? static_cast<uint32_t>(tokens[t - i]) : 0u;
    acc = (acc ^ token) * 0x01000193u;
  }
  acc ^= acc >> 15;
  return acc % static_cast<uint32_t>(slots);
}

void softmax(std::span<float> x) {
  const float m = *std::max_element(x.begin(), x.end());
  double sum = 0;
  for (float &v : x) {
    v = static_cast<float>(std::exp(static_cast<double>(v) - m));
    sum += v;
  }
  for (float &v : x)
    v = static_cast<float>(v / sum);
}

} // namespace needle::reference
