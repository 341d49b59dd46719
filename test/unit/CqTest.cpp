#include "Quant/Cq.h"
#include "Model/Synth.h"
#include "Quant/Scheme.h"
#include "Support/Error.h"
#include "Support/Half.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>

using namespace needle;

namespace {

TEST(Fwht, MatchesTheDenseSylvesterMatrix) {
  for (int64_t n : {1, 2, 8, 128}) {
    std::vector<float> x = randomNormals(3, "fwht", n, 1.0);
    std::vector<float> fast = x;
    cq::fwht(fast.data(), n);
    for (int64_t a = 0; a < n; ++a) {
      double dense = 0;
      for (int64_t b = 0; b < n; ++b)
        dense += ((std::popcount(static_cast<uint64_t>(a & b)) % 2) ? -1.0 : 1.0) / std::sqrt(double(n)) * x[b];
      EXPECT_NEAR(fast[a], dense, 1e-5) << "n=" << n << " a=" << a;
    }
  }
}

TEST(Fwht, IsItsOwnInverse) {
  std::vector<float> x = randomNormals(4, "inverse", 128, 1.0), y = x;
  cq::fwht(y.data(), 128);
  cq::fwht(y.data(), 128);
  for (size_t i = 0; i < x.size(); ++i)
    EXPECT_NEAR(x[i], y[i], 1e-5);
}

TEST(Packing, RoundTripsAtEveryWidth) {
  for (int bits : {2, 3, 4}) {
    std::vector<uint8_t> indices(256);
    for (size_t i = 0; i < indices.size(); ++i)
      indices[i] = static_cast<uint8_t>((i * 7 + i / 3) % (1 << bits));
    std::vector<uint8_t> packed(indices.size() * bits / 8), back(indices.size());
    cq::packIndices(indices, bits, packed.data());
    cq::unpackIndices(packed.data(), static_cast<int64_t>(indices.size()), bits, back.data());
    EXPECT_EQ(indices, back) << bits << " bits";
  }
}

TEST(Packing, FollowsTheSpecBitLayout) {
  // 2 bits: index k at bits 2*(k mod 4) of byte k/4.
  std::vector<uint8_t> two = {1, 2, 3, 0, 0, 0, 0, 3};
  uint8_t out2[2];
  cq::packIndices(two, 2, out2);
  EXPECT_EQ(out2[0], 1 | 2 << 2 | 3 << 4);
  EXPECT_EQ(out2[1], 3 << 6);
  // 4 bits: low nibble first.
  std::vector<uint8_t> four = {0xA, 0x5, 0, 0, 0, 0, 0, 0xF};
  uint8_t out4[4];
  cq::packIndices(four, 4, out4);
  EXPECT_EQ(out4[0], 0x5A);
  EXPECT_EQ(out4[3], 0xF0);
  // 3 bits: eight indices in three bytes, LSB first.
  std::vector<uint8_t> three = {7, 0, 0, 0, 0, 0, 0, 5};
  uint8_t out3[3];
  cq::packIndices(three, 3, out3);
  EXPECT_EQ(out3[0], 0x07);
  EXPECT_EQ(out3[1], 0x00);
  EXPECT_EQ(out3[2], 5 << 5);
}

TEST(Codebook, NearestEntryTiesGoToTheLowerIndex) {
  const std::vector<float> book = {-0.5f, -0.25f, 0.25f, 0.5f};
  EXPECT_EQ(cq::nearestIndex(0.0f, book), 1);   // exactly between -0.25 and 0.25
  EXPECT_EQ(cq::nearestIndex(0.375f, book), 2); // exactly between 0.25 and 0.5
  EXPECT_EQ(cq::nearestIndex(0.376f, book), 3);
  EXPECT_EQ(cq::nearestIndex(-9.0f, book), 0);
  EXPECT_EQ(cq::nearestIndex(9.0f, book), 3);
}

TEST(Codebook, DefaultAndLloydMaxTables) {
  EXPECT_EQ(cq::codebook(cq::CodebookKind::Needle, 2)[0], static_cast<float>(-0.13317214));
  EXPECT_EQ(cq::codebook(cq::CodebookKind::Needle, 4).back(), static_cast<float>(0.242273703));
  const std::vector<float> lloyd = cq::codebook(cq::CodebookKind::LloydMax, 2);
  ASSERT_EQ(lloyd.size(), 4u);
  EXPECT_FLOAT_EQ(lloyd[0], static_cast<float>(-1.5104176 / std::sqrt(128.0)));
  EXPECT_FLOAT_EQ(lloyd[2], static_cast<float>(0.4527800 / std::sqrt(128.0)));
  for (auto kind : {cq::CodebookKind::Needle, cq::CodebookKind::LloydMax})
    for (int bits : {2, 3, 4})
      EXPECT_NO_THROW(cq::validateCodebook(cq::codebook(kind, bits), bits, "test"));
}

TEST(Codebook, RejectsUnsortedOrWrongSize) {
  EXPECT_THROW(cq::validateCodebook(std::vector<float>{0.1f, -0.1f, 0.2f, 0.3f}, 2, "x"), Error);
  EXPECT_THROW(cq::validateCodebook(std::vector<float>{0.1f, 0.2f, 0.3f}, 2, "x"), Error);
  EXPECT_THROW(cq::validateCodebook(std::vector<float>{0.1f, 0.1f, 0.2f, 0.3f}, 2, "x"), Error);
}

double relativeError(int bits, cq::CodebookKind kind) {
  const int64_t rows = 256, cols = 384;
  std::vector<float> w = randomNormals(5, "gauss", rows * cols, 0.02);
  const std::vector<float> book = cq::codebook(kind, bits);
  cq::Packed packed = cq::quantize(w, rows, cols, bits, book, "w");
  std::vector<float> back(w.size());
  cq::dequantizeRows(packed.indices.data(), packed.norms.data(), 0, rows, cols, bits, book, back.data());
  double err = 0, energy = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    err += (double(w[i]) - back[i]) * (double(w[i]) - back[i]);
    energy += double(w[i]) * w[i];
  }
  return err / energy;
}

TEST(Quantize, GaussianDistortionMatchesTheCodebook) {
  // Rotated unit-norm groups look Gaussian, so the relative MSE is the quantizer's distortion.
  EXPECT_NEAR(relativeError(2, cq::CodebookKind::Needle), 0.117, 0.006);
  EXPECT_NEAR(relativeError(3, cq::CodebookKind::Needle), 0.0345, 0.003);
  EXPECT_NEAR(relativeError(4, cq::CodebookKind::Needle), 0.0094, 0.001);
  EXPECT_NEAR(relativeError(2, cq::CodebookKind::LloydMax), 0.1175, 0.006);
}

TEST(Quantize, PadsColumnsAndKeepsShapes) {
  const int64_t rows = 3, cols = 200; // padded to 256: two groups
  std::vector<float> w = randomNormals(6, "pad", rows * cols, 1.0);
  cq::Packed packed = cq::quantize(w, rows, cols, 2, cq::codebook(cq::CodebookKind::Needle, 2), "w");
  EXPECT_EQ(packed.indices.size(), size_t(rows * 256 * 2 / 8));
  EXPECT_EQ(packed.norms.size(), size_t(rows * 2));
  // The norm of a group is the norm of its weights (H is orthonormal), rounded to fp16.
  double second = 0;
  for (int64_t i = 128; i < cols; ++i)
    second += double(w[i]) * w[i];
  EXPECT_NEAR(halfToFloat(packed.norms[1]), std::sqrt(second), std::sqrt(second) * 1e-3);
}

TEST(Quantize, ZeroGroupsDecodeToZero) {
  std::vector<float> w(128, 0.0f);
  const auto book = cq::codebook(cq::CodebookKind::Needle, 4);
  cq::Packed packed = cq::quantize(w, 1, 128, 4, book, "w");
  std::vector<float> back(128, 1.0f);
  cq::dequantizeRows(packed.indices.data(), packed.norms.data(), 0, 1, 128, 4, book, back.data());
  for (float v : back)
    EXPECT_EQ(v, 0.0f);
}

TEST(Quantize, NormOverflowingFp16IsAnError) {
  std::vector<float> w(128, 6000.0f); // norm 6000 * sqrt(128) = 67882 > 65504
  try {
    cq::quantize(w, 1, 128, 2, cq::codebook(cq::CodebookKind::Needle, 2), "blocks.0.attn.q");
    FAIL() << "expected an error";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("blocks.0.attn.q: row 0, group 0: norm"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("overflows fp16"), std::string::npos);
  }
}

TEST(Scheme, LongestMatchWins) {
  QuantScheme s = parseScheme("embedding=4,mhc=4,blocks.3=3,blocks.3.attn.o=4,default=2", 128, "cfg");
  EXPECT_EQ(s.bitsFor("embedding", "embed.weight"), 4);
  EXPECT_EQ(s.bitsFor("mhc", "blocks.0.mhc.phi_pre"), 4);
  EXPECT_EQ(s.bitsFor("attn", "blocks.0.attn.q"), 2);
  EXPECT_EQ(s.bitsFor("attn", "blocks.3.attn.q"), 3);
  EXPECT_EQ(s.bitsFor("attn", "blocks.3.attn.o"), 4);
  EXPECT_EQ(s.bitsFor("attn", "blocks.30.attn.q"), 2);    // a prefix matches whole components only
  EXPECT_EQ(s.bitsFor("mhc", "blocks.3.mhc.phi_pre"), 3); // "blocks.3" is longer than "mhc"
  EXPECT_TRUE(parseScheme("none", 128, "cfg").isNone());
}

TEST(Scheme, RejectsBadSchemes) {
  for (const char *bad : {"default=1", "default=8", "embedding=4", "a=2,a=3,default=2", "default=2,default=3",
                          "x,default=2", "=2,default=2", "x=two,default=2", ""}) {
    try {
      parseScheme(bad, 128, "cfg");
      ADD_FAILURE() << "accepted " << bad;
    } catch (const Error &e) {
      EXPECT_NE(std::string(e.what()).find("cfg: quantization.scheme:"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(parseScheme("default=2", 64, "cfg"), Error);
}

} // namespace
