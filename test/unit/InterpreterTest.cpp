#include "Reference/Interpreter.h"
#include "Model/Lora.h"
#include "Model/ModelFiles.h"
#include "Model/Safetensors.h"
#include "Model/Slice.h"
#include "Reference/Block.h"
#include "Support/Error.h"
#include "TestModels.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace needle;
using namespace needle::reference;

namespace {

const std::vector<int32_t> kTokens = {5, 17, 200, 0, 33, 33, 33, 9, 0, 0, 140, 12, 77, 5, 17, 200, 61, 2, 99, 250};

float maxRelative(const Vec &a, const Vec &b) {
  float scale = 1e-30f, diff = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    scale = std::max(scale, std::fabs(b[i]));
    diff = std::max(diff, std::fabs(a[i] - b[i]));
  }
  return diff / scale;
}

void expectClose(const Outputs &a, const Outputs &b, float tolerance) {
  EXPECT_EQ(a.position, b.position);
  EXPECT_LE(maxRelative(a.logits, b.logits), tolerance);
  EXPECT_LE(maxRelative(a.embedding, b.embedding), tolerance);
  EXPECT_NEAR(a.confidence, b.confidence, tolerance);
}

void expectIdentical(const Outputs &a, const Outputs &b) {
  EXPECT_EQ(a.logits, b.logits);
  EXPECT_EQ(a.embedding, b.embedding);
  EXPECT_EQ(a.confidence, b.confidence);
}

TEST(Kernels, EngramSlotWorkedByHand) {
  // tokens [5, 7], t = 1, order 2, table 0, one head, 64 slots:
  // acc = 0x9E3779B9 -> (acc ^ 7) * 0x01000193 -> (acc ^ 5) * 0x01000193 = 0x814182CD,
  // acc ^= acc >> 15 -> 0x8140804E, slot = 0x8140804E mod 64 = 14.
  const std::vector<int32_t> tokens = {5, 7};
  EXPECT_EQ(engramSlot(tokens, 1, 0, 2, 0, 1, 64), 14u);
}

TEST(Kernels, SinkhornIsDoublyStochastic) {
  // Columns are normalized last, so they sum to 1 exactly; rows converge with 20 rounds, fully
  // for mild logits and to within a few percent for sharply peaked ones.
  for (float sharpness : {0.5f, 3.0f}) {
    std::array<float, 16> logits;
    for (int i = 0; i < 16; ++i)
      logits[i] = sharpness * (std::sin(1.7f * i) + (i % 5 == 0 ? 1.5f : 0.0f));
    const auto h = sinkhorn(logits);
    for (int i = 0; i < 4; ++i) {
      float row = 0, col = 0;
      for (int k = 0; k < 4; ++k)
        row += h[i * 4 + k], col += h[k * 4 + i];
      EXPECT_NEAR(row, 1.0f, sharpness < 1 ? 1e-4 : 5e-2);
      EXPECT_NEAR(col, 1.0f, 1e-6);
    }
  }
}

TEST(Kernels, KroneckerMatchesTheDenseProduct) {
  // K(z) = wa^T Z wb equals (wa kron wb)^T z on the row-major flattening.
  const int64_t ba = 2, bb = 3;
  const Vec wa = {1, 2, 3, 4}, wb = {1, 0, 2, -1, 1, 0, 0.5, 3, 1}, z = {1, -1, 2, 0.5, 3, -2};
  const Vec fast = kronecker(z, wa, wb, ba, bb);
  for (int64_t r = 0; r < ba; ++r)
    for (int64_t c = 0; c < bb; ++c) {
      double dense = 0;
      for (int64_t a = 0; a < ba; ++a)
        for (int64_t b = 0; b < bb; ++b)
          dense += wa[a * ba + r] * wb[b * bb + c] * z[a * bb + b];
      EXPECT_FLOAT_EQ(fast[r * bb + c], static_cast<float>(dense));
    }
}

TEST(Kernels, RopeRotatesPairsByThePositionAngle) {
  Vec head = {1, 2, 3, 4}; // pairs (0, 2) and (1, 3); d = 4
  rope(head, 3, 100.0);
  const double a0 = 3.0, a1 = 3.0 * std::pow(100.0, -0.5);
  EXPECT_FLOAT_EQ(head[0], float(1 * std::cos(a0) - 3 * std::sin(a0)));
  EXPECT_FLOAT_EQ(head[2], float(3 * std::cos(a0) + 1 * std::sin(a0)));
  EXPECT_FLOAT_EQ(head[1], float(2 * std::cos(a1) - 4 * std::sin(a1)));
  EXPECT_FLOAT_EQ(head[3], float(4 * std::cos(a1) + 2 * std::sin(a1)));
}

TEST(Interpreter, IncrementalEqualsWholeSequence) {
  const Model model = test::tinyModel();
  for (int64_t depth : {2, 4, 6}) {
    const Weights w(model, depth);
    Session session(w);
    for (size_t t = 0; t < kTokens.size(); ++t) {
      session.feed(std::span(&kTokens[t], 1));
      if (t % 6 == 5 || t + 1 == kTokens.size())
        expectClose(session.outputs(), runSequence(w, std::span(kTokens).first(t + 1)), 1e-5f);
    }
    Session chunked(w);
    chunked.feed(std::span(kTokens).first(7));
    chunked.feed(std::span(kTokens).subspan(7));
    expectClose(chunked.outputs(), session.outputs(), 1e-5f);
  }
}

TEST(Interpreter, SlicedModelAtFullDepthEqualsParentAtThatDepthBitwise) {
  const Model model = test::tinyModel(true);
  for (int64_t depth : {2, 8, 13}) {
    const Model slice = sliceModel(model, depth, "m");
    expectIdentical(runSequence(Weights(slice, depth), kTokens), runSequence(Weights(model, depth), kTokens));
  }
  expectIdentical(runSequence(Weights(sliceModel(sliceModel(model, 16, "m"), 8, "m"), 8), kTokens),
                  runSequence(Weights(model, 8), kTokens));
}

TEST(Interpreter, DepthChangesTheAnswer) {
  const Model model = test::tinyModel(true);
  const Outputs full = runSequence(Weights(model, 20), kTokens);
  EXPECT_GT(maxRelative(runSequence(Weights(model, 8), kTokens).logits, full.logits), 1e-2f);
  expectIdentical(runSequence(Weights(sliceModel(model, 20, "m"), 20), kTokens), full);
}

TEST(Interpreter, ZeroLoraAdapterChangesNothing) {
  Model model = synthesizeModel(test::tinyConfig(), 9, SynthInit::Spread);
  Model merged = model;
  std::vector<uint8_t> zerosA(4 * 2 * 128, 0), zerosB(4 * 64 * 2, 0);
  auto path = test::scratchDir("zero-lora") / "a.safetensors";
  writeSafetensors(path,
                   {{"blocks.1.attn.q.lora_A", DType::F32, {2, 128}, zerosA},
                    {"blocks.1.attn.q.lora_B", DType::F32, {64, 2}, zerosB}},
                   {{"lora_alpha", "16"}, {"lora_r", "2"}});
  mergeLora(merged, path);
  quantizeModel(model, cq::CodebookKind::Needle);
  quantizeModel(merged, cq::CodebookKind::Needle);
  expectIdentical(runSequence(Weights(merged, 6), kTokens), runSequence(Weights(model, 6), kTokens));
}

TEST(Interpreter, BeforeAnyTokenAndAllPads) {
  const Model model = test::tinyModel();
  const Weights w(model, 6);
  const Outputs empty = Session(w).outputs();
  EXPECT_EQ(empty.position, 0);
  EXPECT_EQ(empty.logits, Vec(256, 0.0f));
  EXPECT_EQ(empty.embedding, Vec(16, 0.0f));
  EXPECT_FLOAT_EQ(empty.confidence, sigmoid(model.floats("confidence.bias")[0]));
  expectIdentical(runSequence(w, {}), empty);
  const std::vector<int32_t> pads = {0, 0, 0};
  const Outputs padded = runSequence(w, pads);
  EXPECT_FLOAT_EQ(padded.confidence, empty.confidence);
  EXPECT_EQ(padded.embedding, Vec(16, 0.0f));
  EXPECT_NE(padded.logits, empty.logits);
}

TEST(Interpreter, ByHandWithNeutralBlocks) {
  // Zero projections and MLP scales, uniform lane mixing: every block adds nothing, so the
  // logits are E . zc(E[t] sqrt(D); final_norm) -- computed here from the formula alone.
  Config c = test::tinyConfig();
  c.quantization = parseScheme("none", 128, "test");
  Model model = synthesizeModel(c, 4, SynthInit::Spread);
  for (auto &[name, t] : model.tensors) {
    const bool neutral = name.find(".attn.") != std::string::npos || name.find("mlp.d") != std::string::npos ||
                         name.find(".mhc.") != std::string::npos || name.starts_with("engram.");
    if (neutral && t.isFloat())
      std::fill(t.floats.begin(), t.floats.end(), 0.0f);
  }
  const int32_t token = 42;
  const Vec logits = runSequence(Weights(model, 6), std::vector<int32_t>{7, token}).logits;
  const Vec E = model.floats("embed.weight"), scale = model.floats("final_norm");
  double sumSquares = 0;
  for (int i = 0; i < 128; ++i)
    sumSquares += std::pow(E[token * 128 + i] * std::sqrt(128.0), 2);
  const double rms = std::sqrt(sumSquares / 128 + 1e-6);
  for (int v : {0, 42, 255}) {
    double expected = 0;
    for (int i = 0; i < 128; ++i)
      expected += E[v * 128 + i] * (1 + scale[i]) * E[token * 128 + i] * std::sqrt(128.0) / rms;
    EXPECT_NEAR(logits[v], expected, 1e-4 * std::max(1.0, std::fabs(expected))) << v;
  }
}

TEST(Interpreter, BadTokensLeaveTheSessionUnchanged) {
  const Model model = test::tinyModel();
  const Weights w(model, 6);
  Session session(w);
  session.feed(std::span(kTokens).first(3));
  const Outputs before = session.outputs();
  const std::vector<int32_t> bad = {4, 256};
  EXPECT_THROW(session.feed(bad), Error);
  EXPECT_THROW(session.feed(std::vector<int32_t>(300, 1)), Error);
  expectIdentical(session.outputs(), before);
  EXPECT_EQ(session.position(), 3);
}

} // namespace
