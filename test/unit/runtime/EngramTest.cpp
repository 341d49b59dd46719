// The runtime's kernels of the engram memory (runtime/kernels/engram.h), against the reference (RuntimeTestSupport.h
// says how).
#include "CqMatrix.h"
#include "RuntimeTestSupport.h"

#include "Quant/Cq.h"
#include "Reference/Block.h"
#include "Reference/Heads.h"
#include "Reference/Kernels.h"
#include "Support/Half.h"
#include "codegen/Select/WeightLayouts.h"

#include <algorithm>
#include <deque>
#include <limits>
#include <numeric>
#include <tuple>

using namespace needle;
using namespace needle::runtime_test;
namespace ref = needle::reference;

namespace {

TEST(RuntimeEngram, EngramSlotFromTheTokenRing) {
  const std::vector<int64_t> orders = {2, 3};
  const int64_t heads = 3, slots = 18432, capacity = 3; // capacity = max(orders)
  std::vector<int32_t> tokens;
  std::vector<int32_t> ring(capacity, -12345); // stale contents must never be read
  for (int64_t t = 0; t < 24; ++t) {
    const int32_t token = static_cast<int32_t>((t * 2654435761u) % 8192);
    tokens.push_back(token);
    needle_rt::engram_remember(ring.data(), capacity, t, token);
    for (int64_t oi = 0; oi < 2; ++oi)
      for (int64_t h = 0; h < heads; ++h)
        ASSERT_EQ(needle_rt::engram_slot(ring.data(), capacity, t, oi, orders[oi], h, heads, slots),
                  ref::engramSlot(tokens, t, oi, orders[oi], h, heads, slots))
            << "t=" << t << " oi=" << oi << " h=" << h;
  }
}

/// The engram gather, for a tables tensor [tables, slots, sub_dim], exactly as
/// IrEvaluator::engramGather computes it from the reference's decode.
TEST(RuntimeEngram, EngramGatherIsBitIdenticalToTheEvaluator) {
  for (int64_t subDim : {40, 128, 200}) {
    const std::vector<int64_t> orders = {2, 3};
    const int64_t heads = 2, tables = 4, slots = 37, capacity = 3, padded = cq::paddedCols(subDim);
    const CqMatrix m("engram tables", tables * slots, subDim, 2);
    std::vector<int32_t> tokens, ring(capacity);
    for (int64_t t = 0; t < 10; ++t) {
      tokens.push_back(static_cast<int32_t>((t * 7919 + 3) % 1000));
      needle_rt::engram_remember(ring.data(), capacity, t, tokens.back());
      Vec want(tables * padded, 0.0f);
      for (int64_t oi = 0; oi < 2; ++oi) {
        if (t < orders[oi] - 1)
          continue;
        for (int64_t h = 0; h < heads; ++h) {
          const int64_t table = oi * heads + h;
          const uint32_t slot = ref::engramSlot(tokens, t, oi, orders[oi], h, heads, slots);
          std::copy_n(m.rotated.begin() + (table * slots + slot) * padded, padded, want.begin() + table * padded);
        }
      }
      Vec got(tables * padded, 9.0f);
      needle_rt::engram_gather(ring.data(), capacity, t, orders.data(), 2, heads, m.packed.indices.data(),
                               m.packed.norms.data(), m.codebook.data(), 2, slots, subDim, got.data());
      expectBitEqual(got, want, "engram_gather sub_dim=" + std::to_string(subDim) + " t=" + std::to_string(t));
    }
  }
}

TEST(RuntimeEngram, EngramGate) {
  const int64_t D = 256;
  for (double keyScale : {1.0, 1e-4}) {
    const Vec u = normals("eg u", D, 2.0), k = normals("eg k", D, keyScale), v = normals("eg v", D);
    // A key correlated with u makes the gate leave 1/2.
    Vec key(D);
    for (int64_t i = 0; i < D; ++i)
      key[i] = k[i] + static_cast<float>(keyScale) * 0.5f * u[i];
    Vec got(D);
    needle_rt::engram_gate(u.data(), key.data(), v.data(), D, 1e-6f, got.data());
    const Vec want = ref::addEngram(u, key, v, 1e-6f);
    expectClose(got, want, 1e-5, "engram_gate key scale " + std::to_string(keyScale));
    Vec inPlace = u;
    needle_rt::engram_gate(inPlace.data(), key.data(), v.data(), D, 1e-6f, inPlace.data());
    expectClose(inPlace, want, 1e-5, "engram_gate in place");
  }
}

} // namespace
