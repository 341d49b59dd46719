#include "Reference/Heads.h"

#include <cmath>

namespace needle::reference {

namespace {

std::span<const float> probe(const HeadWeights &head, int64_t r, int64_t k) {
  const int64_t D = head.dModel;
  return std::span(head.probeVectors.data() + (r * head.probes + k) * D, D);
}

float score(const HeadWeights &head, const Cells &cells, int64_t r, int64_t k) {
  return dot(cells[r], probe(head, r, k)) / std::sqrt(static_cast<float>(head.dModel));
}

/// R[r, k] = unit(pooled cell) * gain[r, k].
Vec finishSlot(const HeadWeights &head, Vec pooledCell, int64_t r, int64_t k) {
  Vec out = unit(pooledCell, head.eps);
  for (float &v : out)
    v *= head.gain[r * head.probes + k];
  return out;
}

/// concat_q sum_{r,k} w_q[r,k] R[r,k], w_q = softmax(<R, query_q> / sqrt(D) + row_bias[q, r, k]).
Vec mixQueries(const HeadWeights &head, const std::vector<Vec> &R) {
  const int64_t D = head.dModel, slots = static_cast<int64_t>(R.size());
  Vec pooled(head.queries * D, 0.0f);
  for (int64_t q = 0; q < head.queries; ++q) {
    std::span<const float> query(head.query.data() + q * D, D);
    Vec weights(slots);
    for (int64_t s = 0; s < slots; ++s)
      weights[s] = dot(R[s], query) / std::sqrt(static_cast<float>(D)) + head.rowBias[q * slots + s];
    softmax(weights);
    for (int64_t e = 0; e < D; ++e) {
      double sum = 0;
      for (int64_t s = 0; s < slots; ++s)
        sum += static_cast<double>(weights[s]) * R[s][e];
      pooled[q * D + e] = static_cast<float>(sum);
    }
  }
  return pooled;
}

} // namespace

std::vector<Vec> poolDirect(const HeadWeights &head, const std::vector<Cells> &cells, std::span<const int32_t> tokens) {
  const int64_t D = head.dModel;
  std::vector<int64_t> kept;
  for (size_t t = 0; t < tokens.size(); ++t)
    if (tokens[t] != head.pad)
      kept.push_back(static_cast<int64_t>(t));
  std::vector<Vec> R;
  for (int64_t r = 0; r < head.rows; ++r)
    for (int64_t k = 0; k < head.probes; ++k) {
      if (kept.empty()) {
        R.emplace_back(D, 0.0f);
        continue;
      }
      Vec alpha(kept.size());
      for (size_t i = 0; i < kept.size(); ++i)
        alpha[i] = score(head, cells[kept[i]], r, k);
      softmax(alpha);
      Vec pooledCell(D);
      for (int64_t e = 0; e < D; ++e) {
        double sum = 0;
        for (size_t i = 0; i < kept.size(); ++i)
          sum += static_cast<double>(alpha[i]) * cells[kept[i]][r][e];
        pooledCell[e] = static_cast<float>(sum);
      }
      R.push_back(finishSlot(head, std::move(pooledCell), r, k));
    }
  return R;
}

OnlinePool::OnlinePool(const HeadWeights &head) : head_(head), slots_(head.rows * head.probes) {
  for (Slot &slot : slots_)
    slot.acc.assign(head.dModel, 0.0);
}

void OnlinePool::add(const Cells &cells) {
  for (int64_t r = 0; r < head_.rows; ++r)
    for (int64_t k = 0; k < head_.probes; ++k) {
      Slot &slot = slots_[r * head_.probes + k];
      const double x = score(head_, cells, r, k);
      double keep = 1.0, weight = 1.0; // rescale of the old state, weight of the new cell
      if (!any_) {
        slot.max = x;
      } else if (x > slot.max) {
        keep = std::exp(slot.max - x);
        slot.max = x;
      } else {
        weight = std::exp(x - slot.max);
      }
      slot.sum = slot.sum * keep + weight;
      for (size_t e = 0; e < slot.acc.size(); ++e)
        slot.acc[e] = slot.acc[e] * keep + weight * cells[r][e];
    }
  any_ = true;
}

std::vector<Vec> OnlinePool::pooled() const {
  std::vector<Vec> R;
  for (int64_t r = 0; r < head_.rows; ++r)
    for (int64_t k = 0; k < head_.probes; ++k) {
      const Slot &slot = slots_[r * head_.probes + k];
      Vec cell(head_.dModel, 0.0f);
      if (!any_) {
        R.push_back(std::move(cell));
        continue;
      }
      for (size_t e = 0; e < cell.size(); ++e)
        cell[e] = static_cast<float>(slot.acc[e] / slot.sum);
      R.push_back(finishSlot(head_, std::move(cell), r, k));
    }
  return R;
}

float confidenceFrom(const HeadWeights &head, const std::vector<Vec> &R) {
  const Vec pooled = mixQueries(head, R);
  return sigmoid(dot(head.proj, pooled) + head.bias[0]);
}

Vec embeddingFrom(const HeadWeights &head, const std::vector<Vec> &R) {
  const Vec p = matvec(head.proj, head.outDim, mixQueries(head, R));
  double sumSquares = 0;
  for (float v : p)
    sumSquares += static_cast<double>(v) * v;
  const double inverse = 1.0 / std::sqrt(sumSquares + 1e-12);
  Vec out(p.size());
  for (size_t i = 0; i < p.size(); ++i)
    out[i] = static_cast<float>(p[i] * inverse);
  return out;
}

} // namespace needle::reference
