// The reference interpreter's math, one plain function per formula of docs/model.md. Values
// are f32; sums are accumulated in double so the oracle sits closer to exact arithmetic than
// any backend it judges.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

namespace needle::reference {

using Vec = std::vector<float>;

/// y = W x for W [rows, cols] row-major.
Vec matvec(std::span<const float> w, int64_t rows, std::span<const float> x);
float dot(std::span<const float> a, std::span<const float> b);
float sigmoid(float x);
float silu(float x);

/// unit(x) = x / sqrt(mean(x^2) + eps).
Vec unit(std::span<const float> x, float eps);
/// zc(x; s) = (1 + s) * unit(x).
Vec zc(std::span<const float> x, std::span<const float> scale, float eps);

/// Rotate-half RoPE on one head of even size d at position t: pair (f, f + d/2) rotated by
/// t * theta^(-2f/d), angle and cos/sin formed in double, then rounded to f32.
void rope(std::span<float> head, int64_t t, double theta);

/// 20 rounds of (row-wise, then column-wise) logsumexp subtraction, then exp. Row-major 4x4.
std::array<float, 16> sinkhorn(std::array<float, 16> logits);

/// K(z) = wa^T Z wb flattened, Z = z reshaped to [ba, bb] row-major.
Vec kronecker(std::span<const float> z, std::span<const float> wa, std::span<const float> wb, int64_t ba, int64_t bb);

/// The engram slot of table oi*E_h + h for order `order` at position t (t >= order - 1).
uint32_t engramSlot(std::span<const int32_t> tokens, int64_t t, int64_t orderIndex, int64_t order, int64_t head,
                    int64_t headsPerOrder, int64_t slots);

/// softmax(x) in place, max-subtracted.
void softmax(std::span<float> x);

} // namespace needle::reference
