#include "Pipeline/Compile.h"

#include "Calls/Prompt.h"
#include "Calls/Schema.h"
#include "Calls/TokenAutomaton.h"
#include "Import/Importer.h"
#include "Model/Ladder.h"
#include "Model/ModelTokenizer.h"
#include "Model/NeedleFile.h"
#include "Model/Slice.h"
#include "Needle/IR/NeedleDialect.h"
#include "Needle/Transforms/Passes.h"
#include "Pipeline/Pipeline.h"
#include "Reference/Numerics.h"
#include "Support/Error.h"
#include "Support/Files.h"
#include "Support/Json.h"
#include "Support/RoundUp.h"
#include "codegen/Cpp/CppEmitter.h"
#include "codegen/Lower/Lower.h"
#include "codegen/Transforms/SessionNeeds.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassInstrumentation.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/Timing.h"

#include <algorithm>
#include <chrono>
#include <utility>

namespace fs = std::filesystem;

namespace needle {

namespace {

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

/// Runs the pipeline (or, without `optimize`, only the slicing), with MLIR's command-line
/// pass-manager and timing options applied where `options` says.
PipelineFigures runPipeline(mlir::ModuleOp module, std::optional<int64_t> depth, bool optimize,
                            const CompileOptions &options) {
  PipelineFigures figures;
  mlir::PassManager pm(module.getContext());
  if (options.mlirCommandLine) {
    if (failed(mlir::applyPassManagerCLOptions(pm)))
      fail("--mlir-*: the pass manager options are inconsistent");
    mlir::applyDefaultTimingPassManagerCLOptions(pm);
  }
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

std::string pipelineStats(const PipelineFigures &f) {
  return fmt::format("online rotations per token: {} before folding, {} after\n"
                     "dequantized weight matrices: {}\n",
                     f.rotationsBefore, f.rotationsAfter, f.dequantizedWeights);
}

std::string modelStats(const Model &model, uint64_t fileBytes) {
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
  // The tokenizer is content the file carries, not the container's overhead.
  const uint64_t tokenizer = model.tokenizerJson.size() + model.tokenizerConfigJson.size();
  return fmt::format("layers: {}\nparameters: {}\ntensors: {} ({} CQ)\ncq bits per weight: {:.4f}\n"
                     "payload bytes: {}\ntokenizer bytes: {}\nfile bytes: {}\ncontainer overhead: {:.4f}%\n",
                     model.config.numLayers, model.parameterCount(), model.tensors.size(), cqTensors,
                     cqWeights ? 8.0 * cqBytes / cqWeights : 0.0, payload, tokenizer, fileBytes,
                     100.0 * (fileBytes - payload - tokenizer) / std::max<uint64_t>(payload, 1));
}

std::string phaseStats(const std::vector<PhaseTime> &times) {
  std::string text;
  double total = 0;
  for (const PhaseTime &time : times) {
    text += fmt::format("time: {:<40} {:8.3f} s\n", time.phase, time.seconds);
    total += time.seconds;
  }
  return text + fmt::format("time: {:<40} {:8.3f} s\n", "total", total);
}

/// The prepared model with --max-seq applied; *transformed as prepareModel sets it, and set when
/// --max-seq changed the model too.
Model loadModel(const CompileOptions &options, const PrepareOptions &prepare, bool &transformed) {
  Model model = prepareModel(options.input, prepare, &transformed);
  if (options.maxSeq) {
    if (*options.maxSeq < 1 || *options.maxSeq > model.config.maxSeqLen)
      fail("--max-seq: {} is outside 1..{} (the model's max_seq_len)", *options.maxSeq, model.config.maxSeqLen);
    transformed = transformed || *options.maxSeq != model.config.maxSeqLen;
    model.config.maxSeqLen = *options.maxSeq;
  }
  if (options.maxRollback < 0 || options.maxRollback > model.config.maxSeqLen)
    fail("--max-rollback: {} is outside 0..{} (the session's max_seq_len)", options.maxRollback,
         model.config.maxSeqLen);
  return model;
}

/// The model imported for the pipeline, with the session limits --max-rollback sets.
mlir::OwningOpRef<mlir::ModuleOp> importForSession(mlir::MLIRContext &context, const Model &model,
                                                   const std::string &weights, const CompileOptions &options) {
  mlir::OwningOpRef<mlir::ModuleOp> module = importModel(context, model, weights);
  if (options.maxRollback)
    (*module)->setAttr(ir::kMaxRollbackAttr,
                       mlir::IntegerAttr::get(mlir::IntegerType::get(&context, 64), options.maxRollback));
  return module;
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

std::string bytesOf(const std::vector<uint8_t> &bytes) { return std::string(bytes.begin(), bytes.end()); }

/// The IR after the pipeline (or straight after import), and the weights it names when they are
/// not the input's.
CompileResult emitMlir(const CompileOptions &options) {
  PrepareOptions prepare = options.prepare;
  prepare.layers.reset(); // the IR is imported whole and sliced by needle-slice-depth
  bool transformed = false;
  Model model = loadModel(options, prepare, transformed);
  if (options.prepare.layers)
    validateDepth(*options.prepare.layers, model.config.numLayers, options.input.string());
  const WeightsPlan weights = planWeights(options.input, options.output, transformed);

  mlir::MLIRContext context;
  loadNeedleDialects(context);
  mlir::OwningOpRef<mlir::ModuleOp> module;
  PipelineFigures figures;
  if (!options.prepare.shallowest) {
    module = importForSession(context, model, weights.reference, options);
    figures = runPipeline(*module, options.prepare.layers, options.passes, options);
  } else {
    // Every rung's module, named by its depth, in one: each as the object of the range plans it.
    module = mlir::ModuleOp::create(mlir::UnknownLoc::get(&context));
    const int64_t deepest = options.prepare.layers.value_or(model.config.numLayers);
    for (int64_t depth = *options.prepare.shallowest; depth <= deepest; ++depth) {
      mlir::OwningOpRef<mlir::ModuleOp> rung = importForSession(context, model, weights.reference, options);
      if (*options.prepare.shallowest < deepest)
        (*rung)->setAttr(kTokenLogAttr, mlir::UnitAttr::get(&context));
      figures = runPipeline(*rung, depth, options.passes, options);
      rung->setSymName(fmt::format("depth_{}", depth));
      module->getBody()->push_back(rung.release());
    }
  }
  std::string text;
  llvm::raw_string_ostream stream(text);
  module->print(stream, mlir::OpPrintingFlags()); // honours --mlir-print-debuginfo
  stream << "\n";                                 // as needle-opt prints it, so the two compare as text
  stream.flush();

  CompileResult result;
  if (weights.write)
    result.files.push_back(
        {weights.write->string(), bytesOf(serializeNeedle(model)), "the weights written beside the IR"});
  result.files.push_back({options.output, std::move(text)});
  result.stats = pipelineStats(figures);
  return result;
}

/// What one automaton over the model's tokens is built from: the calls of --tools or the records
/// of --schema (docs/tool-calls.md).
struct AutomatonSource {
  std::string flag;                 // "--tools", "--schema"
  std::string noun;                 // "call", "record"
  std::string file;                 // the tools or schema file, which errors name
  calls::LangPtr language;          // its calls or records
  std::filesystem::path promptFile; // --prompt, --schema-prompt (empty: defaultPrompt)
  std::string_view defaultPrompt;   // calls::kDefaultPrompt, calls::kDefaultRecordPrompt
  std::string_view placeholder;     // {{tools}}, {{schema}}
  std::string json;                 // what the placeholder stands for, compact
};

/// The file `path` as JSON (errors name it).
json::Value readJson(const std::filesystem::path &path) {
  const std::vector<uint8_t> text = readFile(path);
  return json::parse(std::string_view(reinterpret_cast<const char *>(text.data()), text.size()), path.string());
}

/// The token that ends a call or a record: --call-end's, else the tokenizer's EOS (-1: none).
int32_t callEndToken(const CompileOptions &options, const CompiledTokenizer &tokenizer) {
  if (options.callEnd == "none")
    return -1;
  if (options.callEnd.empty())
    return tokenizer.eos;
  const auto found = tokenizer.addedIds.find(options.callEnd);
  if (found == tokenizer.addedIds.end())
    fail("--call-end: \"{}\" is not an added token of the model's tokenizer", options.callEnd);
  return found->second;
}

/// The automaton of `source` over the model's tokens, with its prompt (docs/tool-calls.md).
calls::CompiledCalls compileAutomaton(const CompileOptions &options, const CompiledTokenizer &tokenizer,
                                      int64_t maxSeqLen, const AutomatonSource &source, const calls::CallRoutes &routes,
                                      std::string &stats) {
  const calls::ByteAutomaton bytes = calls::buildByteAutomaton(source.language, source.file);
  std::string prompt(source.defaultPrompt);
  if (!source.promptFile.empty()) {
    const std::vector<uint8_t> file = readFile(source.promptFile);
    prompt.assign(file.begin(), file.end());
  }
  const std::string promptName = source.promptFile.empty() ? "the default prompt" : source.promptFile.string();
  const calls::CallPrompt callPrompt = calls::buildPrompt(prompt, source.placeholder, source.json, tokenizer.image,
                                                          options.maxQuery, uint32_t(maxSeqLen), promptName);
  calls::CompiledCalls compiled = calls::buildCallAutomaton(
      bytes, tokenizer.callTokens, callEndToken(options, tokenizer), callPrompt, routes, source.file);
  // Every token of a call or record but the last is fed: an empty query must leave room for the shortest.
  const uint64_t needed = callPrompt.prefix.size() + callPrompt.suffix.size() + compiled.shortestCall - 1;
  if (needed > uint64_t(maxSeqLen))
    fail("{}: the prompt with the {} in it takes {} tokens and the shortest {} {} more, past the model's "
         "max_seq_len {}",
         source.promptFile.empty() ? source.flag : source.promptFile.string(),
         source.placeholder.substr(2, source.placeholder.size() - 4),
         callPrompt.prefix.size() + callPrompt.suffix.size(), source.noun, compiled.shortestCall, maxSeqLen);
  const calls::CallTablesFigures &f = compiled.figures;
  stats += fmt::format("{} automaton: {} byte states, {} token states, {} bitsets in {} groups, {} edges, {} bytes "
                       "of tables\n",
                       source.noun, bytes.states, f.states, f.bitsets, f.groups, f.edges, f.bytes);
  stats += fmt::format("{} prompt: {} ids before the query, {} after; {} bytes of scratch in the arena\n", source.noun,
                       callPrompt.prefix.size(), callPrompt.suffix.size(), compiled.scratchBytes);
  return compiled;
}

/// The tools of --tools, read before the rungs are compiled: each rung embeds them for
/// NAME_call_top_k (docs/tool-calls.md, "Routing among many tools").
struct ToolsFile {
  std::string file, text;
  std::vector<calls::Tool> tools;
  std::vector<std::vector<int32_t>> routingIds; // with --route-tools, each tool's routing text as a query's ids
};

std::optional<ToolsFile> readTools(const CompileOptions &options, const CompiledTokenizer &tokenizer) {
  if (options.tools.empty())
    return std::nullopt;
  if (tokenizer.callTokens.empty())
    fail("--tools: the model has no tokenizer, and calls are written in its tokens: give --tokenizer");
  ToolsFile out;
  out.file = options.tools.string();
  const std::vector<uint8_t> bytes = readFile(options.tools);
  out.text.assign(bytes.begin(), bytes.end());
  out.tools = calls::parseTools(out.text, out.file);
  if (options.routeTools)
    for (const calls::Tool &tool : out.tools)
      out.routingIds.push_back(calls::encodeAsQuery(tokenizer.image, calls::routingText(tool), out.file));
  return out;
}

/// The automaton of the calls of --tools over the model's tokens (docs/tool-calls.md), with what
/// routing among them needs (--route-tools): the tools' embeddings at each rung, `routes.embeddings`.
calls::CompiledCalls compileToolCalls(const CompileOptions &options, const CompiledTokenizer &tokenizer,
                                      const ToolsFile &tools, calls::CallRoutes routes, int64_t maxSeqLen,
                                      std::string &stats) {
  stats += fmt::format("tool calls: {} tools\n", tools.tools.size());
  if (options.routeTools) {
    for (const calls::Tool &tool : tools.tools)
      routes.heads.push_back(calls::callHead(tool));
    stats += fmt::format("tool routing: {} bytes of embeddings\n", routes.embeddings.size() * sizeof(float));
  } else {
    routes = {};
  }
  return compileAutomaton(options, tokenizer, maxSeqLen,
                          {"--tools", "call", tools.file, calls::callLanguage(tools.tools, tools.file), options.prompt,
                           calls::kDefaultPrompt, "{{tools}}", json::serialize(json::parse(tools.text, tools.file))},
                          routes, stats);
}

/// The automaton of the records of --schema over the model's tokens (docs/tool-calls.md).
calls::CompiledCalls compileRecords(const CompileOptions &options, const CompiledTokenizer &tokenizer,
                                    int64_t maxSeqLen, std::string &stats) {
  const std::string file = options.schema.string();
  if (tokenizer.callTokens.empty())
    fail("--schema: the model has no tokenizer, and records are written in its tokens: give --tokenizer");
  const json::Value schema = readJson(options.schema);
  return compileAutomaton(options, tokenizer, maxSeqLen,
                          {"--schema", "record", file, calls::recordLanguage(schema, file), options.schemaPrompt,
                           calls::kDefaultRecordPrompt, "{{schema}}", json::serialize(schema)},
                          {}, stats);
}

/// A session names the prompt prefix a request fed by a 32-bit hash of its ids
/// (SessionHeader::request_prefix): when the calls' and the records' prefixes differ yet their
/// hashes meet, the records' key moves, so that neither request resumes the other's prefix.
void separatePrefixKeys(const std::vector<uint8_t> &calls, std::vector<uint8_t> &records) {
  if (calls.empty() || records.empty())
    return;
  const needle_rt::CallTables a = needle_rt::call_tables(calls.data()), b = needle_rt::call_tables(records.data());
  const uint32_t count = a.header->prefix_count;
  const bool same = count == b.header->prefix_count && std::equal(a.prefix_ids, a.prefix_ids + count, b.prefix_ids);
  if (same || a.header->prefix_key != b.header->prefix_key)
    return;
  auto *header = reinterpret_cast<needle_rt::CallImage *>(records.data());
  header->prefix_key = header->prefix_key + 1 ? header->prefix_key + 1 : 1; // never 0, which names none
}

/// Seconds spent in each phase of compiling the rungs, summed over them.
struct RungPhases {
  double probe = 0, embed = 0, pipeline = 0, lower = 0;
};

/// The model at `depth` through the pipeline, lowered as one more rung of `program`; with `log`,
/// its arena keeps the token log NAME_reopen_depth reads. With `tools`, their embeddings at this
/// depth are appended to `embeddings`.
void compileRung(const CompileOptions &options, const Model &model, int64_t depth, bool log, const std::string &backend,
                 const ToolsFile *tools, KernelProgram &program, WeightStore &store, std::vector<float> &embeddings,
                 PipelineFigures &figures, RungPhases &phases) {
  auto start = std::chrono::steady_clock::now();
  auto add = [&](double &phase) {
    const auto now = std::chrono::steady_clock::now();
    phase += std::chrono::duration<double>(now - start).count();
    start = now;
  };
  const bool whole = depth == model.config.numLayers;
  const Model sliced = whole ? Model() : sliceModel(model, depth, options.input.string());
  const Model &rung = whole ? model : sliced;
  { // the reference's float weights, freed before the pipeline
    const reference::Weights weights(rung, depth);
    reference::checkProbeFinite(weights, options.input.string());
    add(phases.probe);
    if (tools) {
      for (const reference::Vec &embedding : reference::embedEach(weights, tools->routingIds))
        embeddings.insert(embeddings.end(), embedding.begin(), embedding.end());
      add(phases.embed);
    }
  }
  mlir::MLIRContext context;
  loadNeedleDialects(context);
  mlir::OwningOpRef<mlir::ModuleOp> module = importForSession(context, rung, options.input.string(), options);
  if (log)
    (*module)->setAttr(kTokenLogAttr, mlir::UnitAttr::get(&context));
  figures = runPipeline(*module, std::nullopt, true, options);
  add(phases.pipeline);
  lowerRung(*module, rung, backend, options.batch, program, store);
  add(phases.lower);
}

/// The model through the pipeline, lowered to kernel calls: what both code printers print. One
/// rung for each depth from --layers' shallowest to the model's (docs/c-interface.md).
KernelProgram compileProgram(const CompileOptions &options, const std::string &backend, std::vector<PhaseTime> &times,
                             std::string &stats) {
  auto start = std::chrono::steady_clock::now();
  auto done = [&](const char *phase) {
    const auto now = std::chrono::steady_clock::now();
    times.push_back({phase, std::chrono::duration<double>(now - start).count()});
    start = now;
  };
  bool transformed = false;
  Model model = loadModel(options, options.prepare, transformed);
  done("load and prepare the model");
  // The tokenizer and the stop ids first: their errors need no compiled model.
  CompiledTokenizer tokenizer = compileTokenizer(model, options.tokenizerTables);
  std::vector<int32_t> stopIds = stopTokens(options.stop, tokenizer, model.config.vocabSize);
  if (!tokenizer.image.empty())
    done("compile the tokenizer");
  const std::optional<ToolsFile> tools = readTools(options, tokenizer);
  const int64_t deepest = model.config.numLayers, shallowest = options.prepare.shallowest.value_or(deepest);
  KernelProgram program;
  program.rungs.clear();
  WeightStore store;
  PipelineFigures figures;
  RungPhases phases;
  calls::CallRoutes routes = {
      {}, uint32_t(model.config.embeddingDim), uint32_t(shallowest), uint32_t(deepest - shallowest + 1), {}};
  for (int64_t depth = shallowest; depth <= deepest; ++depth)
    compileRung(options, model, depth, shallowest < deepest, backend, tools && options.routeTools ? &*tools : nullptr,
                program, store, routes.embeddings, figures, phases);
  times.push_back({"probe the model for overflow", phases.probe});
  if (tools && options.routeTools)
    times.push_back({"embed the tools for routing", phases.embed});
  times.push_back({"import and pass pipeline", phases.pipeline});
  times.push_back({"lower to kernel calls", phases.lower});
  start = std::chrono::steady_clock::now();
  if (shallowest < deepest)
    stats +=
        fmt::format("rungs: depths {}..{} sharing {} bytes of weights\n", shallowest, deepest, program.weights.size());
  program.tokenizer = tokenizer.image;
  for (RungProgram &rung : program.rungs) {
    rung.facts.bosId = tokenizer.bos;
    rung.facts.eosId = tokenizer.eos;
    rung.facts.stopIds = stopIds;
  }
  const ModelFacts &facts = program.deepest().facts;
  if (!program.tokenizer.empty())
    stats += fmt::format("tokenizer: {} bytes of tables\n", program.tokenizer.size());
  // NAME_call's and NAME_extract's scratch, at the end of the arena (runtime/calls/session.h): one
  // request at a time, so the larger of the two.
  uint64_t requestScratch = 0;
  if (tools) {
    calls::CompiledCalls compiled =
        compileToolCalls(options, tokenizer, *tools, std::move(routes), facts.maxSeqLen, stats);
    program.calls = std::move(compiled.image);
    program.routesTools = options.routeTools;
    requestScratch = compiled.scratchBytes;
    done("compile the tool-call automaton");
  }
  if (!options.schema.empty()) {
    calls::CompiledCalls compiled = compileRecords(options, tokenizer, facts.maxSeqLen, stats);
    program.records = std::move(compiled.image);
    requestScratch = std::max(requestScratch, compiled.scratchBytes);
    done("compile the record automaton");
  }
  separatePrefixKeys(program.calls, program.records);
  for (RungProgram &rung : program.rungs)
    rung.facts.arenaSize += roundUp(int64_t(requestScratch), rung.facts.arenaAlign);
  stats += pipelineStats(figures);
  stats += fmt::format("session arena: {} bytes (max_seq_len {}, batch {})\n", facts.arenaSize, facts.maxSeqLen,
                       facts.batch);
  return program;
}

/// OUT.cpp + OUT.h: the model printed as standalone C++.
CompileResult emitCpp(const CompileOptions &options) {
  CompileResult result;
  std::vector<PhaseTime> times;
  const KernelProgram program = compileProgram(options, "--emit cpp", times, result.stats);
  const std::string headerName = fs::path(options.output).filename().string() + ".h";
  CppModel cpp = needle::emitCpp(program, options.name, headerName, options.activations);
  result.files.push_back({options.output + ".h", std::move(cpp.header), "the header", true});
  result.files.push_back({options.output + ".cpp", std::move(cpp.source)});
  return result;
}

/// OUT.o + OUT.h (--emit obj), or the LLVM IR (--emit llvm) or assembly (--emit asm) as OUT, for
/// the target.
CompileResult emitObjectFile(const CompileOptions &options) {
  if (!options.target)
    fail("internal: --emit {} without a resolved target", emitKindName(options.emit));
  const TargetSpec &target = *options.target;
  CompileResult result;
  std::vector<PhaseTime> times;
  KernelProgram program =
      compileProgram(options, fmt::format("--emit {}", emitKindName(options.emit)), times, result.stats);
  ObjectOptions objectOptions;
  objectOptions.name = options.name;
  objectOptions.output = options.emit == EmitKind::Object    ? ObjectOutput::Object
                         : options.emit == EmitKind::LlvmIr  ? ObjectOutput::LlvmIr
                         : options.emit == EmitKind::Kernels ? ObjectOutput::KernelList
                         : options.emit == EmitKind::Step    ? ObjectOutput::StepMlir
                                                             : ObjectOutput::Assembly;
  objectOptions.kernels = options.kernels;
  objectOptions.activations = options.activations;
  std::string header = emitHeader(options.name, program);
  std::string bytes = emitObject(std::move(program), target, objectOptions, &times);
  if (options.emit == EmitKind::Object) {
    result.files.push_back({options.output + ".h", std::move(header), "the header", true});
    result.files.push_back({options.output + ".o", std::move(bytes)});
  } else {
    result.files.push_back({options.output, std::move(bytes)});
  }
  result.stats += fmt::format("target: {} (cpu {}, features {})\n", target.triple, target.cpu,
                              target.features.empty() ? "none" : target.features);
  result.stats += phaseStats(times);
  return result;
}

/// The prepared model as a .needle file; its stats, and the pipeline's figures for a CQ model.
CompileResult emitNeedle(const CompileOptions &options) {
  bool transformed = false;
  Model model = loadModel(options, options.prepare, transformed);
  CompileResult result;
  result.files.push_back({options.output, bytesOf(serializeNeedle(model))});
  result.stats = modelStats(model, result.files.back().bytes.size());
  if (model.tensor("embed.weight").storage == Tensor::Storage::CQ) {
    mlir::MLIRContext context;
    loadNeedleDialects(context);
    mlir::OwningOpRef<mlir::ModuleOp> module = importModel(context, model, options.output);
    result.stats += pipelineStats(runPipeline(*module, std::nullopt, true, options));
  }
  return result;
}

} // namespace

namespace {

/// Every --emit kind, by its name on the command line.
constexpr std::pair<const char *, EmitKind> kEmitKinds[] = {
    {"obj", EmitKind::Object}, {"llvm", EmitKind::LlvmIr}, {"asm", EmitKind::Assembly},  {"kernels", EmitKind::Kernels},
    {"step", EmitKind::Step},  {"cpp", EmitKind::Cpp},     {"needle", EmitKind::Needle}, {"mlir", EmitKind::Mlir}};

} // namespace

std::optional<EmitKind> emitKindNamed(std::string_view name) {
  for (const auto &[spelling, kind] : kEmitKinds)
    if (name == spelling)
      return kind;
  return std::nullopt;
}

const char *emitKindName(EmitKind kind) {
  for (const auto &[spelling, known] : kEmitKinds)
    if (kind == known)
      return spelling;
  return "";
}

bool isObjectKind(EmitKind kind) {
  return kind == EmitKind::Object || kind == EmitKind::LlvmIr || kind == EmitKind::Assembly ||
         kind == EmitKind::Kernels || kind == EmitKind::Step;
}

CompileResult compile(const CompileOptions &options) {
  switch (options.emit) {
  case EmitKind::Mlir:
    return emitMlir(options);
  case EmitKind::Cpp:
    return emitCpp(options);
  case EmitKind::Needle:
    return emitNeedle(options);
  case EmitKind::Object:
  case EmitKind::LlvmIr:
  case EmitKind::Assembly:
  case EmitKind::Kernels:
  case EmitKind::Step:
    return emitObjectFile(options);
  }
  fail("internal: an --emit kind compile() does not know");
}

} // namespace needle
