// A model at one depth, dequantized to f32 and arranged per kept block: what both interpreter
// modes read.
#pragma once

#include "Model/Model.h"
#include "Reference/Kernels.h"

#include <array>

namespace needle::reference {

/// The four mHC residual lanes of one position.
using Lanes = std::array<Vec, 4>;

struct HeadWeights {
  int64_t rows = 0; // kept head rows: 1 + kept blocks
  int64_t probes = 0, queries = 0, outDim = 0;
  int64_t dModel = 0;
  float eps = 0;
  int32_t pad = 0;  // token left out of the pooling
  Vec probeVectors; // [rows, probes, D] for the kept head rows
  Vec gain;         // [rows, probes]
  Vec query;        // [queries, D]
  Vec rowBias;      // [queries, rows, probes]
  Vec proj;         // [outDim, queries * D]
  Vec bias;         // [outDim] or empty
};

/// An engram site's tables, [len(orders) * E_h, slots, sub_dim], kept as the model stores them and
/// decoded a row when read: a token reads len(orders) * E_h rows of needle3's 110,592 a site, and
/// decoding whole tables (71 M floats over its five sites) was most of needlec's probe of a model.
class EngramTables {
public:
  EngramTables(const Model &model, const std::string &name);
  /// Row `index` (table * slots + slot), as Model::floats decodes it.
  Vec row(int64_t index) const;

private:
  Tensor tensor_;
  std::vector<float> codebook_; // a CQ tensor's
};

struct EngramWeights {
  EngramTables tables;
  Vec key, value, taps;
};

/// The Kronecker MLP of one block, with the shared permutations.
struct MlpWeights {
  int64_t rows = 0, cols = 0; // ba, bb
  Vec norm;
  Vec w1a, w2a, w3a, w1b, w2b, w3b;
  Vec d1, d2, b2, d3, d4;
  Vec condV, condU;
  std::vector<int32_t> p1, p2;
};

struct BlockWeights {
  int64_t window = 0; // attention window; 0 = global (every earlier position)
  int64_t site = -1;  // index into Weights::sites, or -1
  Vec attnNorm, postAttnNorm;
  Vec q, k, v, gate, o;
  Vec qTaps, kTaps, vTaps;
  Vec qNorm, kNorm;
  float attnGate = 0;
  MlpWeights mlp;
  Vec phiPre, phiPost, phiRes;
  Vec a, bPre, bPost, bRes;
};

struct Weights {
  Weights(const Model &model, int64_t depth);

  Config config;
  float eps = 0;
  std::vector<BlockWeights> blocks; // kept blocks in ascending id; lane position = index
  std::vector<EngramWeights> sites; // engram sites of kept blocks
  Vec embed;                        // [V, D]
  Vec finalNorm;
  HeadWeights confidence, embedding;
};

} // namespace needle::reference
