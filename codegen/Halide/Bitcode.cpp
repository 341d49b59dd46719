#include "codegen/Halide/Bitcode.h"
#include "codegen/Halide/Kernels.h"

#include "Support/Error.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace needle {

namespace {
Halide::Target kernelTarget(const std::string &halideTarget) {
  return Halide::Target(halideTarget + "-no_runtime-no_asserts-no_bounds_query");
}
} // namespace

Halide::Module kernelModule(Halide::Pipeline outputs, const std::vector<Halide::Argument> &arguments,
                            const std::string &halideTarget, const std::string &name) {
  try {
    return outputs.compile_to_module(arguments, name, kernelTarget(halideTarget));
  } catch (const Halide::Error &error) {
    fail("Halide: the {} kernel for {}: {}", name, halideTarget, std::string(error.what()));
  }
}

std::string compileToBitcode(const std::vector<Halide::Module> &modules, const std::string &halideTarget) {
  // Halide writes bitcode only to a file: a scratch file in $TMPDIR (or /tmp), removed at once.
  const char *tmpdir = std::getenv("TMPDIR");
  std::string path = std::string(tmpdir && *tmpdir ? tmpdir : "/tmp") + "/needlec-halide-XXXXXX";
  const int fd = mkstemp(path.data());
  if (fd < 0)
    fail("Halide: cannot create a scratch file {} for the kernels", path);
  close(fd);
  try {
    Halide::link_modules("needle_halide_kernels", modules).compile({{Halide::OutputFileType::bitcode, path}});
  } catch (const Halide::Error &error) {
    std::remove(path.c_str());
    fail("Halide: the kernels for {}: {}", halideTarget, std::string(error.what()));
  }
  std::ifstream file(path, std::ios::binary);
  std::stringstream bytes;
  bytes << file.rdbuf();
  std::remove(path.c_str());
  return bytes.str();
}

HalideKernelSet::HalideKernelSet(std::string halideTarget, int lanes)
    : target_(std::move(halideTarget)), lanes_(lanes), modules_(std::make_unique<Modules>()) {}

HalideKernelSet::~HalideKernelSet() = default;

bool HalideKernelSet::empty() const { return modules_->modules.empty(); }

std::string HalideKernelSet::bitcode() const { return compileToBitcode(modules_->modules, target_); }

} // namespace needle
