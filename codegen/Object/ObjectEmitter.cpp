#include "codegen/Object/ObjectEmitter.h"
#include "codegen/Lower/AddressSpace.h"
#include "codegen/Lower/Fingerprint.h"
#include "codegen/Object/HalideKernels.h"
#include "codegen/Object/KernelList.h"
#include "codegen/Object/RuntimeBitcode.h"
#include "codegen/Object/StepBuilder.h"
#include "codegen/Object/TargetChecks.h"
#include "codegen/Select/Select.h"

#include "Support/Error.h"
#include "Support/Version.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Linker/Linker.h"
#include "llvm/MC/MCAsmInfo.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Transforms/IPO/GlobalDCE.h"
#include "llvm/Transforms/IPO/Internalize.h"

#include <chrono>
#include <mutex>

namespace needle {

namespace {

namespace LLVM = mlir::LLVM;
using Kind = KernelArg::Kind;

constexpr const char *kInterfaceFunctions[] = {"info",       "arena_size",   "arena_align", "open",
                                               "restore",    "reset",        "feed",        "logits",
                                               "confidence", "embedding",    "position",    "sample_scratch_size",
                                               "sample",     "set_parallel", "truncate",    "arena_size_depth",
                                               "open_depth", "depth",        "reopen_depth"};
// A model with a tokenizer exports these too.
constexpr const char *kTextFunctions[] = {"encode_scratch_size", "encode",      "token_bytes", "token_id",
                                          "decoder_init",        "decode_next", "decode_flush"};
// A model with tools exports these too.
constexpr const char *kCallFunctions[] = {"call", "call_begin", "call_mask", "call_advance", "call_finished"};
// A model with tools and their embeddings (--route-tools) exports these too.
constexpr const char *kRouteFunctions[] = {"call_top_k", "call_rank"};
// A model with a schema (--schema) exports these too.
constexpr const char *kRecordFunctions[] = {"extract", "extract_begin", "extract_mask", "extract_advance",
                                            "extract_finished"};
// A model with tools or a schema exports this too.
constexpr const char *kRequestFunctions[] = {"call_probability"};

/// Times the phases of one emission.
class PhaseClock {
public:
  explicit PhaseClock(std::vector<PhaseTime> *times) : times_(times) {}
  void done(const char *phase) {
    const auto now = std::chrono::steady_clock::now();
    if (times_)
      times_->push_back({phase, std::chrono::duration<double>(now - start_).count()});
    start_ = now;
  }

private:
  std::vector<PhaseTime> *times_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

/// MSVC's convention puts each floating-point and vector constant in a select-any COMDAT named
/// after its value (`__real@3f800000`, `__xmm@...`), a global symbol, so a model object would
/// export a hundred of them beside its functions. LLVM follows that convention whenever the
/// target's MCAsmInfo says hasCOFFComdatConstants, with no option to turn it off; this clears the
/// flag (through a member pointer, the legal way to reach a protected member), so the constants go
/// to .rdata under local labels, as on MinGW, ELF and Mach-O. Linking is unaffected: MSVC's own
/// objects still carry theirs, and ours no longer meet them.
void keepConstantsLocal(llvm::TargetMachine &machine) {
  struct Access : llvm::MCAsmInfo {
    static auto comdatConstants() { return &Access::HasCOFFComdatConstants; }
  };
  const_cast<llvm::MCAsmInfo &>(*machine.getMCAsmInfo()).*Access::comdatConstants() = false;
}

std::unique_ptr<llvm::TargetMachine> createTargetMachine(const TargetSpec &target) {
  static std::once_flag initialized;
  std::call_once(initialized, [] {
    llvm::InitializeAllTargetInfos();
    llvm::InitializeAllTargets();
    llvm::InitializeAllTargetMCs();
    llvm::InitializeAllAsmPrinters();
  });
  std::string error;
  const llvm::Target *backend = llvm::TargetRegistry::lookupTarget(target.triple, error);
  if (!backend)
    fail("--target {}: {}", target.name, error);
  checkTarget(*backend, target);
  llvm::TargetOptions options;
  options.MCOptions.ABIName = target.abi;
  options.FunctionSections = true; // a linker's --gc-sections can drop what a product never calls
  options.DataSections = true;
  const llvm::Triple triple(target.triple);
  std::optional<llvm::Reloc::Model> reloc;
  if (triple.isOSBinFormatELF() && triple.getOS() != llvm::Triple::UnknownOS)
    reloc = llvm::Reloc::PIC_; // links into PIE executables and shared libraries alike
  std::unique_ptr<llvm::TargetMachine> machine(backend->createTargetMachine(
      target.triple, target.cpu, target.features, options, reloc, std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  if (!machine)
    fail("--target {}: LLVM cannot create a target machine for {} (cpu \"{}\", features \"{}\")", target.name,
         target.triple, target.cpu, target.features);
  keepConstantsLocal(*machine);
  return machine;
}

/// The runtime's bitcode for the target's architecture, retargeted to its triple: clang's CPU
/// and feature attributes go, so --mcpu/--mattr decide.
std::unique_ptr<llvm::Module> loadRuntime(llvm::LLVMContext &context, const TargetSpec &target,
                                          const llvm::TargetMachine &machine) {
  const std::string_view bitcode = runtimeBitcode(target.arch);
  auto parsed = llvm::parseBitcodeFile(
      llvm::MemoryBufferRef(llvm::StringRef(bitcode.data(), bitcode.size()), "needle_runtime"), context);
  if (!parsed)
    fail("internal: the {} runtime bitcode does not load: {}", runtimeArchName(target.arch),
         llvm::toString(parsed.takeError()));
  std::unique_ptr<llvm::Module> runtime = std::move(*parsed);
  runtime->setTargetTriple(target.triple);
  runtime->setDataLayout(machine.createDataLayout());
  if (!target.abi.empty())
    runtime->setModuleFlag(llvm::Module::Error, "target-abi", llvm::MDString::get(context, target.abi));
  // Bare-metal Arm (arm-none-eabi) takes the smallest type that holds an enum, GCC's default
  // there. The object's interface has no enum type, so this only declares it in the build
  // attributes, and arm-none-eabi-ld does not warn against newlib's objects.
  if (target.arch == RuntimeArch::Arm && llvm::Triple(target.triple).getOS() == llvm::Triple::UnknownOS)
    runtime->setModuleFlag(llvm::Module::Error, "min_enum_size",
                           llvm::ConstantInt::get(llvm::Type::getInt32Ty(context), 1));
  if (llvm::NamedMDNode *ident = runtime->getNamedMetadata("llvm.ident"))
    runtime->eraseNamedMetadata(ident);
  return runtime;
}

template <typename T> llvm::Constant *constantArray(llvm::LLVMContext &context, const std::vector<T> &values) {
  return llvm::ConstantDataArray::get(context, llvm::ArrayRef<T>(values));
}

/// A read-only array of token or block ids, internal to the object: what NAME_info points at.
llvm::GlobalVariable *internalIdArray(llvm::Module &module, const std::vector<int32_t> &ids, const char *name) {
  llvm::Constant *init = constantArray(module.getContext(), std::vector<uint32_t>(ids.begin(), ids.end()));
  return new llvm::GlobalVariable(module, init->getType(), true, llvm::GlobalValue::InternalLinkage, init, name);
}

/// Replaces the runtime's declaration of `global` (an array of unknown size, or bytes) by a
/// definition of the same name holding `value`.
void replaceDeclaration(llvm::Module &module, const std::string &global, llvm::Constant *value, unsigned align) {
  llvm::GlobalVariable *declared = module.getNamedGlobal(global);
  if (!declared)
    fail("internal: the runtime declares no {}", global);
  auto *defined = new llvm::GlobalVariable(module, value->getType(), true, llvm::GlobalValue::ExternalLinkage, value);
  defined->setAlignment(llvm::Align(align));
  defined->takeName(declared);
  declared->replaceAllUsesWith(defined);
  declared->eraseFromParent();
}

/// The runtime's arrays of the rungs (needle_object.cpp), by depth: each one's facts, step and
/// heads (the functions StepBuilder built).
void defineRungs(llvm::Module &module, const KernelProgram &program) {
  llvm::LLVMContext &context = module.getContext();
  auto *factsArray = llvm::dyn_cast<llvm::ArrayType>(module.getNamedGlobal("needle_facts")->getValueType());
  auto *factsType = factsArray ? llvm::dyn_cast<llvm::StructType>(factsArray->getElementType()) : nullptr;
  if (!factsType || factsType->getNumElements() != 15)
    fail("internal: the runtime's needle_rt::ModelFacts is not the 15 fields the object printer fills");
  auto i64 = [&](int64_t value) { return llvm::ConstantInt::get(llvm::Type::getInt64Ty(context), value); };
  auto function = [&](const std::string &name) -> llvm::Constant * {
    llvm::Function *defined = module.getFunction(name);
    if (!defined)
      fail("internal: the object has no {}", name);
    return defined;
  };
  std::vector<llvm::Constant *> facts, steps, confidenceHeads, embeddingHeads;
  for (const RungProgram &rung : program.rungs) {
    const ModelFacts &f = rung.facts;
    llvm::Constant *poolsInit = constantArray(context, std::vector<uint64_t>(f.pools.begin(), f.pools.end()));
    auto *pools = new llvm::GlobalVariable(module, poolsInit->getType(), true, llvm::GlobalValue::InternalLinkage,
                                           poolsInit, fmt::format("needle_pools_{}", f.numLayers));
    pools->setAlignment(llvm::Align(8));
    facts.push_back(llvm::ConstantStruct::get(
        factsType, {i64(f.arenaSize), i64(f.arenaAlign), i64(f.outputsEnd), i64(f.maxSeqLen), i64(f.vocabSize),
                    i64(f.embeddingDim), i64(f.logits), i64(f.batch),
                    llvm::ConstantFP::get(llvm::Type::getFloatTy(context), static_cast<double>(f.confidenceBias)),
                    llvm::ConstantInt::get(llvm::Type::getInt64Ty(context), f.fingerprint), i64(f.maxRollback),
                    i64(int64_t(f.pools.size() / 2)), pools, i64(f.numLayers), i64(f.tokenLog)}));
    steps.push_back(function(fmt::format("needle_step_{}", f.numLayers)));
    confidenceHeads.push_back(function(fmt::format("needle_confidence_head_{}", f.numLayers)));
    embeddingHeads.push_back(function(fmt::format("needle_embedding_head_{}", f.numLayers)));
  }
  auto array = [&](llvm::Type *element, const std::vector<llvm::Constant *> &values) {
    return llvm::ConstantArray::get(llvm::ArrayType::get(element, values.size()), values);
  };
  llvm::Type *pointer = llvm::PointerType::get(context, 0);
  replaceDeclaration(module, "needle_facts", array(factsType, facts), 8);
  replaceDeclaration(module, "needle_steps", array(pointer, steps), 8);
  replaceDeclaration(module, "needle_confidence_heads", array(pointer, confidenceHeads), 8);
  replaceDeclaration(module, "needle_embedding_heads", array(pointer, embeddingHeads), 8);
}

/// Gives the data @step declared, the runtime's arrays of the rungs and needle_info their values.
void defineData(llvm::Module &module, const KernelProgram &program) {
  llvm::LLVMContext &context = module.getContext();
  auto define = [&](const std::string &name, llvm::Constant *value, unsigned align) {
    llvm::GlobalVariable *global = module.getNamedGlobal(name);
    if (!global || global->getValueType() != value->getType())
      fail("internal: the object has no declaration of {} of the expected type", name);
    global->setInitializer(value);
    global->setConstant(true);
    global->setAlignment(llvm::Align(align));
  };
  const std::vector<uint8_t> &weights = program.weights;
  define(
      "needle_weights",
      llvm::ConstantDataArray::getRaw(llvm::StringRef(reinterpret_cast<const char *>(weights.data()), weights.size()),
                                      weights.size(), llvm::Type::getInt8Ty(context)),
      kWeightAlign);
  for (const auto &[bits, values] : program.codebooks)
    define(fmt::format("needle_codebook{}", bits), constantArray(context, values), 16);
  for (size_t i = 0; i < program.constants.size(); ++i)
    define(fmt::format("needle_constant{}", i), constantArray(context, program.constants[i]), 16);
  int list = 0;
  forEachCall(program, [&](const KernelCall &call) {
    for (const KernelArg &arg : call.args)
      if (arg.kind == Kind::Int64List)
        define(fmt::format("needle_list{}", list++),
               constantArray(context, std::vector<uint64_t>(arg.ints.begin(), arg.ints.end())), 8);
  });

  auto i32 = [&](int64_t value) { return llvm::ConstantInt::get(llvm::Type::getInt32Ty(context), value); };
  defineRungs(module, program);
  const ModelFacts &f = program.deepest().facts;
  llvm::Constant *sourceBlocks = internalIdArray(module, f.sourceBlocks, "needle_source_blocks");
  llvm::Constant *stopIds = llvm::ConstantPointerNull::get(llvm::PointerType::get(context, 0));
  if (!f.stopIds.empty())
    stopIds = internalIdArray(module, f.stopIds, "needle_stop_ids");
  auto *infoType = llvm::dyn_cast<llvm::StructType>(module.getNamedGlobal("needle_info")->getValueType());
  if (!infoType || infoType->getNumElements() != 13)
    fail("internal: the runtime's ModelInfo is not the 13 fields of NAME_info_t");
  define("needle_info",
         llvm::ConstantStruct::get(infoType, {i32(f.vocabSize), i32(f.dModel), i32(f.numLayers), i32(f.maxSeqLen),
                                              i32(f.embeddingDim), sourceBlocks, i32(f.bosId), i32(f.eosId),
                                              i32(int64_t(f.stopIds.size())), stopIds, i32(f.maxRollback),
                                              i32(program.rungs.front().facts.numLayers), i32(f.numLayers)}),
         8);
}

/// Erases the runtime's needle_abi_ `functions`, for a model that does not define them.
template <size_t N> void eraseFunctions(llvm::Module &module, const char *const (&functions)[N]) {
  for (const char *function : functions)
    if (llvm::Function *abi = module.getFunction(std::string("needle_abi_") + function))
      abi->eraseFromParent();
}

/// Gives the runtime's image `global` (needle_tokenizer, needle_calls, needle_records) its bytes; a
/// model without them (`image` empty) loses the global and the `functions` that read it.
template <size_t N>
void defineImage(llvm::Module &module, const std::string &global, const std::vector<uint8_t> &image,
                 const char *const (&functions)[N]) {
  llvm::GlobalVariable *declared = module.getNamedGlobal(global);
  if (!declared)
    fail("internal: the runtime declares no {}", global);
  if (image.empty()) {
    eraseFunctions(module, functions);
    declared->removeDeadConstantUsers(); // the addresses those functions' loads had folded in
    if (!declared->use_empty())
      fail("internal: {} is used beyond the functions that read it", global);
    declared->eraseFromParent();
    return;
  }
  replaceDeclaration(
      module, global,
      llvm::ConstantDataArray::getRaw(llvm::StringRef(reinterpret_cast<const char *>(image.data()), image.size()),
                                      image.size(), llvm::Type::getInt8Ty(module.getContext())),
      16);
}

/// Binds each needle_k_<kernel> declaration to the function needle_kernel_<kernel> points to.
void bindKernels(llvm::Module &module) {
  std::vector<llvm::Function *> declarations;
  for (llvm::Function &function : module)
    if (function.isDeclaration() && function.getName().starts_with("needle_k_"))
      declarations.push_back(&function);
  for (llvm::Function *declaration : declarations) {
    const std::string name = declaration->getName().drop_front(9).str();
    llvm::GlobalVariable *exported = module.getNamedGlobal("needle_kernel_" + name);
    auto *kernel = exported ? llvm::dyn_cast<llvm::Function>(exported->getInitializer()) : nullptr;
    if (!kernel || kernel->getFunctionType() != declaration->getFunctionType())
      fail("internal: kernel {}: @step's call and the runtime's function disagree on its type", name);
    declaration->replaceAllUsesWith(kernel);
    declaration->eraseFromParent();
    // One copy of each kernel, called from @step: inlining every call with its constant shapes
    // would multiply the code (and the compile time) by the number of blocks. Bridges marked
    // always_inline stay so.
    if (!kernel->hasFnAttribute(llvm::Attribute::AlwaysInline))
      kernel->addFnAttr(llvm::Attribute::NoInline);
  }
}

/// The functions of the C interface an object defines (docs/c-interface.md).
std::vector<std::string> interfaceFunctions(const KernelProgram &program) {
  std::vector<std::string> functions;
  auto add = [&](const auto &list) { functions.insert(functions.end(), std::begin(list), std::end(list)); };
  add(kInterfaceFunctions);
  if (!program.tokenizer.empty())
    add(kTextFunctions);
  if (!program.calls.empty())
    add(kCallFunctions);
  if (program.routesTools)
    add(kRouteFunctions);
  if (!program.records.empty())
    add(kRecordFunctions);
  if (!program.calls.empty() || !program.records.empty())
    add(kRequestFunctions);
  return functions;
}

/// needle_abi_X becomes NAME_X; everything else becomes internal.
void exportInterface(llvm::Module &module, const std::string &name, const KernelProgram &program) {
  std::vector<std::string> exported;
  for (const std::string &function : interfaceFunctions(program)) {
    llvm::Function *abi = module.getFunction("needle_abi_" + function);
    if (!abi)
      fail("internal: the runtime defines no needle_abi_{}", function);
    abi->setName(name + "_" + function);
    exported.push_back(name + "_" + function);
  }
  std::sort(exported.begin(), exported.end());
  llvm::internalizeModule(module, [&](const llvm::GlobalValue &value) {
    return std::binary_search(exported.begin(), exported.end(), value.getName().str());
  });
}

/// Every function gets the target's CPU and features, as clang would give them; declarations too,
/// or the C library's functions would keep the bitcode's (Arm's code generator refuses a call
/// from Thumb code to a memcmp declared with -thumb-mode).
void setTargetAttributes(llvm::Module &module, const TargetSpec &target) {
  for (llvm::Function &function : module) {
    function.removeFnAttr("target-cpu");
    function.removeFnAttr("target-features");
    function.removeFnAttr("tune-cpu");
    if (!target.cpu.empty())
      function.addFnAttr("target-cpu", target.cpu);
    if (!target.features.empty())
      function.addFnAttr("target-features", target.features);
  }
}

void optimize(llvm::Module &module, llvm::TargetMachine &machine) {
  llvm::LoopAnalysisManager loops;
  llvm::FunctionAnalysisManager functions;
  llvm::CGSCCAnalysisManager sccs;
  llvm::ModuleAnalysisManager modules;
  llvm::PassBuilder builder(&machine);
  builder.registerModuleAnalyses(modules);
  builder.registerCGSCCAnalyses(sccs);
  builder.registerFunctionAnalyses(functions);
  builder.registerLoopAnalyses(loops);
  builder.crossRegisterProxies(loops, functions, sccs, modules);
  // The runtime's bitcode was simplified when needlec was built (codegen/Object/CMakeLists.txt):
  // what is left per model is what full LTO does after linking, dead code dropped first.
  llvm::ModulePassManager pipeline;
  pipeline.addPass(llvm::GlobalDCEPass());
  pipeline.addPass(builder.buildLTODefaultPipeline(llvm::OptimizationLevel::O3, nullptr));
  pipeline.run(module, modules);
}

std::string codegen(llvm::Module &module, llvm::TargetMachine &machine, ObjectOutput output) {
  llvm::SmallString<0> buffer;
  llvm::raw_svector_ostream stream(buffer);
  if (output == ObjectOutput::LlvmIr) {
    module.print(stream, nullptr);
    return std::string(buffer.str());
  }
  llvm::legacy::PassManager passes;
  const auto kind =
      output == ObjectOutput::Object ? llvm::CodeGenFileType::ObjectFile : llvm::CodeGenFileType::AssemblyFile;
  if (machine.addPassesToEmitFile(passes, stream, nullptr, kind))
    fail("--target {}: LLVM cannot emit {} for it", module.getTargetTriple(),
         output == ObjectOutput::Object ? "an object" : "assembly");
  passes.run(module);
  return std::string(buffer.str());
}

/// The instruction sets of the target's CPU that the runtime has kernels for (codegen/Select);
/// none with --kernels portable.
TargetIsas targetIsas(const TargetSpec &target, const llvm::TargetMachine &machine, KernelChoice kernels) {
  TargetIsas isas;
  if (kernels != KernelChoice::Native)
    return isas;
  const llvm::MCSubtargetInfo &info = *machine.getMCSubtargetInfo();
  isas.avx2 = target.arch == RuntimeArch::X86_64 && info.checkFeatures("+avx2,+fma,+f16c");
  isas.avx512 = isas.avx2 && info.checkFeatures("+avx512f");
  // Ice Lake, Sapphire Rapids, Zen 4; not x86-64-v4, which lacks VBMI and VNNI.
  isas.avx512Vnni = isas.avx512 && info.checkFeatures("+avx512bw,+avx512vbmi,+avx512vnni");
  isas.simd128 = target.arch == RuntimeArch::Wasm32 && info.checkFeatures("+simd128"); // wasm32's default
  isas.neon = target.arch == RuntimeArch::AArch64 && info.checkFeatures("+neon");
  return isas;
}

} // namespace

std::string emitObject(KernelProgram program, const TargetSpec &target, const ObjectOptions &options,
                       std::vector<PhaseTime> *times) {
  PhaseClock clock(times);
  std::unique_ptr<llvm::TargetMachine> machine = createTargetMachine(target);
  // Before any work for the target (Halide's generators run on a stack of their own).
  checkFitsAddressSpace(program, machine->createDataLayout().getPointerSizeInBits(), "--target " + target.name);
  llvm::LLVMContext context;
  const LlvmErrorGuard llvmErrors(context, target);
  std::unique_ptr<llvm::Module> runtime = loadRuntime(context, target, *machine);
  clock.done("load runtime bitcode");
  HalideKernels halide;
  selectKernels(program, {Backend::Object, targetIsas(target, *machine, options.kernels), options.activations});
  const uint64_t fingerprint = modelFingerprint(
      program, fmt::format("obj {} {} {} kernels {} activations {}", target.triple, target.cpu, target.features,
                           static_cast<int>(options.kernels), static_cast<int>(options.activations)));
  for (RungProgram &rung : program.rungs)
    rung.facts.fingerprint = fingerprint;
  if (options.kernels == KernelChoice::Native)
    if (const std::optional<HalideChoice> choice = halideChoice(target, *machine)) {
      halide = linkHalideKernels(*runtime, program, *choice);
      tileHalideWeights(program, halide);
      clock.done(fmt::format("Halide kernels ({})", choice->target).c_str());
    }
  if (options.output == ObjectOutput::KernelList)
    return describeKernels(program, halide);

  mlir::MLIRContext mlirContext;
  mlirContext.loadDialect<LLVM::LLVMDialect>();
  mlir::registerBuiltinDialectTranslation(mlirContext);
  mlir::registerLLVMDialectTranslation(mlirContext);
  mlir::OwningOpRef<mlir::ModuleOp> step = buildStep(mlirContext, *runtime, program, halide);
  if (mlir::failed(mlir::verify(*step)))
    fail("internal: @step in the LLVM dialect does not verify");
  if (options.output == ObjectOutput::StepMlir) {
    std::string text;
    llvm::raw_string_ostream stream(text);
    step->print(stream);
    return text + "\n";
  }
  std::unique_ptr<llvm::Module> stepModule = mlir::translateModuleToLLVMIR(*step, context, "needle_step");
  if (!stepModule)
    fail("internal: @step does not translate to LLVM IR");
  stepModule->setTargetTriple(target.triple);
  stepModule->setDataLayout(runtime->getDataLayout());
  clock.done("build @step (LLVM dialect -> LLVM IR)");

  if (llvm::Linker::linkModules(*runtime, std::move(stepModule)))
    fail("internal: @step does not link with the runtime");
  std::unique_ptr<llvm::Module> module = std::move(runtime);
  module->setModuleIdentifier(options.name);
  module->setSourceFileName(options.name);
  defineData(*module, program);
  // The calls and records first: NAME_call and NAME_extract read the tokenizer too, and go with them.
  if (!program.routesTools) // before the image: these read it too
    eraseFunctions(*module, kRouteFunctions);
  defineImage(*module, "needle_calls", program.calls, kCallFunctions);
  defineImage(*module, "needle_records", program.records, kRecordFunctions);
  if (program.calls.empty() && program.records.empty())
    eraseFunctions(*module, kRequestFunctions);
  defineImage(*module, "needle_tokenizer", program.tokenizer, kTextFunctions);
  bindKernels(*module);
  checkNoHalideRuntime(*module);
  exportInterface(*module, options.name, program);
  setTargetAttributes(*module, target);
  module->getOrInsertNamedMetadata("llvm.ident")
      ->addOperand(llvm::MDNode::get(context, llvm::MDString::get(context, "needlec " + versionString())));
  std::string broken;
  llvm::raw_string_ostream brokenStream(broken);
  if (llvm::verifyModule(*module, &brokenStream))
    fail("internal: the linked module does not verify: {}", broken);
  clock.done("link and bind");

  optimize(*module, *machine);
  clock.done("optimize (O3)");
  std::string bytes = codegen(*module, *machine, options.output);
  llvmErrors.throwIfAny();
  clock.done(options.output == ObjectOutput::LlvmIr ? "print LLVM IR" : "code generation");
  return bytes;
}

} // namespace needle
