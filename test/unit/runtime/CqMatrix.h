// A CQ matrix for the runtime's tests (the CQ matvecs, the engram's gather).
#pragma once

#include "RuntimeTestSupport.h"

#include "Quant/Cq.h"

#include <string>

namespace needle::runtime_test {

/// A CQ matrix made by the project's quantizer.
struct CqMatrix {
  int64_t rows, cols;
  int bits;
  Vec codebook;
  cq::Packed packed;
  Vec rotated; // [rows, padded]: the reference's decode in the rotated domain

  CqMatrix(const std::string &name, int64_t rows, int64_t cols, int bits,
           cq::CodebookKind kind = cq::CodebookKind::Needle)
      : rows(rows), cols(cols), bits(bits), codebook(cq::codebook(kind, bits)) {
    const Vec w = normals(name, rows * cols, 0.05);
    packed = cq::quantize(w, rows, cols, bits, codebook, name);
    rotated.resize(rows * cq::paddedCols(cols));
    cq::decodeRotatedRows(packed.indices.data(), packed.norms.data(), 0, rows, cols, bits, codebook, rotated.data());
  }
};

} // namespace needle::runtime_test
