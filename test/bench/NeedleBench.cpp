// needle-bench: what needlec's numbers are made of, measured (Google Benchmark).
//   - memory bandwidth of this machine: the roofline every decode is held against, and its
//     vector throughput (the exact CQ2 kernel's compute bound);
//   - reference-interpreter decode at depths 2, 8 and 20 of the needle3 preset, with the bytes a
//     compiled model must stream per token and the tokens/s that bandwidth would allow;
//   - the runtime's CQ and attention kernels, portable and AVX2;
//   - CQ quantization throughput, and compile time (import + pipeline, slicing + writing).
// Timing lives here, never in pass/fail tests. Run: build/test/bench/needle-bench
#include "Import/Importer.h"
#include "Model/Config.h"
#include "Model/Ladder.h"
#include "Model/NeedleFile.h"
#include "Model/Quantize.h"
#include "Model/Slice.h"
#include "Model/Synth.h"
#include "Needle/Transforms/Passes.h"
#include "Pipeline/Pipeline.h"
#include "Reference/Interpreter.h"
#include "Support/RoundUp.h"
#include "codegen/Select/WeightLayouts.h"
#include "needle_runtime.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <memory>

using namespace needle;

namespace {

/// The needle3 preset, synthesized and quantized once (about 8 s).
const Model &needle3() {
  static const Model model = [] {
    Model m = synthesizeModel(presetConfig("needle3"), 1, SynthInit::Spread);
    quantizeModel(m, cq::CodebookKind::Needle);
    return m;
  }();
  return model;
}

/// Bytes a compiled model streams per decoded token at `depth`: every kept weight once, except
/// the engram tables, of which it gathers one row per table.
double streamedBytesPerToken(const Model &model, int64_t depth) {
  const Model slice = depth == model.config.numLayers ? model : sliceModel(model, depth, "bench");
  double bytes = 0;
  for (const auto &[name, t] : slice.tensors) {
    if (name.ends_with(".tables"))
      bytes += static_cast<double>(t.storedBytes()) / slice.config.engramSlots;
    else
      bytes += static_cast<double>(t.storedBytes());
  }
  return bytes;
}

double measuredBandwidth = 0; // bytes/s, set by BM_MemoryBandwidth

void BM_MemoryBandwidth(benchmark::State &state) {
  const size_t bytes = size_t{512} << 20;
  std::vector<uint8_t> source(bytes, 1), target(bytes, 0);
  for (auto _ : state) {
    std::memcpy(target.data(), source.data(), bytes);
    benchmark::DoNotOptimize(target.data());
    benchmark::ClobberMemory();
  }
  // A copy reads and writes every byte.
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * 2 * bytes);
  state.counters["bytes/s"] = benchmark::Counter(2.0 * bytes * state.iterations(), benchmark::Counter::kIsRate);
}

/// Read bandwidth over a buffer of `state.range(0)` MiB, read again and again: the roofline of a
/// model whose weights (its working set) are that large. Small sizes live in the caches.
void BM_ReadBandwidth(benchmark::State &state) {
  // XOR has one cycle of latency, so the loop is bound by loads, not by arithmetic.
  const size_t words = (size_t{1} << 20) * static_cast<size_t>(state.range(0)) / sizeof(uint64_t);
  std::vector<uint64_t> data(words, 0x9E3779B97F4A7C15u);
  for (auto _ : state) {
    uint64_t acc[16] = {};
    for (size_t i = 0; i < words; i += 16)
      for (size_t j = 0; j < 16; ++j)
        acc[j] ^= data[i + j];
    benchmark::DoNotOptimize(acc);
  }
  state.counters["read bytes/s"] = benchmark::Counter(
      static_cast<double>(words * sizeof(uint64_t)) * state.iterations(), benchmark::Counter::kIsRate);
}

void BM_ReferenceDecode(benchmark::State &state) {
  const int64_t depth = state.range(0);
  const Model &model = needle3();
  const reference::Weights weights(model, depth);
  const int tokensPerIteration = 8;
  for (auto _ : state) {
    reference::Session session(weights);
    for (int i = 0; i < tokensPerIteration; ++i) {
      const int32_t token = 17 + 1000 * i;
      session.feed(std::span(&token, 1));
    }
    benchmark::DoNotOptimize(session.outputs().confidence);
  }
  const double tokens = static_cast<double>(state.iterations()) * tokensPerIteration;
  const double bytes = streamedBytesPerToken(model, depth);
  state.counters["tokens/s"] = benchmark::Counter(tokens, benchmark::Counter::kIsRate);
  state.counters["CQ bytes/token"] = bytes;
  // The memory-bandwidth roofline of a compiled model streaming CQ weights.
  state.counters["roofline tokens/s"] = measuredBandwidth > 0 ? measuredBandwidth / bytes : 0;
}

/// Why kernel `choice` of NEEDLE_BENCH_KERNEL (1: AVX2, FMA and F16C; 2: AVX-512F as well) cannot run
/// here, or nullptr if it can.
const char *kernelUnavailable(int64_t choice) {
  if (choice == 0)
    return nullptr;
#if NEEDLE_RT_X86_KERNELS
  if (!(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c")))
    return "this CPU lacks AVX2, FMA or F16C";
  return choice == 2 && !__builtin_cpu_supports("avx512f") ? "this CPU lacks AVX-512F" : nullptr;
#else
  return "the AVX2 and AVX-512 kernels are x86-64's";
#endif
}

/// Why BM_RuntimeCq's kernel `choice` (0 portable, 1 and 2 AVX2, 3 AVX-512F, 4 to 6 AVX-512 VBMI
/// and VNNI) cannot run here, or nullptr if it can.
const char *cqKernelUnavailable(int64_t choice) {
  if (const char *why = kernelUnavailable(choice >= 3 ? 2 : choice > 0 ? 1 : 0))
    return why;
#if NEEDLE_RT_X86_KERNELS
  if (choice >= 4 && !(__builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vbmi") &&
                       __builtin_cpu_supports("avx512vnni")))
    return "this CPU lacks AVX-512 VBMI or VNNI";
#endif
  return nullptr;
}

/// The CQ benchmarks' matrix: rows x cols random weights quantized to `bits` by our quantizer on
/// `codebook` (Needle's).
cq::Packed benchCqMatrix(int64_t rows, int64_t cols, int bits, const std::vector<float> &codebook) {
  return cq::quantize(randomNormals(2, "bench", rows * cols, 0.02), rows, cols, bits, codebook, "bench");
}

#if NEEDLE_RT_X86_KERNELS
/// `passes` passes of zmm operations, each in a chain of its own (a chain's next operation is a
/// pass later, past its latency): kPermutes vpermps, kAdds vaddps, kFmas vfmadd and kShifts vpsrld
/// a pass, into `out`. The mix decides the rate where the operations share pipes (Zen 4's
/// permutes with adds issue 1.4 a cycle, with adds and FMAs as well 2: docs/performance.md).
template <int kPermutes, int kAdds, int kFmas, int kShifts>
NEEDLE_RT_AVX512 void vectorMix(int64_t passes, float *out) {
  // One more than asked: an array may not be empty (the spare is never touched).
  __m512 perm[kPermutes + 1], sum[kAdds + 1], fma[kFmas + 1];
  __m512i bits[kShifts + 1];
  const __m512i lanes = _mm512_setr_epi32(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 0);
  const __m512 step = _mm512_set1_ps(0.5f);
  std::fill(std::begin(perm), std::end(perm), step);
  std::fill(std::begin(sum), std::end(sum), step);
  std::fill(std::begin(fma), std::end(fma), step);
  std::fill(std::begin(bits), std::end(bits), lanes);
  for (int64_t p = 0; p < passes; ++p) {
#pragma GCC unroll 16
    for (int c = 0; c < kPermutes; ++c) // maskz: GCC 12 warns of the plain one
      perm[c] = _mm512_maskz_permutexvar_ps(needle_rt::kAll16, lanes, perm[c]);
#pragma GCC unroll 16
    for (int c = 0; c < kAdds; ++c)
      sum[c] = _mm512_add_ps(sum[c], step);
#pragma GCC unroll 16
    for (int c = 0; c < kFmas; ++c) // x·0.5 + 0.5 stays near 1
      fma[c] = _mm512_fmadd_ps(fma[c], step, step);
#pragma GCC unroll 16
    for (int c = 0; c < kShifts; ++c)
      bits[c] = _mm512_maskz_srli_epi32(needle_rt::kAll16, bits[c], 1);
  }
  __m512 all = _mm512_setzero_ps();
  for (int c = 0; c < kPermutes; ++c)
    all = _mm512_add_ps(all, perm[c]);
  for (int c = 0; c < kAdds; ++c)
    all = _mm512_add_ps(all, sum[c]);
  for (int c = 0; c < kFmas; ++c)
    all = _mm512_add_ps(all, fma[c]);
  for (int c = 0; c < kShifts; ++c)
    all = _mm512_add_ps(all, _mm512_castsi512_ps(bits[c]));
  _mm512_storeu_ps(out, all);
}
#endif

/// vectorMix<kPermutes, kAdds, kFmas, kShifts>: its zmm operations/s. The mixes registered below
/// are the exact CQ2 kernel's (8, 8, 0, 4) and the variants docs/performance.md weighs against it.
template <int kPermutes, int kAdds, int kFmas, int kShifts> void BM_VectorMix(benchmark::State &state) {
  if (const char *why = kernelUnavailable(2))
    return state.SkipWithError(why);
#if NEEDLE_RT_X86_KERNELS
  constexpr int64_t passes = 1 << 16;
  alignas(64) float out[16];
  for (auto _ : state) {
    vectorMix<kPermutes, kAdds, kFmas, kShifts>(passes, out);
    benchmark::DoNotOptimize(out);
  }
  const double perPass = kPermutes + kAdds + kFmas + kShifts;
  state.counters["vector ops/s"] =
      benchmark::Counter(perPass * passes * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
#endif
}

/// This core's vector arithmetic: zmm vpermps and vaddps in equal numbers (12 chains each), the two
/// operations the exact CQ2 kernel on AVX-512 spends its time in (8 of each and 4 shifts per 64
/// bytes of codes). Reports vector operations/s, the kernel's compute roofline beside the read
/// bandwidth's: x86 cores differ here by 2x (Zen 4 splits a zmm operation over its 256-bit pipes;
/// Zen 5 and Sapphire Rapids do not), and this machine's CPU changes between sessions.
void BM_VectorThroughput(benchmark::State &state) { BM_VectorMix<12, 12, 0, 0>(state); }

/// The runtime's CQ kernels on one matrix of rows x cols at `bits` (random weights quantized by
/// our quantizer) and n rotated inputs, by `kernel`: 0, the portable kernel on the file's layout
/// (cq_matmul, what --kernels portable calls); 1, the exact AVX2 kernel the native kernels call
/// on x86-64 with AVX2 (CQ2: cq_matmul_lut16_exact_avx2 on the CqLut16 layout; CQ4: cq_matmul_x8_exact_avx2
/// on CqX8); 2, the fast mode's AVX2 kernel on the CqLut16 layout (--activations int8); 3, the
/// exact AVX-512 kernel the object backend calls on a CPU with AVX-512F (CQ2: cq_matmul_chunkmajor_exact_avx512 on
/// CqLutChunkMajor; CQ4: cq_matmul_dword_exact_avx512 on CqLutDword); 4, the fast mode's kernel
/// the object backend calls on a CPU with AVX-512 VBMI and VNNI (cq_matmul_dword_fast_avx512vnni on CqLutDword); 5, the
/// exact kernels it calls on such a CPU (CQ2: cq_matmul_chunkmajor_exact_avx512vnni on CqLutChunkMajor; CQ4:
/// cq_matmul_dword_exact_avx512vnni on CqLutDword); 6, CQ4 only, the byte planes for every token
/// (cq4_plane_matmul_avx512vnni on CqLutDword), which 5 takes for a token alone on 64 tiles or
/// more (BM_RuntimeCq4Planes weighs the two). Reports
/// weights/s (one pass over the matrix serves the n tokens), the CQ bytes/s it streams and GFLOPS (2·rows·cols·n per
/// pass).
void BM_RuntimeCq(benchmark::State &state) {
  const int64_t rows = state.range(0), cols = state.range(1), n = state.range(3);
  const int bits = static_cast<int>(state.range(2));
  const int64_t choice = state.range(4);
  if (const char *why = cqKernelUnavailable(choice))
    return state.SkipWithError(why);
#if NEEDLE_RT_X86_KERNELS
  const auto kernel = choice == 4                ? needle_rt::cq_matmul_dword_fast_avx512vnni
                      : choice == 5 && bits == 2 ? needle_rt::cq_matmul_chunkmajor_exact_avx512vnni
                      : choice == 5              ? needle_rt::cq_matmul_dword_exact_avx512vnni
                      : choice == 6              ? needle_rt::cq4_plane_matmul_avx512vnni
                      : choice == 3 && bits == 2 ? needle_rt::cq_matmul_chunkmajor_exact_avx512
                      : choice == 3              ? needle_rt::cq_matmul_dword_exact_avx512
                      : choice == 2              ? needle_rt::cq_matmul_lut16_fast_avx2
                      : choice == 1 && bits == 2 ? needle_rt::cq_matmul_lut16_exact_avx2
                      : choice == 1              ? needle_rt::cq_matmul_x8_exact_avx2
                                                 : needle_rt::cq_matmul;
#else
  const auto kernel = needle_rt::cq_matmul;
#endif
  const std::vector<float> book = cq::codebook(cq::CodebookKind::Needle, bits);
  const cq::Packed m = benchCqMatrix(rows, cols, bits, book);
  const int64_t groups = cq::paddedCols(cols) / 128, stride = cq::paddedCols(cols) + rows;
  const auto *fileNorms = reinterpret_cast<const uint8_t *>(m.norms.data());
  const bool x8 = choice == 1 && bits == 4, lut = choice >= 2 || (choice == 1 && bits == 2);
  const bool chunkMajor = (choice == 3 || choice == 5) && bits == 2, dword = choice >= 3 && !chunkMajor;
  const std::vector<uint8_t> packed = chunkMajor ? tileCqLutChunkMajor(m.indices.data(), rows, groups, bits)
                                      : dword    ? tileCqLutDword(m.indices.data(), rows, groups, bits)
                                      : lut      ? tileCqLut16(m.indices.data(), rows, groups, bits)
                                      : x8       ? interleaveCqX8(m.indices.data(), rows, groups)
                                                 : m.indices;
  const std::vector<uint8_t> norms = chunkMajor ? chunkMajorNorms(fileNorms, rows, groups)
                                     : lut      ? blockCqLut16Norms(fileNorms, rows, groups)
                                     : x8       ? blockCqX8Norms(fileNorms, rows, groups)
                                                : std::vector<uint8_t>(fileNorms, fileNorms + 2 * m.norms.size());
  std::vector<float> io = randomNormals(3, "x", n * stride, 1.0); // token j: x_rot, then y
  for (auto _ : state) {
    kernel(packed.data(), reinterpret_cast<const uint16_t *>(norms.data()), book.data(), bits, rows, cols, io.data(),
           io.data() + stride - rows, stride, n);
    benchmark::DoNotOptimize(io.data());
    benchmark::ClobberMemory();
  }
  const double iterations = static_cast<double>(state.iterations());
  const double bytes = static_cast<double>(m.indices.size() + 2 * m.norms.size());
  state.counters["weights/s"] = benchmark::Counter(iterations * rows * cols, benchmark::Counter::kIsRate);
  state.counters["CQ bytes/s"] = benchmark::Counter(iterations * bytes, benchmark::Counter::kIsRate);
  state.counters["GFLOPS"] = benchmark::Counter(iterations * 2e-9 * rows * cols * n, benchmark::Counter::kIsRate);
}

/// The CQ kernels as a decode step meets them: `count` copies of one rows x cols CQ2 matrix
/// (codes, then norms, one after another in one buffer, as the object's weights lie) read one
/// after another, each by its own call, with one input: a working set past the caches, streamed
/// by small matrices. kernel: 3 the exact AVX-512 kernel, 4 the fast VNNI one.
void BM_RuntimeCqStream(benchmark::State &state) {
  if (const char *why = cqKernelUnavailable(state.range(3)))
    return state.SkipWithError(why);
#if NEEDLE_RT_X86_KERNELS
  const int64_t rows = state.range(0), cols = state.range(1), count = state.range(2);
  const bool fast = state.range(3) == 4;
  const auto kernel = fast ? needle_rt::cq_matmul_dword_fast_avx512vnni : needle_rt::cq_matmul_chunkmajor_exact_avx512;
  const std::vector<float> book = cq::codebook(cq::CodebookKind::Needle, 2);
  const cq::Packed m = benchCqMatrix(rows, cols, 2, book);
  const int64_t groups = cq::paddedCols(cols) / 128, stride = cq::paddedCols(cols) + rows;
  const auto *fileNorms = reinterpret_cast<const uint8_t *>(m.norms.data());
  const std::vector<uint8_t> packed =
      fast ? tileCqLutDword(m.indices.data(), rows, groups, 2) : tileCqLutChunkMajor(m.indices.data(), rows, groups, 2);
  const std::vector<uint8_t> norms =
      fast ? blockCqLut16Norms(fileNorms, rows, groups) : chunkMajorNorms(fileNorms, rows, groups);
  const int64_t codesBytes = roundUp(static_cast<int64_t>(packed.size()), 64),
                bytes = codesBytes + roundUp(static_cast<int64_t>(norms.size()), 64);
  std::vector<uint8_t> weights(count * bytes + 64);
  uint8_t *base = weights.data() + (64 - reinterpret_cast<uintptr_t>(weights.data()) % 64) % 64;
  for (int64_t i = 0; i < count; ++i) {
    std::memcpy(base + i * bytes, packed.data(), packed.size());
    std::memcpy(base + i * bytes + codesBytes, norms.data(), norms.size());
  }
  std::vector<float> io = randomNormals(3, "x", stride, 1.0);
  for (auto _ : state) {
    for (int64_t i = 0; i < count; ++i)
      kernel(base + i * bytes, reinterpret_cast<const uint16_t *>(base + i * bytes + codesBytes), book.data(), 2, rows,
             cols, io.data(), io.data() + stride - rows, stride, 1);
    benchmark::DoNotOptimize(io.data());
    benchmark::ClobberMemory();
  }
  state.counters["weights/s"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * count * rows * cols, benchmark::Counter::kIsRate);
#endif // elsewhere cqKernelUnavailable skipped it
}

// needle_rt::NAME_avx2 where `choice` is 1, NAME_avx512 where it is 2 (x86-64 only: check
// kernelUnavailable first), else needle_rt::NAME.
#if NEEDLE_RT_X86_KERNELS
#define NEEDLE_BENCH_KERNEL(NAME, choice)                                                                              \
  ((choice) == 2 ? needle_rt::NAME##_avx512 : (choice) == 1 ? needle_rt::NAME##_avx2 : needle_rt::NAME)
#else
#define NEEDLE_BENCH_KERNEL(NAME, choice) needle_rt::NAME
#endif

/// needle.attention of needle3's shape (12 query heads on 2 kv heads, dqk 48, dv 64) at position
/// t = count - 1 of a global ring (capacity 8192), so each call reads `count` positions, by
/// `kernel`: 0 the portable kernel, 1 the AVX2 one, 2 the AVX-512 one. Reports the positions read per second.
void BM_RuntimeAttention(benchmark::State &state) {
  const int64_t heads = 12, kvHeads = 2, dqk = 48, dv = 64, capacity = 8192, count = state.range(0);
  if (const char *why = kernelUnavailable(state.range(1)))
    return state.SkipWithError(why);
  const auto kernel = NEEDLE_BENCH_KERNEL(attention, state.range(1));
  std::vector<float> kCache = randomNormals(4, "k", capacity * kvHeads * dqk, 1.0);
  std::vector<float> vCache = randomNormals(5, "v", capacity * kvHeads * dv, 1.0);
  const std::vector<float> q = randomNormals(6, "q", heads * dqk, 1.0), k = randomNormals(7, "k1", kvHeads * dqk, 1.0),
                           v = randomNormals(8, "v1", kvHeads * dv, 1.0);
  std::vector<float> scores(needle_rt::attention_scratch_floats(capacity, heads, kvHeads)), out(heads * dv);
  for (auto _ : state) {
    kernel(q.data(), k.data(), v.data(), heads, kvHeads, dqk, dv, 0, capacity, count - 1, kCache.data(), vCache.data(),
           scores.data(), out.data());
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.counters["positions/s"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * count, benchmark::Counter::kIsRate);
}

/// One Kronecker product of the MLP's shape in needle3 (32 x 32 factors), by `kernel`: 0 the
/// portable kernel, 1 the AVX2 one, 2 the AVX-512 one. Reports its GFLOPS (two 32 x 32 x 32 products).
void BM_RuntimeKronecker(benchmark::State &state) {
  const int64_t side = 32;
  if (const char *why = kernelUnavailable(state.range(0)))
    return state.SkipWithError(why);
  const auto kernel = NEEDLE_BENCH_KERNEL(kronecker, state.range(0));
  const std::vector<float> z = randomNormals(9, "z", side * side, 1.0), wa = randomNormals(10, "wa", side * side, 0.2),
                           wb = randomNormals(11, "wb", side * side, 0.2);
  std::vector<float> tmp(side * side), out(side * side);
  for (auto _ : state) {
    kernel(z.data(), wa.data(), wb.data(), side, side, tmp.data(), out.data());
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.counters["GFLOPS"] = benchmark::Counter(static_cast<double>(state.iterations()) * 4 * side * side * side / 1e9,
                                                benchmark::Counter::kIsRate);
}

void BM_QuantizeCq2(benchmark::State &state) {
  const int64_t rows = 768, cols = 768;
  const std::vector<float> w = randomNormals(1, "bench", rows * cols, 0.02);
  const std::vector<float> book = cq::codebook(cq::CodebookKind::Needle, 2);
  for (auto _ : state)
    benchmark::DoNotOptimize(cq::quantize(w, rows, cols, 2, book, "bench"));
  state.counters["weights/s"] =
      benchmark::Counter(static_cast<double>(rows * cols) * state.iterations(), benchmark::Counter::kIsRate);
}

void BM_CompileImportAndPipeline(benchmark::State &state) {
  const Model &model = needle3();
  for (auto _ : state) {
    mlir::MLIRContext context;
    loadNeedleDialects(context);
    mlir::OwningOpRef<mlir::ModuleOp> module = importModel(context, model, "needle3.needle");
    mlir::PassManager pm(&context);
    buildDefaultPipeline(pm, state.range(0));
    if (mlir::failed(pm.run(*module)))
      state.SkipWithError("pipeline failed");
  }
}

void BM_CompileSliceAndWrite(benchmark::State &state) {
  const Model &model = needle3();
  for (auto _ : state)
    benchmark::DoNotOptimize(serializeNeedle(sliceModel(model, state.range(0), "bench")).size());
}

BENCHMARK(BM_MemoryBandwidth)->Unit(benchmark::kMillisecond)->Iterations(5);
BENCHMARK(BM_ReadBandwidth)->Arg(8)->Arg(16)->Arg(32)->Arg(512)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_VectorThroughput)->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(BM_VectorMix, 12, 0, 12, 0)->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(BM_VectorMix, 0, 12, 12, 0)->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(BM_VectorMix, 8, 4, 4, 0)->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(BM_VectorMix, 8, 8, 0, 4)->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(BM_VectorMix, 8, 4, 4, 4)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ReferenceDecode)->Arg(2)->Arg(8)->Arg(20)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_RuntimeCq)
    ->ArgNames({"rows", "cols", "bits", "n", "kernel"})
    ->Args({4096, 14336, 2, 1, 0}) // ggml's MUL_MAT benchmark shape
    ->Args({4096, 14336, 2, 1, 1})
    ->Args({4096, 14336, 2, 1, 2})
    ->Args({4096, 14336, 2, 1, 3})
    ->Args({4096, 14336, 2, 1, 4})
    ->Args({4096, 14336, 2, 1, 5})
    ->Args({4096, 14336, 2, 512, 1}) // ... and its prefill case (the portable kernel takes 30 s)
    ->Args({4096, 14336, 2, 512, 2})
    ->Args({4096, 14336, 2, 512, 3})
    ->Args({4096, 14336, 2, 512, 4})
    ->Args({4096, 14336, 2, 512, 5})
    ->Args({576, 768, 2, 1, 0}) // needle3: q
    ->Args({576, 768, 2, 1, 1})
    ->Args({576, 768, 2, 1, 2})
    ->Args({576, 768, 2, 1, 3})
    ->Args({576, 768, 2, 1, 4})
    ->Args({576, 768, 2, 1, 5})
    ->Args({768, 768, 2, 1, 0}) // needle3: engram key/value, attn.o
    ->Args({768, 768, 2, 1, 1})
    ->Args({768, 768, 2, 1, 2})
    ->Args({768, 768, 2, 1, 3})
    ->Args({768, 768, 2, 1, 4})
    ->Args({768, 768, 2, 1, 5})
    ->Args({768, 768, 2, 16, 0}) // needle3 at --batch 16
    ->Args({768, 768, 2, 16, 1})
    ->Args({768, 768, 2, 16, 2})
    ->Args({768, 768, 2, 16, 3})
    ->Args({768, 768, 2, 16, 4})
    ->Args({768, 768, 2, 16, 5})
    ->Args({8192, 768, 4, 1, 0}) // needle3: the tied CQ4 logits
    ->Args({8192, 768, 4, 1, 1})
    ->Args({8192, 768, 4, 1, 2})
    ->Args({8192, 768, 4, 1, 3})
    ->Args({8192, 768, 4, 1, 4})
    ->Args({8192, 768, 4, 1, 5})
    ->Args({8192, 768, 4, 16, 1})
    ->Args({8192, 768, 4, 16, 2})
    ->Args({8192, 768, 4, 16, 3})
    ->Args({8192, 768, 4, 16, 4})
    ->Args({8192, 768, 4, 16, 5})
    ->Args({16, 3072, 4, 1, 3}) // needle3: the lanes' phi_res, one tile
    ->Args({16, 3072, 4, 1, 5})
    ->Unit(benchmark::kMicrosecond);
// A feed's short runs (a few drafted tokens, a prefill's remainder): the exact and fast CQ2 kernels
// (1, 2) at n = 1 to 8 on needle3's 768 x 768, where a run of n tokens either passes over the
// matrix once per token or decodes it once for all of them (docs/performance.md, "Drafting").
BENCHMARK(BM_RuntimeCq)
    ->Name("BM_RuntimeCqRuns")
    ->ArgNames({"rows", "cols", "bits", "n", "kernel"})
    ->ArgsProduct({{768}, {768}, {2}, {1, 2, 3, 4, 5, 6, 7, 8}, {1, 2}})
    ->Unit(benchmark::kMicrosecond);
// The CQ4 byte planes (6) against the FMA kernel (3) for a token alone, by rows: where the planes'
// tables (about a thousand cycles a group) pay for their fewer operations a chunk
// (kCq4PlaneTiles). Not in bench-vs-ggml.sh's table.
BENCHMARK(BM_RuntimeCq)
    ->Name("BM_RuntimeCq4Planes")
    ->ArgNames({"rows", "cols", "bits", "n", "kernel"})
    ->ArgsProduct({{16, 64, 256}, {3072}, {4}, {1}, {3, 6}})
    ->ArgsProduct({{512, 1024, 2048, 8192}, {768}, {4}, {1}, {3, 6}})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_RuntimeCqStream)
    ->ArgNames({"rows", "cols", "count", "kernel"})
    ->Args({768, 768, 4, 3}) // in cache
    ->Args({768, 768, 4, 4})
    ->Args({768, 768, 80, 3}) // a depth-20 step's worth (12 MB of codes)
    ->Args({768, 768, 80, 4})
    ->Args({768, 768, 160, 3})
    ->Args({768, 768, 160, 4})
    ->Args({768, 768, 400, 3})
    ->Args({768, 768, 400, 4})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_RuntimeAttention)
    ->ArgNames({"count", "kernel"})
    ->Args({160, 0}) // bench-backends.sh's decode: positions 128 to 191
    ->Args({160, 1})
    ->Args({160, 2})
    ->Args({2000, 0}) // ... and its long context
    ->Args({2000, 1})
    ->Args({2000, 2})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_RuntimeKronecker)->ArgName("kernel")->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_QuantizeCq2)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CompileImportAndPipeline)->Arg(8)->Arg(20)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CompileSliceAndWrite)->Arg(8)->Unit(benchmark::kMillisecond);

} // namespace

int main(int argc, char **argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv))
    return 1;
  // Bandwidth first, so the decode benchmarks can report their roofline.
  struct Capture : benchmark::ConsoleReporter {
    void ReportRuns(const std::vector<Run> &runs) override {
      for (const Run &run : runs)
        if (run.benchmark_name().starts_with("BM_MemoryBandwidth") && run.counters.count("bytes/s"))
          measuredBandwidth = run.counters.at("bytes/s");
      ConsoleReporter::ReportRuns(runs);
    }
  } reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
