// needlec's work between its flags and its files: load and prepare the model, import it, run the
// pass pipeline, lower it and print it, returning every output as bytes. The driver
// (tools/needlec) parses the command line into CompileOptions and writes what compile() returns;
// nothing here touches an output path, so the whole compilation is testable in memory.
#pragma once

#include "Model/Prepare.h"
#include "Tokenizer/Tables.h"
#include "codegen/Object/ObjectEmitter.h"
#include "codegen/Select/WeightLayouts.h"
#include "targets/Targets.h"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace needle {

/// --emit: what compile() produces.
enum class EmitKind { Object, LlvmIr, Assembly, Kernels, Step, Cpp, Needle, Mlir };

/// The kind --emit NAME asks for, if NAME is one; and a kind's NAME.
std::optional<EmitKind> emitKindNamed(std::string_view name);
const char *emitKindName(EmitKind kind);

/// Whether `kind` goes through the object printer (and so needs a target).
bool isObjectKind(EmitKind kind);

struct CompileOptions {
  std::filesystem::path input; // MODEL
  /// --layers, --lora, --codebook. --layers A..B or all: the object holds every depth from
  /// prepare.shallowest (A; 2 for all) to prepare.layers (B; all blocks when unset); without
  /// shallowest, one.
  PrepareOptions prepare;
  std::optional<int64_t> maxSeq;
  int64_t maxRollback = 0; // --max-rollback: positions NAME_truncate can go back
  EmitKind emit = EmitKind::Object;
  std::optional<TargetSpec> target; // the object kinds' target, resolved
  std::string name = "needle_model";
  KernelChoice kernels = KernelChoice::Native;
  Activations activations = Activations::Float;
  int64_t batch = 16;
  bool passes = true; // --emit mlir: false prints the IR straight after import
  tokenizer::TableLayout tokenizerTables = tokenizer::TableLayout::Fast; // --tokenizer-tables
  std::string stop;                   // --stop: the tokens that end a generation (empty: the EOS, if any; none)
  std::filesystem::path tools;        // --tools: the tools.json whose calls the model writes (empty: none)
  std::string callEnd;                // --call-end: the added token that ends a call (empty: the EOS, if any; none)
  std::filesystem::path prompt;       // --prompt: NAME_call's prompt (empty: the default, docs/tool-calls.md)
  bool routeTools = false;            // --route-tools: embed the tools for NAME_call_top_k and NAME_call_rank
  std::filesystem::path schema;       // --schema: the JSON Schema of NAME_extract's records (empty: none)
  std::filesystem::path schemaPrompt; // --schema-prompt: NAME_extract's prompt (empty: the default)
  uint32_t maxQuery = 1024;           // --max-query: the longest query NAME_call and NAME_extract take, in bytes
  /// -o: where the outputs go ("-" for stdout). The IR names its weights file relative to it, and
  /// the outputs' paths are formed from it.
  std::string output;
  /// Applies MLIR's pass-manager and timing flags (--mlir-timing, --mlir-print-ir-*), which the
  /// driver has registered and parsed; a library caller leaves them out.
  bool mlirCommandLine = false;
};

/// One file compile() produced. `path` is "-" for stdout.
struct OutputFile {
  std::string path;
  std::string bytes;
  std::string role = {}; // what it is, when not -o's own output ("the weights written beside the IR")
  /// Left as it is, time included, when the file there already holds these bytes: the header, so
  /// a product's sources are not rebuilt when only the weights change.
  bool keepWhenUnchanged = false;
};

struct CompileResult {
  /// Every output, in the order the driver must move them into place (a header before the object
  /// that needs it, the IR's weights before the IR).
  std::vector<OutputFile> files;
  /// What --stats prints: sizes, rotations per token, the target, phase times; one figure a line.
  std::string stats;
};

/// Compiles as `options` say. Fails (needle::Error) on any user error before producing anything.
CompileResult compile(const CompileOptions &options);

} // namespace needle
