// Small models built in memory for the unit tests.
#pragma once

#include "Model/Config.h"
#include "Model/Model.h"
#include "Model/Quantize.h"
#include "Model/Synth.h"

#include <filesystem>
#include <string>

namespace needle::test {

/// The tiny preset, optionally with 20 blocks laid out like needle3 (globals and engram sites).
inline Config tinyConfig(bool twentyBlocks = false) {
  Config c = presetConfig("tiny");
  if (twentyBlocks) {
    c.numLayers = 20;
    c.globalLayers = {4, 9, 14, 19};
    c.engramLayers = {3, 7, 11, 15, 19};
    validateConfig(c, "test");
  }
  return c;
}

/// A random model, quantized by its scheme (as needlec would run it).
inline Model tinyModel(bool twentyBlocks = false, uint64_t seed = 7) {
  Model m = synthesizeModel(tinyConfig(twentyBlocks), seed, SynthInit::Spread);
  quantizeModel(m, cq::CodebookKind::Needle);
  return m;
}

/// A fresh empty directory under the test's temporary area.
inline std::filesystem::path scratchDir(const std::string &name) {
  auto dir = std::filesystem::temp_directory_path() / ("needle-unit-" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

} // namespace needle::test
