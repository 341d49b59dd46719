// compile(): needlec's whole compilation from options to output bytes, in memory. What each
// --emit kind produces, in which order, what --stats reports, and the errors that need the model.
#include "Pipeline/Compile.h"
#include "Model/ModelFiles.h"
#include "Model/NeedleFile.h"
#include "Support/Error.h"
#include "TestModels.h"

#include <gtest/gtest.h>

#include <span>

using namespace needle;

namespace {

class Compile : public ::testing::Test {
protected:
  void SetUp() override {
    const std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    dir_ = test::scratchDir("compile-" + name);
    writeNeedleModel(test::tinyModel(), dir_ / "m.needle");
    options_.input = dir_ / "m.needle";
    options_.output = (dir_ / "out").string();
  }

  std::filesystem::path dir_;
  CompileOptions options_;
};

bool contains(const std::string &text, const std::string &part) { return text.find(part) != std::string::npos; }

TEST_F(Compile, MlirOfAQuantizedModelNamesItsInput) {
  options_.emit = EmitKind::Mlir;
  options_.prepare.layers = 2;
  const CompileResult result = compile(options_);
  ASSERT_EQ(result.files.size(), 1u);
  EXPECT_EQ(result.files[0].path, options_.output);
  EXPECT_TRUE(contains(result.files[0].bytes, "needle.model = \"m.needle\"")) << result.files[0].bytes.substr(0, 400);
  EXPECT_TRUE(contains(result.stats, "online rotations per token: ")) << result.stats;
}

TEST_F(Compile, MlirOfAFloatModelWritesItsWeightsFirst) {
  writeNeedleModel(synthesizeModel(test::tinyConfig(), 3, SynthInit::Spread), dir_ / "float.needle");
  options_.input = dir_ / "float.needle";
  options_.emit = EmitKind::Mlir;
  options_.output = (dir_ / "ir.mlir").string();
  const CompileResult result = compile(options_);
  ASSERT_EQ(result.files.size(), 2u);
  EXPECT_EQ(result.files[0].path, (dir_ / "ir.needle").string());
  EXPECT_EQ(result.files[0].role, "the weights written beside the IR");
  EXPECT_TRUE(looksLikeNeedle(
      std::span(reinterpret_cast<const uint8_t *>(result.files[0].bytes.data()), result.files[0].bytes.size())));
  EXPECT_TRUE(contains(result.files[1].bytes, "needle.model = \"ir.needle\""));

  options_.output = "-";
  EXPECT_THROW(compile(options_), Error) << "stdout IR cannot name weights it does not write";
}

TEST_F(Compile, NeedleIsTheSlicedModel) {
  options_.emit = EmitKind::Needle;
  options_.prepare.layers = 2;
  options_.maxSeq = 8;
  const CompileResult result = compile(options_);
  ASSERT_EQ(result.files.size(), 1u);
  const std::string &bytes = result.files[0].bytes;
  const Model model = parseNeedle(std::span(reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size()), "out");
  EXPECT_EQ(model.config.numLayers, 2);
  EXPECT_EQ(model.config.maxSeqLen, 8);
  EXPECT_TRUE(contains(result.stats, "layers: 2\n")) << result.stats;
  EXPECT_TRUE(contains(result.stats, "file bytes: " + std::to_string(bytes.size()) + "\n")) << result.stats;
}

TEST_F(Compile, CppIsAHeaderThenItsSource) {
  options_.emit = EmitKind::Cpp;
  options_.name = "tiny";
  const CompileResult result = compile(options_);
  ASSERT_EQ(result.files.size(), 2u);
  EXPECT_EQ(result.files[0].path, options_.output + ".h");
  EXPECT_EQ(result.files[1].path, options_.output + ".cpp");
  EXPECT_TRUE(contains(result.files[0].bytes, "tiny_feed("));
  EXPECT_TRUE(contains(result.files[1].bytes, "#include \"out.h\""));
}

TEST_F(Compile, ObjectKindsNeedATargetAndReportIt) {
  options_.emit = EmitKind::LlvmIr;
  EXPECT_THROW(compile(options_), Error);
  options_.target = resolveTarget("x86_64", "", "");
  options_.name = "tiny";
  const CompileResult result = compile(options_);
  ASSERT_EQ(result.files.size(), 1u);
  EXPECT_TRUE(contains(result.files[0].bytes, "define")) << "LLVM IR text";
  EXPECT_TRUE(contains(result.files[0].bytes, "@tiny_feed("));
  EXPECT_TRUE(contains(result.stats, "target: x86_64-unknown-linux-gnu (cpu x86-64, features none)\n")) << result.stats;
  EXPECT_TRUE(contains(result.stats, "time: total")) << result.stats;

  options_.emit = EmitKind::Object;
  const CompileResult object = compile(options_);
  ASSERT_EQ(object.files.size(), 2u);
  EXPECT_EQ(object.files[0].path, options_.output + ".h");
  EXPECT_EQ(object.files[1].path, options_.output + ".o");
  EXPECT_EQ(object.files[1].bytes.substr(0, 4), "\x7f"
                                                "ELF");
  EXPECT_EQ(compile(options_).files[1].bytes, object.files[1].bytes) << "the same options give the same bytes";
}

TEST_F(Compile, ModelErrorsNameTheFlag) {
  options_.emit = EmitKind::Needle;
  options_.maxSeq = 0;
  try {
    compile(options_);
    FAIL() << "--max-seq 0 compiled";
  } catch (const Error &e) {
    EXPECT_TRUE(contains(e.what(), "--max-seq: 0 is outside 1..")) << e.what();
  }
}

} // namespace
