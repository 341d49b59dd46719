#include "codegen/Object/RuntimeBitcode.h"

namespace needle {

namespace {
const unsigned char kX86_64[] = {
#include "needle_runtime_x86_64.inc"
};
const unsigned char kAArch64[] = {
#include "needle_runtime_aarch64.inc"
};
const unsigned char kArm[] = {
#include "needle_runtime_arm.inc"
};
const unsigned char kRiscV64[] = {
#include "needle_runtime_riscv64.inc"
};
const unsigned char kWasm32[] = {
#include "needle_runtime_wasm32.inc"
};

template <size_t N> std::string_view view(const unsigned char (&bytes)[N]) {
  return {reinterpret_cast<const char *>(bytes), N};
}
} // namespace

std::string_view runtimeBitcode(RuntimeArch arch) {
  switch (arch) {
  case RuntimeArch::X86_64:
    return view(kX86_64);
  case RuntimeArch::AArch64:
    return view(kAArch64);
  case RuntimeArch::Arm:
    return view(kArm);
  case RuntimeArch::RiscV64:
    return view(kRiscV64);
  case RuntimeArch::Wasm32:
    return view(kWasm32);
  }
  return {};
}

} // namespace needle
