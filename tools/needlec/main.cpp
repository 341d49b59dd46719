// needlec: the ahead-of-time compiler driver (docs/command-line.md). It parses the command line
// into CompileOptions and writes what compile() (compiler/Pipeline/Compile.h) returns.
#include "Needle/Transforms/Passes.h"
#include "Pipeline/Compile.h"
#include "Support/CaptureStderr.h"
#include "Support/CommandLine.h"
#include "Support/Error.h"
#include "Support/Files.h"
#include "codegen/Transforms/Passes.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/Timing.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/CommandLine.h"

#include <cctype>
#include <charconv>
#include <cstdio>
#include <memory>
#include <optional>

namespace fs = std::filesystem;
using namespace needle;

namespace {

void checkName(const std::string &name) {
  bool ok = !name.empty() && (std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_');
  for (char c : name)
    ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
  if (!ok)
    fail("--name: \"{}\" is not a C identifier", name);
  // C reserves every file-scope name that begins with an underscore, and C++ every name with two
  // in a row; the header's functions are NAME_open and the like, at file scope in both.
  if (name[0] == '_' || name.find("__") != std::string::npos)
    fail("--name: \"{}\" is reserved in C or C++ (a leading underscore, or two in a row); start it with a letter",
         name);
}

/// --mlir-print-ir-tree-dir's directory, staged like every other output: MLIR writes the tree
/// into a temporary directory (the flag's value is rewritten to it), which commit() moves into
/// place only once the run has succeeded. Null without the flag.
std::unique_ptr<PendingOutput> stageIrTreeDir(std::vector<std::string> &args) {
  const std::string flag = "--mlir-print-ir-tree-dir=";
  for (std::string &arg : args)
    if (arg.rfind(flag, 0) == 0) {
      auto staged = std::make_unique<PendingOutput>(arg.substr(flag.size()), PendingOutput::Kind::Directory,
                                                    "--mlir-print-ir-tree-dir");
      arg = flag + staged->staging().string();
      return staged;
    }
  return nullptr;
}

/// Registers MLIR's pass-manager, timing and printing flags (and the pass names they may
/// name) and parses the --mlir-* arguments.
void parseMlirFlags(const std::vector<std::string> &args) {
  registerNeedleCodegenPasses();
  registerNeedlePasses(); // first: the pass-name options list the passes registered when they are
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerMLIRContextCLOptions();
  mlir::registerPassManagerCLOptions();
  mlir::registerDefaultTimingManagerCLOptions();
  mlir::registerAsmPrinterCLOptions();
  std::vector<const char *> argv = {"needlec"};
  for (const std::string &arg : args)
    argv.push_back(arg.c_str());
  std::string errors;
  llvm::raw_string_ostream stream(errors);
  bool parsed = false;
  // llvm::cl reports a bad option value straight to stderr, and needlec's errors are one line.
  const std::string printed = capturingStderr(
      [&] { parsed = llvm::cl::ParseCommandLineOptions(static_cast<int>(argv.size()), argv.data(), "", &stream); });
  if (!parsed) {
    std::string_view first = !stream.str().empty() ? stream.str() : printed;
    first = first.substr(0, first.find('\n'));
    if (first.starts_with("needlec: "))
      first.remove_prefix(9);
    fail("--mlir-*: {}", first);
  }
}

/// --emit KIND.
EmitKind emitKindOf(const std::string &emit) {
  const std::optional<EmitKind> kind = emitKindNamed(emit);
  if (!kind)
    fail("--emit: \"{}\" is not obj, cpp, llvm, asm, kernels, step, needle or mlir", emit);
  return *kind;
}

/// --batch: the tokens one call of the step carries at most.
int64_t batchSize(const CommandLine &cl) {
  constexpr int64_t kDefaultBatch = 16, kMaxBatch = 1024;
  const int64_t batch = cl.integer("batch").value_or(kDefaultBatch);
  if (batch < 1 || batch > kMaxBatch)
    fail("--batch: {} is outside 1..{}", batch, kMaxBatch);
  return batch;
}

/// The files --emit KIND writes for -o OUT, known before compiling (the IR's weights are not).
std::vector<std::string> outputsOf(EmitKind emit, const std::string &out) {
  if (out == "-")
    return {};
  if (writesThrough(out))
    return {out}; // -o's own output alone (writeOutputs)
  if (emit == EmitKind::Cpp)
    return {out + ".cpp", out + ".h"};
  if (emit == EmitKind::Object)
    return {out + ".o", out + ".h"};
  return {out};
}

/// --layers N, A..B or all: the deepest rung in options.prepare.layers (unset: all blocks), the
/// shallowest in options.prepare.shallowest (unset: one rung).
void setLayers(const CommandLine &cl, CompileOptions &options) {
  const std::optional<std::string> text = cl.value("layers");
  if (!text)
    return;
  const bool range = *text == "all" || text->find("..") != std::string::npos;
  if (range && options.emit == EmitKind::Needle)
    fail("--layers: a range of depths makes one object of every rung; --emit needle takes one depth");
  if (*text == "all") {
    options.prepare.shallowest = 2;
    return;
  }
  auto depth = [&](std::string_view digits) {
    int64_t value = 0;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size())
      fail("--layers: \"{}\" is not a depth, a range A..B or all", *text);
    return value;
  };
  const size_t dots = text->find("..");
  if (dots == std::string::npos) {
    options.prepare.layers = depth(*text);
    return;
  }
  options.prepare.shallowest = depth(std::string_view(*text).substr(0, dots));
  options.prepare.layers = depth(std::string_view(*text).substr(dots + 2));
  if (*options.prepare.shallowest > *options.prepare.layers)
    fail("--layers: the range {} starts past its end", *text);
}

/// Checks the code generation flags: their values, and that --emit takes them.
void checkCodegenFlags(const CommandLine &cl, EmitKind emit) {
  if (auto kernels = cl.value("kernels"); kernels && *kernels != "native" && *kernels != "portable")
    fail("--kernels: \"{}\" is not native or portable", *kernels);
  const bool object = isObjectKind(emit);
  for (const char *flag : {"mcpu", "mattr", "kernels"})
    if (cl.has(flag) && !object)
      fail("--{}: only meaningful with --emit obj, llvm, asm, kernels or step", flag);
  if (auto activations = cl.value("activations"); activations && *activations != "float" && *activations != "int8")
    fail("--activations: \"{}\" is not float or int8", *activations);
  for (const char *flag : {"activations", "batch"})
    if (cl.has(flag) && !object && emit != EmitKind::Cpp)
      fail("--{}: only meaningful with --emit obj, cpp, llvm, asm, kernels or step", flag);
  // The IR does not carry a tokenizer: one asked for by name must not be dropped without a word.
  if (cl.value("tokenizer").value_or("none") != "none" && emit == EmitKind::Mlir)
    fail("--tokenizer: the IR of --emit mlir does not carry a tokenizer; --emit needle, obj and cpp do");
  if (auto tables = cl.value("tokenizer-tables"); tables && *tables != "fast" && *tables != "small")
    fail("--tokenizer-tables: \"{}\" is not fast or small", *tables);
  if (cl.has("tokenizer-tables") && !object && emit != EmitKind::Cpp)
    fail("--tokenizer-tables: only meaningful with --emit obj, cpp, llvm or asm, which compile the tokenizer in");
  if (cl.has("stop") && !object && emit != EmitKind::Cpp)
    fail("--stop: only meaningful with --emit obj, cpp, llvm or asm, which build NAME_info's stop ids");
  for (const char *flag : {"tools", "schema", "call-end", "prompt", "schema-prompt", "max-query", "route-tools"})
    if (cl.has(flag) && emit != EmitKind::Object && emit != EmitKind::Cpp)
      fail("--{}: only meaningful with --emit obj or cpp, which compile the calls and records in", flag);
  if (cl.has("max-rollback") && emit == EmitKind::Needle)
    fail("--max-rollback: only meaningful with the kinds that plan a session, not --emit needle");
  for (const char *flag : {"prompt", "route-tools"})
    if (cl.has(flag) && !cl.has("tools"))
      fail("--{}: only meaningful with --tools", flag);
  if (cl.has("schema-prompt") && !cl.has("schema"))
    fail("--schema-prompt: only meaningful with --schema");
  for (const char *flag : {"call-end", "max-query"})
    if (cl.has(flag) && !cl.has("tools") && !cl.has("schema"))
      fail("--{}: only meaningful with --tools or --schema", flag);
}

/// Checks --passes, which only --emit mlir takes, and -o - where --emit writes files.
void checkOutputFlags(const CommandLine &cl, EmitKind emit, const std::string &out) {
  if (emit == EmitKind::Mlir) {
    const std::string passes = cl.value("passes").value_or("default");
    if (passes != "default" && passes != "none")
      fail("--passes: \"{}\" is not default or none", passes);
    if (passes == "none" && cl.has("layers"))
      fail("--layers: slicing is a pass; it needs --passes default");
  } else if (cl.has("passes")) {
    fail("--passes: only meaningful with --emit mlir");
  }
  if (out != "-")
    return;
  if (emit == EmitKind::Cpp)
    fail("-o -: --emit cpp writes OUT.cpp and OUT.h; give a path");
  if (emit == EmitKind::Object)
    fail("-o -: --emit obj writes OUT.o and OUT.h; give a path");
  if (emit == EmitKind::Needle)
    fail("-o -: --emit needle writes a binary file; give it a path");
}

/// The flag an output comes from, for its errors: -o, or -o with the role of a file beside it.
std::string flagOf(const OutputFile &file) { return file.role.empty() ? "-o" : "-o (" + file.role + ")"; }

/// Writes every output: "-" to stdout, files staged and moved into place, in order, only once all
/// are written, so a failure leaves none behind. None may be a file the run read. An -o that is
/// written through (a device, a FIFO, a descriptor's link: writesThrough) takes -o's own output
/// alone; the files beside it (the header, the IR's weights) are not written.
void writeOutputs(std::vector<OutputFile> files, const std::string &out) {
  if (out != "-" && writesThrough(out)) {
    std::erase_if(files, [](const OutputFile &file) { return !file.role.empty(); });
    for (OutputFile &file : files)
      file.path = out; // OUT.o or OUT.cpp: -o itself
  }
  std::vector<std::unique_ptr<PendingOutput>> pending; // each refuses a file the run read
  for (const OutputFile &file : files) {
    if (file.path == "-") {
      writeStdout(file.bytes);
      continue;
    }
    pending.push_back(std::make_unique<PendingOutput>(file.path, PendingOutput::Kind::File, flagOf(file)));
    pending.back()->write(file.bytes);
    if (file.keepWhenUnchanged)
      pending.back()->keepWhenUnchanged();
  }
  for (const std::unique_ptr<PendingOutput> &output : pending)
    output->commit();
}

int run(int argc, char **argv) {
  CommandLine cl(
      "needlec", "needlec MODEL [options] -o OUT",
      {{"layers", "N|A..B|all",
        "ladder depth to compile (default: all blocks); a range A..B or all (2..blocks) compiles one object "
        "holding every depth from A to B, each session picking its own (docs/c-interface.md)"},
       {"target", "T", "host (default), x86_64, aarch64, armv7, riscv64, wasm32, or an LLVM triple"},
       {"mcpu", "CPU", "the target CPU (default: the target's baseline; host: this machine's)"},
       {"mattr", "F", "target features to add or remove, LLVM's spelling: +avx2,+fma or +dotprod"},
       {"kernels", "K", "native (default: hand-written SIMD and Halide kernels for the target) or portable"},
       {"activations", "A",
        "float (default: exact) or int8 (the fast mode: CQ2/CQ4 matvecs on int8 lookup tables of their "
        "inputs, the logits a few % off; docs/performance.md)"},
       {"batch", "N",
        "tokens a feed carries through the model at once, reading each weight once for all "
        "(default 16; 1 keeps the arena smallest)"},
       {"emit", "KIND",
        "obj (default: OUT.o + OUT.h), cpp (OUT.cpp + OUT.h), llvm, asm, kernels (the kernel each call runs), "
        "step (@step in MLIR's LLVM dialect), "
        "needle or mlir (OUT)"},
       {"passes", "P", "with --emit mlir: default (the pipeline) or none (the IR straight after import)"},
       {"name", "NAME", "C symbol prefix (default needle_model)"},
       {"lora", "FILE", "merge this LoRA adapter (.safetensors) before quantization"},
       {"tokenizer", "FILE",
        "the model's tokenizer.json (default: the one it carries, or tokenizer.json beside config.json); "
        "none: no tokenizer"},
       {"tokenizer-tables", "T",
        "fast (default: a word that is a token skips BPE) or small (the tokenizer's tables without that "
        "hash: GPT-2's 0.97 MB rather than 1.23; docs/tokenizer.md)"},
       {"stop", "LIST",
        "the tokens that end a generation (NAME_info's stop_ids): added tokens by their text or ids, "
        "comma-separated (default: the tokenizer's EOS; none: no stop tokens)"},
       {"tools", "FILE",
        "a tools.json: compile the automaton of valid calls of these tools into the model "
        "(docs/tool-calls.md)"},
       {"prompt", "FILE",
        "the text NAME_call feeds around the user's words: {{tools}} and {{query}} in it (default: "
        "\"Tools: {{tools}}\\nRequest: {{query}}\\nCall:\")"},
       {"route-tools", "",
        "embed each tool with the model at compile time, for NAME_call_top_k and NAME_call_rank (the "
        "reference interpreter runs each tool's name and description at each depth)"},
       {"schema", "FILE",
        "a JSON Schema: compile the automaton of its values (typed records, NAME_extract) into the model"},
       {"schema-prompt", "FILE",
        "the text NAME_extract feeds around the user's words: {{schema}} and {{query}} in it (default: "
        "\"Schema: {{schema}}\\nText: {{query}}\\nRecord:\")"},
       {"call-end", "TOKEN",
        "the added token that ends a call or a record (default: the tokenizer's EOS; none: where its JSON "
        "closes)"},
       {"max-query", "BYTES",
        "the longest query NAME_call and NAME_extract take (default 1024); the arena grows with it"},
       {"max-seq", "N", "lower max_seq_len to shrink the session arena"},
       {"max-rollback", "K",
        "let NAME_truncate take back up to K tokens (default 0); the arena keeps K more positions in its "
        "rings and K snapshots of the heads' pooling"},
       {"codebook", "KIND", "needle (default) or lloyd-max, for quantizing float weights"},
       {"stats", "", "print figures about the compiled model (sizes, rotations per token)"},
       {"o", "OUT", "output path (- for stdout with --emit mlir)"}});
  cl.passThrough("mlir-", "MLIR's pass-manager and printing flags: --mlir-timing, --mlir-print-ir-after-all, "
                          "--mlir-print-ir-after=<pass>, --mlir-print-debuginfo, ...");
  if (!cl.parse(argc, argv))
    return 0;
  std::vector<std::string> mlirFlags = cl.passedThrough();
  const std::unique_ptr<PendingOutput> irTree = stageIrTreeDir(mlirFlags);
  parseMlirFlags(mlirFlags);
  CompileOptions options;
  options.mlirCommandLine = true;
  options.input = cl.onlyPositional("MODEL");
  options.emit = emitKindOf(cl.value("emit").value_or("obj"));
  checkCodegenFlags(cl, options.emit);
  // A bad --target fails first, whatever --emit; only the object backend needs its architecture.
  if (isObjectKind(options.emit))
    options.target = resolveTarget(cl.value("target").value_or("host"), cl.value("mcpu").value_or(""),
                                   cl.value("mattr").value_or(""));
  else
    checkTargetName(cl.value("target").value_or("host"));
  options.name = cl.value("name").value_or("needle_model");
  checkName(options.name);
  options.output = cl.value("o").value_or("");
  if (options.output.empty())
    fail("-o: missing; say where to write the output");
  checkOutputFlags(cl, options.emit, options.output);
  // The named inputs, before any work; as outputs are staged, PendingOutput refuses every file the
  // run read (a model directory's files, the weights beside the IR).
  std::vector<fs::path> inputs = {options.input};
  for (const char *flag : {"lora", "tokenizer", "tools", "prompt", "schema", "schema-prompt"})
    if (auto file = cl.value(flag); file && *file != "none")
      inputs.push_back(*file);
  for (const std::string &written : outputsOf(options.emit, options.output))
    for (const fs::path &input : inputs)
      checkNotInput(written, input, "-o");

  setLayers(cl, options);
  if (auto lora = cl.value("lora"))
    options.prepare.lora = *lora;
  if (auto tokenizer = cl.value("tokenizer"))
    options.prepare.tokenizer = *tokenizer;
  if (auto codebook = cl.value("codebook"))
    options.prepare.codebook = cq::parseCodebookKind(*codebook);
  if (auto tools = cl.value("tools"))
    options.tools = *tools;
  if (cl.value("tokenizer-tables").value_or("fast") == "small")
    options.tokenizerTables = tokenizer::TableLayout::Small;
  options.stop = cl.value("stop").value_or("");
  options.callEnd = cl.value("call-end").value_or("");
  options.routeTools = cl.has("route-tools");
  if (auto prompt = cl.value("prompt"))
    options.prompt = *prompt;
  if (auto schema = cl.value("schema"))
    options.schema = *schema;
  if (auto prompt = cl.value("schema-prompt"))
    options.schemaPrompt = *prompt;
  if (auto maxQuery = cl.integer("max-query")) {
    if (*maxQuery < 1 || *maxQuery > (int64_t(1) << 24))
      fail("--max-query: {} is not between 1 and 16777216 bytes", *maxQuery);
    options.maxQuery = uint32_t(*maxQuery);
  }
  options.maxSeq = cl.integer("max-seq");
  options.maxRollback = cl.integer("max-rollback").value_or(0);
  options.kernels = cl.value("kernels").value_or("native") == "native" ? KernelChoice::Native : KernelChoice::Portable;
  options.activations = cl.value("activations").value_or("float") == "int8" ? Activations::Int8 : Activations::Float;
  options.batch = batchSize(cl);
  options.passes = cl.value("passes").value_or("default") == "default";

  const CompileResult result = compile(options);
  writeOutputs(result.files, options.output);
  if (irTree)
    irTree->commit();
  if (cl.has("stats"))
    writeStdout(result.stats);
  return 0;
}

} // namespace

int main(int argc, char **argv) { return runTool("needlec", run, argc, argv); }
