// needlec: the ahead-of-time compiler driver (docs/command-line.md). This build emits .needle
// models and needle-dialect IR; the backends arrive with later issues and say so until then.
#include "Import/Importer.h"
#include "Model/Ladder.h"
#include "Model/ModelFiles.h"
#include "Model/NeedleFile.h"
#include "Model/Prepare.h"
#include "Needle/Transforms/Passes.h"
#include "Pipeline/Pipeline.h"
#include "Support/CaptureStderr.h"
#include "Support/CommandLine.h"
#include "Support/Error.h"
#include "Support/Files.h"
#include "codegen/Cpp/CppEmitter.h"
#include "codegen/Lower/Lower.h"
#include "codegen/Object/ObjectEmitter.h"
#include "codegen/Transforms/Passes.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassInstrumentation.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/Timing.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/CommandLine.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <optional>
#include <set>

namespace fs = std::filesystem;
using namespace needle;

namespace {

void checkName(const std::string &name) {
  bool ok = !name.empty() && (std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_');
  for (char c : name)
    ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
  if (!ok)
    fail("--name: \"{}\" is not a C identifier", name);
}

void applyMaxSeq(const CommandLine &cl, Model &model, bool &transformed) {
  if (std::optional<int64_t> maxSeq = cl.integer("max-seq")) {
    if (*maxSeq < 1 || *maxSeq > model.config.maxSeqLen)
      fail("--max-seq: {} is outside 1..{} (the model's max_seq_len)", *maxSeq, model.config.maxSeqLen);
    transformed = transformed || *maxSeq != model.config.maxSeqLen;
    model.config.maxSeqLen = *maxSeq;
  }
}

void printStats(const Model &model, uint64_t fileBytes) {
  uint64_t payload = 0, cqWeights = 0, cqBytes = 0;
  int cqTensors = 0;
  for (const auto &[name, t] : model.tensors) {
    payload += t.storedBytes();
    if (t.storage == Tensor::Storage::CQ) {
      ++cqTensors;
      cqWeights += t.elements();
      cqBytes += t.storedBytes();
    }
  }
  std::printf("layers: %lld\n", static_cast<long long>(model.config.numLayers));
  std::printf("parameters: %lld\n", static_cast<long long>(model.parameterCount()));
  std::printf("tensors: %zu (%d CQ)\n", model.tensors.size(), cqTensors);
  std::printf("cq bits per weight: %.4f\n", cqWeights ? 8.0 * cqBytes / cqWeights : 0.0);
  std::printf("payload bytes: %llu\n", static_cast<unsigned long long>(payload));
  std::printf("file bytes: %llu\n", static_cast<unsigned long long>(fileBytes));
  std::printf("container overhead: %.4f%%\n", 100.0 * (fileBytes - payload) / std::max<uint64_t>(payload, 1));
}

/// Online rotations before and after folding, and float weights left.
struct PipelineFigures {
  int64_t rotationsBefore = 0, rotationsAfter = 0, dequantizedWeights = 0;
};

/// Counts the online rotations just before needle-fold-hadamard runs (after any slicing), so
/// one pass manager runs the whole pipeline and --mlir-timing reports it in one table.
class RotationsBeforeFolding : public mlir::PassInstrumentation {
public:
  explicit RotationsBeforeFolding(int64_t &count) : count_(count) {}
  void runBeforePass(mlir::Pass *pass, mlir::Operation *op) override {
    if (pass->getArgument() == "needle-fold-hadamard")
      count_ = countOnlineRotations(mlir::cast<mlir::ModuleOp>(op));
  }

private:
  int64_t &count_;
};

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

PipelineFigures runPipeline(mlir::ModuleOp module, std::optional<int64_t> depth, bool optimize) {
  PipelineFigures figures;
  mlir::PassManager pm(module.getContext());
  if (failed(mlir::applyPassManagerCLOptions(pm)))
    fail("--mlir-*: the pass manager options are inconsistent");
  mlir::applyDefaultTimingPassManagerCLOptions(pm);
  if (optimize)
    buildDefaultPipeline(pm, depth.value_or(0));
  else if (depth)
    pm.addPass(createSliceDepth(SliceDepthOptions{*depth}));
  pm.addInstrumentation(std::make_unique<RotationsBeforeFolding>(figures.rotationsBefore));
  if (mlir::failed(pm.run(module)))
    fail("the pass pipeline failed (see the diagnostics above)");
  figures.rotationsAfter = countOnlineRotations(module);
  if (!optimize)
    figures.rotationsBefore = figures.rotationsAfter;
  figures.dequantizedWeights = countDequantizedWeights(module);
  return figures;
}

void printPipelineFigures(const PipelineFigures &f) {
  std::printf("online rotations per token: %lld before folding, %lld after\n",
              static_cast<long long>(f.rotationsBefore), static_cast<long long>(f.rotationsAfter));
  std::printf("dequantized weight matrices: %lld\n", static_cast<long long>(f.dequantizedWeights));
}

/// Where the IR's weights live: the input itself when it is an unchanged .needle file, else a
/// .needle written beside the IR. The IR names it relative to the IR's directory.
struct WeightsPlan {
  std::string reference;         // the needle.model attribute
  std::optional<fs::path> write; // a file to write, when the model was transformed
};

WeightsPlan planWeights(const fs::path &input, const std::string &out, bool transformed) {
  if (out == "-") {
    if (transformed)
      fail("-o -: the IR must name a weights file, but the model was merged, quantized or changed; "
           "write the IR to a file (its weights go beside it) or start from a CQ .needle");
    return {input.string(), std::nullopt};
  }
  fs::path outPath(out);
  const fs::path directory = fs::absolute(outPath).parent_path();
  if (!transformed)
    return {fs::relative(fs::absolute(input), directory).string(), std::nullopt};
  fs::path weights = outPath;
  weights.replace_extension(".needle");
  if (weights == outPath)
    fail("-o {}: an IR file cannot end in .needle (its weights are written beside it as .needle)", out);
  return {weights.filename().string(), weights};
}

void emitMlir(const CommandLine &cl, const std::string &input, const std::string &out, PrepareOptions options) {
  const std::string passes = cl.value("passes").value_or("default");
  if (passes != "default" && passes != "none")
    fail("--passes: \"{}\" is not default or none", passes);
  if (passes == "none" && cl.has("layers"))
    fail("--layers: slicing is a pass; it needs --passes default");
  const std::optional<int64_t> depth = options.layers;
  options.layers.reset(); // the IR is imported whole and sliced by needle-slice-depth
  bool transformed = false;
  Model model = prepareModel(input, options, &transformed);
  if (depth)
    validateDepth(*depth, model.config.numLayers, input);
  applyMaxSeq(cl, model, transformed);
  const WeightsPlan weights = planWeights(input, out, transformed);

  mlir::MLIRContext context;
  loadNeedleDialects(context);
  mlir::OwningOpRef<mlir::ModuleOp> module = importModel(context, model, weights.reference);
  const PipelineFigures figures = runPipeline(*module, depth, passes == "default");
  std::string text;
  llvm::raw_string_ostream stream(text);
  module->print(stream, mlir::OpPrintingFlags()); // honours --mlir-print-debuginfo
  stream << "\n";                                 // as needle-opt prints it, so the two compare as text
  stream.flush();
  if (out == "-") {
    std::fputs(text.c_str(), stdout);
  } else {
    // Both outputs are staged (and checked) before either is moved into place, so a failure
    // leaves neither behind.
    PendingOutput output(out, PendingOutput::Kind::File);
    std::optional<PendingOutput> weightsOutput;
    if (weights.write) {
      checkNotInput(*weights.write, input, "-o (the weights written beside the IR)");
      if (options.lora)
        checkNotInput(*weights.write, *options.lora, "-o (the weights written beside the IR)");
      weightsOutput.emplace(*weights.write, PendingOutput::Kind::File);
      weightsOutput->write(serializeNeedle(model));
    }
    output.write(text);
    if (weightsOutput)
      weightsOutput->commit();
    output.commit();
  }
  if (cl.has("stats"))
    printPipelineFigures(figures);
}

/// --batch: the tokens one call of the step carries at most.
int64_t batchSize(const CommandLine &cl) {
  constexpr int64_t kDefaultBatch = 16, kMaxBatch = 1024;
  const int64_t batch = cl.integer("batch").value_or(kDefaultBatch);
  if (batch < 1 || batch > kMaxBatch)
    fail("--batch: {} is outside 1..{}", batch, kMaxBatch);
  return batch;
}

/// The model through the pipeline, lowered to kernel calls: what both code printers print.
KernelProgram compileProgram(const CommandLine &cl, const std::string &input, const PrepareOptions &options,
                             const std::string &backend, std::vector<PhaseTime> &times) {
  if (cl.has("passes"))
    fail("--passes: only meaningful with --emit mlir");
  auto start = std::chrono::steady_clock::now();
  auto done = [&](const char *phase) {
    const auto now = std::chrono::steady_clock::now();
    times.push_back({phase, std::chrono::duration<double>(now - start).count()});
    start = now;
  };
  bool transformed = false;
  Model model = prepareModel(input, options, &transformed);
  applyMaxSeq(cl, model, transformed);
  done("load and prepare the model");
  mlir::MLIRContext context;
  loadNeedleDialects(context);
  mlir::OwningOpRef<mlir::ModuleOp> module = importModel(context, model, input);
  const PipelineFigures figures = runPipeline(*module, std::nullopt, true);
  done("import and pass pipeline");
  KernelProgram program = lowerToKernelCalls(*module, model, backend, batchSize(cl));
  done("lower to kernel calls");
  if (cl.has("stats"))
    printPipelineFigures(figures);
  return program;
}

void printPhaseTimes(const std::vector<PhaseTime> &times) {
  double total = 0;
  for (const PhaseTime &time : times) {
    std::printf("time: %-40s %8.3f s\n", time.phase.c_str(), time.seconds);
    total += time.seconds;
  }
  std::printf("time: %-40s %8.3f s\n", "total", total);
}

/// --activations: float (the default) or int8, checked in run().
Activations activationsOf(const CommandLine &cl) {
  return cl.value("activations").value_or("float") == "int8" ? Activations::Int8 : Activations::Float;
}

/// OUT.cpp + OUT.h: the model printed as standalone C++.
void emitCpp(const CommandLine &cl, const std::string &input, const std::string &out, const PrepareOptions &options) {
  if (out == "-")
    fail("-o -: --emit cpp writes OUT.cpp and OUT.h; give a path");
  std::vector<PhaseTime> times;
  const KernelProgram program = compileProgram(cl, input, options, "--emit cpp", times);
  const std::string headerName = fs::path(out).filename().string() + ".h";
  const CppModel cpp =
      needle::emitCpp(program, cl.value("name").value_or("needle_model"), headerName, activationsOf(cl));
  PendingOutput source(out + ".cpp", PendingOutput::Kind::File), header(out + ".h", PendingOutput::Kind::File);
  source.write(cpp.source);
  header.write(cpp.header);
  header.commit();
  source.commit();
}

/// OUT.o + OUT.h (--emit obj), or the LLVM IR (--emit llvm) or assembly (--emit asm) as OUT, for
/// the target.
void emitObjectFile(const CommandLine &cl, const std::string &input, const std::string &out,
                    const PrepareOptions &options, const std::string &emit, const TargetSpec &target) {
  const ObjectOutput output = emit == "obj"    ? ObjectOutput::Object
                              : emit == "llvm" ? ObjectOutput::LlvmIr
                                               : ObjectOutput::Assembly;
  if (out == "-" && output == ObjectOutput::Object)
    fail("-o -: --emit obj writes OUT.o and OUT.h; give a path");
  std::vector<PhaseTime> times;
  KernelProgram program = compileProgram(cl, input, options, "--emit " + emit, times);
  ObjectOptions objectOptions;
  objectOptions.name = cl.value("name").value_or("needle_model");
  objectOptions.output = output;
  const std::string kernels = cl.value("kernels").value_or("native");
  objectOptions.kernels = kernels == "native" ? KernelChoice::Native : KernelChoice::Portable;
  objectOptions.activations = activationsOf(cl);
  const std::string &name = objectOptions.name;
  const std::string bytes = emitObject(std::move(program), target, objectOptions, &times);
  if (out == "-") {
    std::fwrite(bytes.data(), 1, bytes.size(), stdout);
  } else if (output == ObjectOutput::Object) {
    PendingOutput object(out + ".o", PendingOutput::Kind::File), header(out + ".h", PendingOutput::Kind::File);
    object.write(bytes);
    header.write(emitHeader(name));
    header.commit();
    object.commit();
  } else {
    PendingOutput text(out, PendingOutput::Kind::File);
    text.write(bytes);
    text.commit();
  }
  if (cl.has("stats")) {
    std::printf("target: %s (cpu %s, features %s)\n", target.triple.c_str(), target.cpu.c_str(),
                target.features.empty() ? "none" : target.features.c_str());
    printPhaseTimes(times);
  }
}

/// The files --emit KIND writes for -o OUT.
std::vector<std::string> outputsOf(const std::string &emit, const std::string &out) {
  if (out == "-")
    return {};
  if (emit == "cpp")
    return {out + ".cpp", out + ".h"};
  if (emit == "obj")
    return {out + ".o", out + ".h"};
  return {out};
}

void emitNeedle(const CommandLine &cl, const std::string &input, const std::string &out,
                const PrepareOptions &options) {
  if (cl.has("passes"))
    fail("--passes: only meaningful with --emit mlir");
  if (out == "-")
    fail("-o -: --emit needle writes a binary file; give it a path");
  bool transformed = false;
  Model model = prepareModel(input, options, &transformed);
  applyMaxSeq(cl, model, transformed);
  const std::vector<uint8_t> bytes = serializeNeedle(model);
  PendingOutput output(out, PendingOutput::Kind::File);
  output.write(bytes);
  output.commit();
  if (cl.has("stats")) {
    printStats(model, bytes.size());
    if (model.tensor("embed.weight").storage == Tensor::Storage::CQ) {
      mlir::MLIRContext context;
      loadNeedleDialects(context);
      mlir::OwningOpRef<mlir::ModuleOp> module = importModel(context, model, out);
      printPipelineFigures(runPipeline(*module, std::nullopt, true));
    }
  }
}

int run(int argc, char **argv) {
  CommandLine cl(
      "needlec", "needlec MODEL [options] -o OUT",
      {{"layers", "N", "ladder depth to compile (default: all blocks)"},
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
       {"emit", "KIND", "obj (default: OUT.o + OUT.h), cpp (OUT.cpp + OUT.h), llvm, asm, needle or mlir (OUT)"},
       {"passes", "P", "with --emit mlir: default (the pipeline) or none (the IR straight after import)"},
       {"name", "NAME", "C symbol prefix (default needle_model)"},
       {"lora", "FILE", "merge this LoRA adapter (.safetensors) before quantization"},
       {"max-seq", "N", "lower max_seq_len to shrink the session arena"},
       {"codebook", "KIND", "needle (default) or lloyd-max, for quantizing float weights"},
       {"stats", "", "print figures about the compiled model (sizes, rotations per token)"},
       {"o", "OUT", "output path (- for stdout with --emit mlir)"}});
  cl.passThrough("mlir-", "MLIR's pass-manager and printing flags: --mlir-timing, --mlir-print-ir-after-all, "
                          "--mlir-print-ir-after=<pass>, --mlir-print-debuginfo, ...");
  if (!cl.parse(argc, argv))
    return 0;
  parseMlirFlags(cl.passedThrough());
  const std::string input = cl.onlyPositional("MODEL");
  const std::string emit = cl.value("emit").value_or("obj");
  static const std::set<std::string> kinds = {"obj", "cpp", "llvm", "asm", "needle", "mlir"};
  if (!kinds.count(emit))
    fail("--emit: \"{}\" is not obj, cpp, llvm, asm, needle or mlir", emit);
  const bool object = emit == "obj" || emit == "llvm" || emit == "asm";
  if (auto kernels = cl.value("kernels"); kernels && *kernels != "native" && *kernels != "portable")
    fail("--kernels: \"{}\" is not native or portable", *kernels);
  for (const char *flag : {"mcpu", "mattr", "kernels"})
    if (cl.has(flag) && !object)
      fail("--{}: only meaningful with --emit obj, llvm or asm", flag);
  if (auto activations = cl.value("activations"); activations && *activations != "float" && *activations != "int8")
    fail("--activations: \"{}\" is not float or int8", *activations);
  if (cl.has("activations") && !object && emit != "cpp")
    fail("--activations: only meaningful with --emit obj, cpp, llvm or asm");
  if (cl.has("batch") && !object && emit != "cpp")
    fail("--batch: only meaningful with --emit obj, cpp, llvm or asm");
  // A bad --target fails first, whatever --emit; only the object backend needs its architecture.
  std::optional<TargetSpec> target;
  if (object)
    target = resolveTarget(cl.value("target").value_or("host"), cl.value("mcpu").value_or(""),
                           cl.value("mattr").value_or(""));
  else
    checkTargetName(cl.value("target").value_or("host"));
  checkName(cl.value("name").value_or("needle_model"));
  const std::string out = cl.value("o").value_or("");
  if (out.empty())
    fail("-o: missing; say where to write the output");
  for (const std::string &written : outputsOf(emit, out)) {
    checkNotInput(written, input, "-o");
    if (auto lora = cl.value("lora"))
      checkNotInput(written, *lora, "-o");
  }

  PrepareOptions options;
  options.layers = cl.integer("layers");
  if (auto lora = cl.value("lora"))
    options.lora = *lora;
  if (auto codebook = cl.value("codebook"))
    options.codebook = cq::parseCodebookKind(*codebook);
  if (emit == "mlir")
    emitMlir(cl, input, out, options);
  else if (emit == "cpp")
    emitCpp(cl, input, out, options);
  else if (object)
    emitObjectFile(cl, input, out, options, emit, *target);
  else
    emitNeedle(cl, input, out, options);
  return 0;
}

} // namespace

int main(int argc, char **argv) { return runTool("needlec", run, argc, argv); }
