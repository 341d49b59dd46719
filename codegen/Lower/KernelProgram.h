// What the lowering both backends share produces (codegen/Lower/Lower.h): @step as a straight
// list of calls to the runtime's kernels (runtime/needle_runtime.h) on arena offsets, weight
// offsets and literals, plus the read-only data and the facts of the C interface. The C++ printer
// prints it as source, the object printer as LLVM IR; neither looks at the needle ops again.
// Plain data, no MLIR: the printers that only read it stay cheap to compile.
#pragma once

#include "Support/RoundUp.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace needle {

/// One argument of a kernel call. The kind says what it is and, for scalars, its C type.
struct KernelArg {
  enum class Kind {
    Arena,       // pointer: arena + offset, elements of `element`
    Weight,      // pointer: weights + offset, elements of `element`
    Codebook,    // pointer: the f32 codebook of `value` bits
    Constant,    // pointer: the f32 constant array number `value`
    Int64List,   // pointer: a read-only int64_t array, `ints`
    PointerList, // pointer: an array of the pointers `pointers` (Arena or Weight) to `element`s
    HeadScratch, // pointer: a head function's own scratch (on its stack) + offset bytes
    HeadOutput,  // pointer: a head function's `out`
    Null,        // pointer: null
    I32,         // int32_t `value`
    I64,         // int64_t `value`
    F32,         // float `real`
    F64,         // double `real`
    Token,       // int32_t: the token of the current position
    Position,    // int64_t: the current position
    Count,       // int64_t: the tokens @step is called with (n)
  };
  Kind kind;
  int64_t value = 0;
  double real = 0;
  std::string element = "float"; // float, int32_t, uint8_t or uint16_t
  std::vector<int64_t> ints;
  std::vector<KernelArg> pointers;

  static KernelArg arena(int64_t offset, std::string element = "float") {
    return {Kind::Arena, offset, 0, std::move(element), {}, {}};
  }
  static KernelArg weight(int64_t offset, std::string element = "float") {
    return {Kind::Weight, offset, 0, std::move(element), {}, {}};
  }
  static KernelArg of(Kind kind, int64_t value = 0) { return {kind, value, 0, "float", {}, {}}; }
  static KernelArg i64(int64_t value) { return of(Kind::I64, value); }
  static KernelArg i32(int64_t value) { return of(Kind::I32, value); }
  static KernelArg f32(float real) { return {Kind::F32, 0, real, "float", {}, {}}; }
  static KernelArg f64(double real) { return {Kind::F64, 0, real, "float", {}, {}}; }
  bool isPointer() const { return kind <= Kind::Null; }
};

/// needle_rt::<kernel>(args...): one call of @step. An empty kernel is a comment line.
struct KernelCall {
  std::string kernel;
  std::vector<KernelArg> args;
  std::string comment;
};

/// A run of @step's calls and how it covers the n tokens @step is called with (docs/codegen.md,
/// "Batched steps"). Arena arguments past ModelFacts::outputsEnd (the scratch) are per token:
/// token i's copy is tokenStride·i bytes further on. Token and Position are token i's.
struct StepStage {
  enum class Kind {
    EachToken, // for i in [0, n): the calls, in order
    LastToken, // i = n - 1 only: calls whose results reach only the outputs
    Batched,   // one call for all n tokens (cq_matmul), on token 0's copies
  };
  Kind kind;
  std::vector<KernelCall> calls;
  // Tasks that may run in any order, on any thread (codegen/Select/ParallelStages.h): each call
  // of a Batched or LastToken stage (none reads or writes what another writes), or each token of
  // an EachToken one (its calls touch only that token's scratch).
  bool parallel = false;
};

/// The C interface's facts: needle_rt::ModelFacts and NAME_info_t.
struct ModelFacts {
  int64_t arenaSize = 0, arenaAlign = 0, outputsEnd = 0, maxSeqLen = 0, vocabSize = 0, embeddingDim = 0;
  int64_t batch = 1, tokenStride = 0; // tokens per call of @step at most; bytes between tokens' scratch
  int64_t logits = 0;
  float confidenceBias = 0;
  int64_t dModel = 0, numLayers = 0;
  std::vector<int32_t> sourceBlocks;
  int32_t bosId = -1, eosId = -1; // the tokenizer's, or -1
  std::vector<int32_t> stopIds;   // the tokens that end a generation (needlec --stop)
  uint64_t fingerprint = 0;       // modelFingerprint(), set by the emitter once the build is known
  int64_t maxRollback = 0;        // needlec --max-rollback: positions NAME_truncate can go back
  std::vector<int64_t> pools;     // each head's pooling state: its arena offset, its floats
  int64_t tokenLog = 0;           // the arena offset of the log of fed tokens, 0 for none
};

/// One depth's step, heads and facts: a rung of the object (docs/c-interface.md, "Every rung in
/// one object"). Its Weight arguments point into the program's weights, which rungs share.
struct RungProgram {
  /// void step(unsigned char *arena, const int32_t *tokens, int64_t n, int64_t t): tokens[0..n)
  /// at positions t.., 1 <= n <= facts.batch.
  std::vector<StepStage> step;
  /// void head(const unsigned char *arena, float *out): NAME_confidence's and NAME_embedding's
  /// head, computed when asked from its pooling state in the arena (read only), on headScratch
  /// bytes of its own stack (HeadScratch), into out (HeadOutput). A feed pools; it does not pay
  /// for the heads' outputs.
  std::vector<KernelCall> confidenceHead, embeddingHead;
  int64_t headScratch = 0;
  ModelFacts facts;
};

struct KernelProgram {
  std::vector<RungProgram> rungs = std::vector<RungProgram>(1); // by depth, consecutive, the shallowest first
  std::vector<uint8_t> weights;                                 // every tensor 64-byte aligned (kWeightAlign)
  std::map<int, std::vector<float>> codebooks;                  // by bits
  std::vector<std::vector<float>> constants;                    // f32 arrays
  std::vector<uint8_t> tokenizer;                               // the compiled tokenizer's image; empty without one
  std::vector<uint8_t> calls;                                   // the tool-call automaton's image; empty without tools
  std::vector<uint8_t> records; // the record automaton's image (--schema); empty without
  bool routesTools = false;     // the calls' image holds the tools' embeddings (--route-tools)

  /// The deepest rung: what NAME_open opens and NAME_info describes.
  RungProgram &deepest() { return rungs.back(); }
  const RungProgram &deepest() const { return rungs.back(); }
};

/// Every call of each rung's step, in order, then its heads'.
template <typename Program, typename Visit> void forEachCall(Program &program, Visit visit) {
  for (auto &rung : program.rungs) {
    for (auto &stage : rung.step)
      for (auto &call : stage.calls)
        visit(call);
    for (auto *head : {&rung.confidenceHead, &rung.embeddingHead})
      for (auto &call : *head)
        visit(call);
  }
}

/// Alignment of each tensor in KernelProgram::weights, and of the weights themselves.
inline constexpr int64_t kWeightAlign = 64;

/// Appends `count` bytes at `data` to `weights` at the next kWeightAlign boundary; returns their
/// offset. `data` must not point into `weights`, which may move.
inline int64_t appendWeights(std::vector<uint8_t> &weights, const void *data, size_t count) {
  const int64_t offset = roundUp(static_cast<int64_t>(weights.size()), kWeightAlign);
  weights.resize(static_cast<size_t>(offset), 0);
  const auto *begin = static_cast<const uint8_t *>(data);
  weights.insert(weights.end(), begin, begin + count);
  return offset;
}

} // namespace needle
