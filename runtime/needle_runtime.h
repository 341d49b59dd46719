// needle_rt: the portable kernels a compiled Needle model calls, one per op of the needle
// dialect (docs/dialect.md), each computing what compiler/Reference computes for it
// (docs/model.md is the contract).
//
// This header, with the runtime headers it includes joined in (cmake/JoinHeader.cmake), is
// carried into the C++ that `needlec --emit cpp` writes, so together they are self-contained
// C++17: only <cstdint>, <cstddef>, <cmath>, <cstring> and <type_traits> (and, on x86-64 with
// GCC or Clang, <immintrin.h> for the AVX2 and AVX-512 kernels; on aarch64, <arm_neon.h>; on wasm
// with Clang, <wasm_simd128.h>: isa.h), which the C++ backend also includes ahead of the
// namespace it pastes the runtime into (codegen/Cpp); everything inline in namespace needle_rt;
// no allocation, exceptions, I/O, OS calls or mutable globals. Kernels read and write only the
// caller's memory. Sizes and positions are int64_t; "floats" below counts float elements. Where a kernel keeps state
// across tokens (rings, pooling), the comment above it gives the exact layout and size; the caller owns and places it
// (the arena planner).
//
// The runtime lives in parts, included below in order, after the contract with the compiler
// (needle_contract.h: the group size, weight layouts, state and scratch sizes, session facts,
// which needlec includes alone): kernels/ holds each family's portable kernels, arch/<architecture>/ each family's
// kernels for one instruction set (behind isa.h's tests and target attributes), kernels/dispatch.h the kernels the
// compiler targets (the C++ backend's calls, one #if per op), then the flat entry points and the session. The parts are
// not headers of their own: include this one. Which kernel @step calls is chosen once, by the
// compiler, from the registry needle_kernels.def (codegen/Select).
//
// Arithmetic is f32 with f32 accumulators (the reference accumulates in double), except RoPE's
// angle, cos and sin, which model.md requires in double.
#ifndef NEEDLE_RUNTIME_H
#define NEEDLE_RUNTIME_H

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "isa.h"
#include "needle_contract.h"

// The parts, in dependency order (each uses only what the ones above it define).
// clang-format off
#include "kernels/scalars.h"
#include "kernels/cq.h"
#include "kernels/norms.h"
#include "kernels/lanes.h"
#include "kernels/engram.h"
#include "kernels/taps.h"
#include "kernels/attention.h"
#include "kernels/mlp.h"
#include "kernels/heads.h"
#include "arch/aarch64/cq_neon.h"
#include "arch/aarch64/cq_exact_neon.h"
#include "arch/wasm32/cq_simd128.h"
#include "arch/x86_64/cq_avx2.h"
#include "arch/x86_64/cq_avx512.h"
#include "arch/x86_64/cq_avx512vnni.h"
#include "arch/x86_64/rotations_avx2.h"
#include "arch/x86_64/rotations_avx512.h"
#include "arch/x86_64/math_avx2.h"
#include "arch/x86_64/lanes_avx2.h"
#include "arch/x86_64/attention_x86.h"
#include "arch/x86_64/attention_avx2.h"
#include "arch/x86_64/attention_avx512.h"
#include "arch/x86_64/mlp_avx2.h"
#include "arch/x86_64/mlp_avx512.h"
#include "kernels/dispatch.h"
#include "kernels/entries.h"
#include "kernels/session.h"
#include "kernels/rungs.h"
#include "kernels/sample.h"
// clang-format on

#endif // NEEDLE_RUNTIME_H
