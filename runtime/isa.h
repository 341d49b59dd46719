// The instruction sets the runtime has kernels for, tested once: which architecture's kernels
// compile here, the target attribute each SIMD kernel carries (so the runtime compiles without
// -mavx2 and the like, and the object printer calls a kernel only for a CPU that has it,
// codegen/Select), and which instruction sets the compiler targets (the C++ backend's dispatchers
// choose by these, where the product compiles the source). Self-contained C++17.
#ifndef NEEDLE_RT_ISA_H
#define NEEDLE_RT_ISA_H

// Kernels written once over an instruction set's vector operations (a traits type, as
// attention_x86.h's blocks) carry no target attribute of their own: they are inlined into the
// kernel of each instruction set, which carries it.
#if defined(__GNUC__)
#define NEEDLE_RT_INLINE_INTO_CALLER __attribute__((always_inline)) inline
#else
#define NEEDLE_RT_INLINE_INTO_CALLER inline
#endif

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define NEEDLE_RT_X86_KERNELS 1
#define NEEDLE_RT_AVX2 __attribute__((target("avx2,fma,f16c")))
#define NEEDLE_RT_AVX512 __attribute__((target("avx512f,avx2,fma,f16c")))
#define NEEDLE_RT_AVX512_VNNI __attribute__((target("avx512f,avx512bw,avx512vbmi,avx512vnni,avx2,fma,f16c")))
#endif
#if defined(__aarch64__) && defined(__ARM_NEON)
#include <arm_neon.h>
#define NEEDLE_RT_NEON_KERNELS 1
#endif
#if defined(__wasm__) && defined(__clang__)
#include <wasm_simd128.h>
#define NEEDLE_RT_WASM_KERNELS 1
#define NEEDLE_RT_SIMD128 __attribute__((target("simd128")))
#endif

// What the compiler targets: x86-64 with AVX2, FMA and F16C (the AVX2 kernels' features), and
// AVX-512F besides; wasm with simd128.
#if NEEDLE_RT_X86_KERNELS && defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define NEEDLE_RT_TARGETS_AVX2 1
#if defined(__AVX512F__)
#define NEEDLE_RT_TARGETS_AVX512 1
#endif
#endif
#if NEEDLE_RT_WASM_KERNELS && defined(__wasm_simd128__)
#define NEEDLE_RT_TARGETS_SIMD128 1
#endif

#endif // NEEDLE_RT_ISA_H
