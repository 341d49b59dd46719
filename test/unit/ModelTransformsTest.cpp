#include "Model/Ladder.h"
#include "Model/Lora.h"
#include "Model/ModelFiles.h"
#include "Model/Quantize.h"
#include "Model/Safetensors.h"
#include "Model/Slice.h"
#include "Support/Error.h"
#include "TestModels.h"

#include <gtest/gtest.h>

#include <cstring>
#include <limits>

using namespace needle;

namespace {

bool sameTensor(const Tensor &a, const Tensor &b) {
  return a.storage == b.storage && a.shape == b.shape && a.floats == b.floats && a.ints == b.ints && a.bits == b.bits &&
         a.packed == b.packed && a.norms == b.norms;
}

void expectSameModel(const Model &a, const Model &b) {
  EXPECT_EQ(writeConfig(a.config), writeConfig(b.config));
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (const auto &[name, t] : a.tensors) {
    ASSERT_TRUE(b.tensors.count(name)) << name;
    EXPECT_TRUE(sameTensor(t, b.tensors.at(name))) << name;
  }
}

TEST(Slice, SliceOfASliceEqualsTheSliceOfTheOriginal) {
  const Model model = test::tinyModel(true);
  expectSameModel(sliceModel(sliceModel(model, 16, "m"), 8, "m"), sliceModel(model, 8, "m"));
  expectSameModel(sliceModel(sliceModel(model, 8, "m"), 3, "m"), sliceModel(model, 3, "m"));
}

TEST(Slice, RemapsBlocksSitesGlobalsAndHeadRows) {
  const Model model = test::tinyModel(true);
  const Model slice = sliceModel(model, 8, "m"); // keeps 0 4 6 9 11 14 16 19
  const Config &c = slice.config;
  EXPECT_EQ(c.numLayers, 8);
  EXPECT_EQ(*c.sourceBlocks, (std::vector<int64_t>{0, 4, 6, 9, 11, 14, 16, 19}));
  EXPECT_EQ(c.globalLayers, (std::vector<int64_t>{1, 3, 5, 7})); // 4, 9, 14, 19
  EXPECT_EQ(c.engramLayers, (std::vector<int64_t>{4, 7}));       // 11, 19
  EXPECT_EQ(*c.ladderOrder, (std::vector<int64_t>{0, 7, 3, 5, 1, 2, 4, 6}));
  EXPECT_TRUE(sameTensor(slice.tensor("blocks.3.attn.q"), model.tensor("blocks.9.attn.q")));
  EXPECT_TRUE(sameTensor(slice.tensor("engram.0.tables"), model.tensor("engram.2.tables")));
  EXPECT_TRUE(sameTensor(slice.tensor("engram.1.key"), model.tensor("engram.4.key")));
  EXPECT_FALSE(slice.tensors.count("blocks.8.attn.q"));
  EXPECT_FALSE(slice.tensors.count("engram.2.tables"));
  // Head rows 0 and kept id + 1.
  const Tensor &probes = slice.tensor("confidence.probes"), &parent = model.tensor("confidence.probes");
  const int64_t row = probes.shape[1] * probes.shape[2];
  ASSERT_EQ(probes.shape[0], 9);
  const int64_t parentRows[] = {0, 1, 5, 7, 10, 12, 15, 17, 20};
  for (int64_t r = 0; r < 9; ++r)
    EXPECT_TRUE(std::equal(probes.floats.begin() + r * row, probes.floats.begin() + (r + 1) * row,
                           parent.floats.begin() + parentRows[r] * row));
  const Tensor &bias = slice.tensor("confidence.row_bias");
  EXPECT_EQ(bias.shape, (std::vector<int64_t>{2, 9, 2}));
  EXPECT_EQ(bias.floats[1 * 18 + 4 * 2 + 1], model.tensor("confidence.row_bias").floats[1 * 42 + 10 * 2 + 1]);
}

TEST(Slice, FullDepthKeepsEveryTensor) {
  const Model model = test::tinyModel();
  const Model slice = sliceModel(model, model.config.numLayers, "m");
  for (const auto &[name, t] : model.tensors)
    EXPECT_TRUE(sameTensor(t, slice.tensor(name))) << name;
}

TEST(Slice, RejectsInvalidDepths) {
  const Model model = test::tinyModel();
  EXPECT_THROW(sliceModel(model, 1, "m"), Error);
  EXPECT_THROW(sliceModel(model, 7, "m"), Error);
}

struct Adapter {
  std::filesystem::path path;
};

Adapter writeAdapter(const std::string &name, const std::vector<SafetensorsWriteEntry> &entries,
                     std::map<std::string, std::string> metadata = {{"lora_alpha", "8"}, {"lora_r", "2"}}) {
  Adapter a{test::scratchDir("lora-" + name) / "adapter.safetensors"};
  writeSafetensors(a.path, entries, metadata);
  return a;
}

SafetensorsWriteEntry f32(const std::string &name, std::vector<int64_t> shape, const std::vector<float> &values) {
  std::vector<uint8_t> bytes(4 * values.size());
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return {name, DType::F32, std::move(shape), std::move(bytes)};
}

std::string mergeError(Model model, const Adapter &a) {
  try {
    mergeLora(model, a.path);
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

TEST(Lora, MergesScaledProductIntoTheFloatWeights) {
  Model model = synthesizeModel(test::tinyConfig(), 3, SynthInit::Spread);
  const std::vector<float> before = model.tensor("blocks.0.attn.k").floats; // [32, 128]
  std::vector<float> a(2 * 128), b(32 * 2);
  for (size_t i = 0; i < a.size(); ++i)
    a[i] = float(i % 5) - 2.0f;
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = 0.25f * float(i % 3);
  mergeLora(
      model,
      writeAdapter("ok", {f32("blocks.0.attn.k.lora_A", {2, 128}, a), f32("blocks.0.attn.k.lora_B", {32, 2}, b)}).path);
  const Tensor &k = model.tensor("blocks.0.attn.k");
  EXPECT_EQ(k.storage, Tensor::Storage::F32);
  // Element (5, 7) by hand: scale alpha / r = 4; B[5, :] = (0.25, 0.5), A[:, 7] = (0, -2).
  EXPECT_FLOAT_EQ(k.floats[5 * 128 + 7], before[5 * 128 + 7] + 4.0f * (0.25f * 0.0f + 0.5f * -2.0f));
  EXPECT_EQ(model.provenance.back(), "merged LoRA adapter.safetensors (r 2, alpha 8, 1 tensors)");
}

TEST(Lora, RejectsBadAdapters) {
  const Model model = synthesizeModel(test::tinyConfig(), 3, SynthInit::Spread);
  const auto A = f32("blocks.0.attn.k.lora_A", {2, 128}, std::vector<float>(256));
  const auto B = f32("blocks.0.attn.k.lora_B", {32, 2}, std::vector<float>(64));
  EXPECT_NE(mergeError(model, writeAdapter("onlyA", {A})).find("needs both"), std::string::npos);
  EXPECT_NE(
      mergeError(model, writeAdapter("shape", {A, f32("blocks.0.attn.k.lora_B", {31, 2}, std::vector<float>(62))}))
          .find("lora_B has shape [31, 2], expected [32, 2]"),
      std::string::npos);
  EXPECT_NE(mergeError(model, writeAdapter("rank", {A, B}, {{"lora_alpha", "8"}, {"lora_r", "3"}}))
                .find("lora_A has shape [2, 128], expected [3, 128]"),
            std::string::npos);
  EXPECT_NE(mergeError(model, writeAdapter("target", {f32("nope.lora_A", {2, 128}, std::vector<float>(256)),
                                                      f32("nope.lora_B", {32, 2}, std::vector<float>(64))}))
                .find("the model has no tensor \"nope\""),
            std::string::npos);
  EXPECT_NE(mergeError(model, writeAdapter("meta", {A, B}, {{"lora_r", "2"}})).find("__metadata__.lora_alpha: missing"),
            std::string::npos);
  EXPECT_NE(mergeError(model, writeAdapter("name", {f32("x.weight", {1}, {1.0f})})).find("must end in .lora_A"),
            std::string::npos);
  Model quantized = test::tinyModel();
  EXPECT_NE(mergeError(quantized, writeAdapter("cq", {A, B})).find("pre-quantized; merging needs float weights"),
            std::string::npos);
}

TEST(Quantize, FollowsTheSchemeAndRecordsProvenance) {
  Model model = synthesizeModel(test::tinyConfig(), 3, SynthInit::Spread);
  quantizeModel(model, cq::CodebookKind::Needle);
  EXPECT_EQ(model.tensor("embed.weight").bits, 4);
  EXPECT_EQ(model.tensor("blocks.2.mhc.phi_res").bits, 4);
  EXPECT_EQ(model.tensor("blocks.2.attn.o").bits, 2);
  EXPECT_EQ(model.tensor("engram.1.tables").bits, 2);
  EXPECT_TRUE(model.tensor("blocks.2.mlp.w1a").isFloat());
  EXPECT_TRUE(model.tensor("confidence.proj").isFloat());
  EXPECT_EQ(model.codebooks.size(), 2u);
  EXPECT_NE(model.provenance.back().find("scheme embedding=4,mhc=4,default=2"), std::string::npos);
}

TEST(Quantize, KeepsTheModelsCodebookUnlessAskedOtherwise) {
  Model model = synthesizeModel(test::tinyConfig(), 3, SynthInit::Spread);
  quantizeModel(model, cq::CodebookKind::LloydMax); // a pre-quantized model with Lloyd-Max books
  model.tensors["blocks.0.attn.q"] =
      synthesizeModel(test::tinyConfig(), 3, SynthInit::Spread).tensor("blocks.0.attn.q");
  quantizeModel(model, std::nullopt); // no --codebook: the float tensor joins the model's book
  EXPECT_EQ(model.codebooks.at(2), cq::codebook(cq::CodebookKind::LloydMax, 2));
  EXPECT_EQ(model.tensor("blocks.0.attn.q").storage, Tensor::Storage::CQ);
}

TEST(Lora, RejectsNonFiniteResults) {
  Model model = synthesizeModel(test::tinyConfig(), 3, SynthInit::Spread);
  std::vector<float> a(2 * 128, 1.0f), b(32 * 2, 0.0f);
  a[5] = std::numeric_limits<float>::infinity();
  EXPECT_NE(mergeError(model, writeAdapter("inf", {f32("blocks.0.attn.k.lora_A", {2, 128}, a),
                                                   f32("blocks.0.attn.k.lora_B", {32, 2}, b)}))
                .find("is not finite"),
            std::string::npos);
}

TEST(Quantize, ConflictingCodebookIsAnError) {
  Model model = test::tinyModel(); // already CQ with the needle codebooks
  model.tensors["blocks.0.attn.q"] =
      synthesizeModel(test::tinyConfig(), 3, SynthInit::Spread).tensor("blocks.0.attn.q");
  EXPECT_THROW(quantizeModel(model, cq::CodebookKind::LloydMax), Error);
}

} // namespace
