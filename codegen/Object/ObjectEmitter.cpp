#include "codegen/Object/ObjectEmitter.h"
#include "codegen/Halide/Kernels.h"
#include "codegen/Object/RuntimeBitcode.h"
#include "codegen/Object/TiledLayout.h"

#include "Support/Error.h"
#include "Support/RoundUp.h"
#include "Support/Version.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
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
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Transforms/IPO/Internalize.h"

#include <chrono>
#include <cstring>
#include <mutex>
#include <set>

namespace needle {

namespace {

namespace LLVM = mlir::LLVM;
using Kind = KernelArg::Kind;

constexpr const char *kInterfaceFunctions[] = {"info", "arena_size", "arena_align", "open",      "reset",
                                               "feed", "logits",     "confidence",  "embedding", "position"};

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

/// LLVM only warns about (and ignores) a CPU or feature it does not know; needlec refuses them.
void checkCpuAndFeatures(const llvm::Target &backend, const TargetSpec &target) {
  std::unique_ptr<llvm::MCSubtargetInfo> info(backend.createMCSubtargetInfo(target.triple, "", ""));
  if (!target.cpu.empty() && !info->isCPUStringValid(target.cpu))
    fail("--mcpu: \"{}\" is not a CPU LLVM knows for {}", target.cpu, target.triple);
  llvm::SmallVector<llvm::StringRef> features;
  llvm::StringRef(target.features).split(features, ',', -1, false);
  for (llvm::StringRef feature : features) {
    const bool known = (feature.starts_with("+") || feature.starts_with("-")) &&
                       llvm::any_of(info->getAllProcessorFeatures(),
                                    [&](const llvm::SubtargetFeatureKV &kv) { return feature.drop_front() == kv.Key; });
    if (!known)
      fail("--mattr: \"{}\" is not a feature LLVM knows for {} (write +name or -name)", feature.str(), target.triple);
  }
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
  checkCpuAndFeatures(*backend, target);
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
  if (llvm::NamedMDNode *ident = runtime->getNamedMetadata("llvm.ident"))
    runtime->eraseNamedMetadata(ident);
  return runtime;
}

/// The Halide target and f32 lanes of the kernels for `target`, or nothing where Halide cannot
/// serve it: riscv64 without the V extension and 32-bit Arm without NEON (Cortex-M) keep the
/// portable kernels.
struct HalideChoice {
  std::string target;
  int lanes;
};

std::optional<HalideChoice> halideChoice(const TargetSpec &target, const llvm::TargetMachine &machine) {
  const llvm::MCSubtargetInfo &info = *machine.getMCSubtargetInfo();
  auto has = [&](const char *feature) { return info.checkFeatures(std::string("+") + feature); };
  const llvm::Triple triple(target.triple);
  const std::string os = triple.isOSWindows()                        ? "windows"
                         : triple.isiOS()                            ? "ios"
                         : triple.isOSDarwin()                       ? "osx"
                         : triple.isAndroid()                        ? "android"
                         : triple.getOS() == llvm::Triple::UnknownOS ? "noos"
                                                                     : "linux";
  // Two vectors of partial sums per dot product: independent FMAs hide their latency.
  switch (target.arch) {
  case RuntimeArch::X86_64: {
    HalideChoice choice{"x86-64-" + os, 8};
    for (const auto &[llvmName, halideName] :
         {std::pair{"sse4.1", "sse41"}, {"avx", "avx"}, {"avx2", "avx2"}, {"fma", "fma"}, {"f16c", "f16c"}})
      if (has(llvmName))
        choice.target += std::string("-") + halideName;
    if (has("avx"))
      choice.lanes = 16;
    if (has("avx512f") && has("avx512cd") && has("avx512bw") && has("avx512dq") && has("avx512vl")) {
      choice.target += "-avx512-avx512_skylake";
      choice.lanes = 32;
    }
    return choice;
  }
  case RuntimeArch::AArch64:
    return HalideChoice{"arm-64-" + os + (has("dotprod") ? "-arm_dot_prod" : ""), 8};
  case RuntimeArch::Arm:
    if (!has("neon"))
      return std::nullopt;
    return HalideChoice{"arm-32-" + os, 8};
  case RuntimeArch::Wasm32:
    return has("simd128") ? HalideChoice{"wasm-32-wasmrt-wasm_simd128", 8} : HalideChoice{"wasm-32-wasmrt", 4};
  case RuntimeArch::RiscV64:
    return std::nullopt;
  }
  return std::nullopt;
}

/// A Halide kernel serving the calls of one runtime kernel at one shape: they call `bridge`
/// (runtime/needle_object.cpp) with the kernel, then `bridgeArgs`, then their own arguments.
struct HalideKernel {
  std::string name, bridge;
  std::vector<int64_t> bridgeArgs;
};
/// By runtime kernel and shape.
using HalideKey = std::pair<std::string, std::vector<int64_t>>;
using HalideKernels = std::map<HalideKey, HalideKernel>;

/// The kernel and shape of a call Halide may serve.
std::optional<HalideKey> halideKey(const KernelCall &call) {
  if (call.kernel == "cq_matvec") // (packed, norms, codebook, bits, rows, cols, x_rot, y)
    return HalideKey{call.kernel, {call.args[4].value, call.args[5].value, call.args[3].value}};
  return std::nullopt;
}

const HalideKernel *halideKernelOf(const HalideKernels &kernels, const KernelCall &call) {
  const std::optional<HalideKey> key = halideKey(call);
  const auto it = key ? kernels.find(*key) : kernels.end();
  return it == kernels.end() ? nullptr : &it->second;
}

/// Adds the Halide kernel for one call's kernel and shape to `set`, or returns nothing where the
/// portable kernel stays: a CQ matvec whose rows do not fill whole tiles.
std::optional<HalideKernel> addHalideKernel(HalideKernelSet &set, const HalideKey &key, const KernelProgram &program,
                                            const HalideChoice &choice) {
  const std::vector<int64_t> &shape = key.second; // cq_matvec's (rows, cols, bits)
  const int64_t rows = shape[0], cols = shape[1], bits = shape[2];
  if (rows % choice.lanes)
    return std::nullopt;
  HalideKernel kernel{
      fmt::format("needle_hk_cq_matvec_{}x{}_cq{}", rows, cols, bits), "cq_matvec_halide", {choice.lanes}};
  set.addCqMatvec({rows, cols, static_cast<int>(bits), program.codebooks.at(static_cast<int>(bits))}, kernel.name);
  return kernel;
}

/// Generates the Halide kernels the program's calls can use, compiled together, and links their
/// bitcode into `module`.
HalideKernels linkHalideKernels(llvm::Module &module, const KernelProgram &program, const HalideChoice &choice) {
  HalideKernels kernels;
  HalideKernelSet set(choice.target, choice.lanes);
  std::set<HalideKey> tried;
  for (const KernelCall &call : program.step) {
    const std::optional<HalideKey> key = halideKey(call);
    if (key && tried.insert(*key).second)
      if (std::optional<HalideKernel> kernel = addHalideKernel(set, *key, program, choice))
        kernels.emplace(*key, *kernel);
  }
  if (set.empty())
    return kernels;
  const std::string bitcode = set.bitcode();
  auto parsed = llvm::parseBitcodeFile(llvm::MemoryBufferRef(bitcode, "needle_halide_kernels"), module.getContext());
  if (!parsed)
    fail("internal: Halide's bitcode does not load: {}", llvm::toString(parsed.takeError()));
  std::unique_ptr<llvm::Module> linked = std::move(*parsed);
  linked->setTargetTriple(module.getTargetTriple());
  linked->setDataLayout(module.getDataLayout());
  if (llvm::Linker::linkModules(module, std::move(linked)))
    fail("internal: the Halide kernels do not link");
  for (const auto &[key, kernel] : kernels)
    module.getFunction(kernel.name)->addFnAttr(llvm::Attribute::NoInline);
  return kernels;
}

/// Re-lays the weights of every CQ matvec a Halide kernel serves in its tiled layout: in place
/// when nothing else reads them, else as a copy appended to the weights (the tied embedding,
/// which cq_row also gathers rows from); the calls then point at the tiled weights.
void tileHalideWeights(KernelProgram &program, const HalideKernels &kernels) {
  std::set<int64_t> readElsewhere;
  for (const KernelCall &call : program.step) {
    const bool halide = call.kernel == "cq_matvec" && halideKernelOf(kernels, call);
    for (size_t i = halide ? 2 : 0; i < call.args.size(); ++i)
      if (call.args[i].kind == Kind::Weight)
        readElsewhere.insert(call.args[i].value);
  }
  std::vector<uint8_t> &blob = program.weights;
  std::map<int64_t, int64_t> tiledOffset; // by row-major offset
  auto place = [&](int64_t offset, std::vector<uint8_t> tiled) {
    auto [it, inserted] = tiledOffset.try_emplace(offset, offset);
    if (!inserted)
      return it->second;
    if (readElsewhere.count(offset)) {
      blob.resize(static_cast<size_t>(roundUp(static_cast<int64_t>(blob.size()), kWeightAlign)), 0);
      it->second = static_cast<int64_t>(blob.size());
      blob.insert(blob.end(), tiled.begin(), tiled.end());
    } else {
      std::copy(tiled.begin(), tiled.end(), blob.begin() + offset);
    }
    return it->second;
  };
  for (KernelCall &call : program.step) {
    const HalideKernel *kernel = halideKernelOf(kernels, call);
    if (call.kernel != "cq_matvec" || !kernel)
      continue;
    const int64_t rows = call.args[4].value, cols = call.args[5].value, bits = call.args[3].value;
    const int64_t tile = kernel->bridgeArgs[0], groups = roundUp(cols, 128) / 128;
    KernelArg &packed = call.args[0], &norms = call.args[1];
    if (!tiledOffset.count(packed.value)) {
      const int64_t rowBytes = groups * 128 * bits / 8;
      packed.value = place(packed.value, tileRows(&blob[static_cast<size_t>(packed.value)], rows, rowBytes, 1, tile));
      norms.value = place(norms.value, tileRows(&blob[static_cast<size_t>(norms.value)], rows, groups, 2, tile));
    } else {
      packed.value = tiledOffset.at(packed.value);
      norms.value = tiledOffset.at(norms.value);
    }
  }
}

mlir::Type mlirTypeOf(mlir::MLIRContext &context, llvm::Type *type, const std::string &kernel) {
  if (type->isPointerTy())
    return LLVM::LLVMPointerType::get(&context);
  if (type->isIntegerTy())
    return mlir::IntegerType::get(&context, type->getIntegerBitWidth());
  if (type->isFloatTy())
    return mlir::Float32Type::get(&context);
  if (type->isDoubleTy())
    return mlir::Float64Type::get(&context);
  if (type->isVoidTy())
    return LLVM::LLVMVoidType::get(&context);
  fail("internal: runtime kernel {} has a parameter type the object printer does not pass", kernel);
}

/// Builds `void needle_step(ptr arena, i32 token, i64 t)` in MLIR's LLVM dialect: each kernel
/// call of the program becomes an llvm.call of needle_k_<kernel>, declared with the parameter
/// types of the runtime's kernel, on GEPs into the arena and the read-only data.
class StepBuilder {
public:
  StepBuilder(mlir::MLIRContext &context, const llvm::Module &runtime, const KernelProgram &program,
              const HalideKernels &halide)
      : context_(context), runtime_(runtime), program_(program), halide_(halide), builder_(&context),
        loc_(builder_.getUnknownLoc()), ptr_(LLVM::LLVMPointerType::get(&context)) {}

  mlir::OwningOpRef<mlir::ModuleOp> build();

private:
  LLVM::LLVMFuncOp kernel(const std::string &name);
  void declareData(const std::string &name, mlir::Type element, uint64_t count);
  mlir::Value pointer(const KernelArg &arg);
  mlir::Value scalar(const KernelArg &arg, mlir::Type type, const std::string &kernel, size_t index);
  mlir::Value offset(mlir::Value base, int64_t bytes);
  mlir::Value integer(mlir::Type type, int64_t value) {
    return builder_.create<LLVM::ConstantOp>(loc_, type, builder_.getIntegerAttr(type, value));
  }
  void call(const KernelCall &call);
  mlir::Value halideKernel(const std::string &name);

  mlir::MLIRContext &context_;
  const llvm::Module &runtime_;
  const KernelProgram &program_;
  const HalideKernels &halide_;
  mlir::OpBuilder builder_;
  mlir::Location loc_;
  mlir::Type ptr_;
  mlir::ModuleOp module_;
  mlir::Value arena_, token_, position_;
  std::map<std::string, LLVM::LLVMFuncOp> kernels_;
  int lists_ = 0;
};

LLVM::LLVMFuncOp StepBuilder::kernel(const std::string &name) {
  auto [it, inserted] = kernels_.try_emplace(name);
  if (!inserted)
    return it->second;
  const llvm::GlobalVariable *exported = runtime_.getNamedGlobal("needle_kernel_" + name);
  const auto *function =
      exported && exported->hasInitializer() ? llvm::dyn_cast<llvm::Function>(exported->getInitializer()) : nullptr;
  if (!function)
    fail("internal: the runtime exports no kernel {} (runtime/needle_object.cpp)", name);
  llvm::SmallVector<mlir::Type> params;
  for (llvm::Type *param : function->getFunctionType()->params())
    params.push_back(mlirTypeOf(context_, param, name));
  const auto type = LLVM::LLVMFunctionType::get(mlirTypeOf(context_, function->getReturnType(), name), params);
  mlir::OpBuilder::InsertionGuard guard(builder_);
  builder_.setInsertionPointToEnd(module_.getBody());
  it->second = builder_.create<LLVM::LLVMFuncOp>(loc_, "needle_k_" + name, type);
  return it->second;
}

void StepBuilder::declareData(const std::string &name, mlir::Type element, uint64_t count) {
  mlir::OpBuilder::InsertionGuard guard(builder_);
  builder_.setInsertionPointToEnd(module_.getBody());
  builder_.create<LLVM::GlobalOp>(loc_, LLVM::LLVMArrayType::get(element, count), /*isConstant=*/true,
                                  LLVM::Linkage::External, name, mlir::Attribute());
}

mlir::Value StepBuilder::offset(mlir::Value base, int64_t bytes) {
  if (bytes == 0)
    return base;
  return builder_.create<LLVM::GEPOp>(loc_, ptr_, builder_.getI8Type(), base,
                                      mlir::ValueRange{integer(builder_.getI64Type(), bytes)}, /*inbounds=*/true);
}

mlir::Value StepBuilder::pointer(const KernelArg &arg) {
  auto address = [&](const std::string &global) { return builder_.create<LLVM::AddressOfOp>(loc_, ptr_, global); };
  switch (arg.kind) {
  case Kind::Arena:
    return offset(arena_, arg.value);
  case Kind::Weight:
    return offset(address("needle_weights"), arg.value);
  case Kind::Codebook:
    return address(fmt::format("needle_codebook{}", arg.value));
  case Kind::Constant:
    return address(fmt::format("needle_constant{}", arg.value));
  case Kind::Int64List: { // numbered in program order, as defineData() fills them
    const std::string name = fmt::format("needle_list{}", lists_++);
    declareData(name, builder_.getI64Type(), arg.ints.size());
    return address(name);
  }
  case Kind::PointerList: {
    const auto array = LLVM::LLVMArrayType::get(ptr_, arg.pointers.size());
    mlir::Value list = builder_.create<LLVM::AllocaOp>(loc_, ptr_, array, integer(builder_.getI32Type(), 1));
    const int64_t pointerBytes = runtime_.getDataLayout().getPointerSize();
    for (size_t i = 0; i < arg.pointers.size(); ++i)
      builder_.create<LLVM::StoreOp>(loc_, pointer(arg.pointers[i]),
                                     offset(list, static_cast<int64_t>(i) * pointerBytes));
    return list;
  }
  case Kind::Null:
    return builder_.create<LLVM::ZeroOp>(loc_, ptr_);
  default:
    return {};
  }
}

mlir::Value StepBuilder::scalar(const KernelArg &arg, mlir::Type type, const std::string &kernel, size_t index) {
  auto mismatch = [&]() -> mlir::Value {
    fail("internal: argument {} of kernel {} does not match the runtime's parameter type", index, kernel);
  };
  switch (arg.kind) {
  case Kind::I32:
  case Kind::I64:
    return type.isInteger() ? integer(type, arg.value) : mismatch();
  case Kind::F32:
    return type.isF32() ? builder_.create<LLVM::ConstantOp>(loc_, type, builder_.getF32FloatAttr(arg.real))
                        : mismatch();
  case Kind::F64:
    return type.isF64() ? builder_.create<LLVM::ConstantOp>(loc_, type, builder_.getF64FloatAttr(arg.real))
                        : mismatch();
  case Kind::Token: // an int32_t, widened where a kernel takes a row index
    if (type.isInteger(32))
      return token_;
    return type.isInteger(64) ? builder_.create<LLVM::SExtOp>(loc_, type, token_).getResult() : mismatch();
  case Kind::Position:
    return type.isInteger(64) ? position_ : mismatch();
  default:
    return mismatch();
  }
}

/// The address of Halide kernel `name`, declared with the type of its linked definition.
mlir::Value StepBuilder::halideKernel(const std::string &name) {
  if (!module_.lookupSymbol(name)) {
    const llvm::FunctionType *type = runtime_.getFunction(name)->getFunctionType();
    llvm::SmallVector<mlir::Type> params;
    for (llvm::Type *param : type->params())
      params.push_back(mlirTypeOf(context_, param, name));
    mlir::OpBuilder::InsertionGuard guard(builder_);
    builder_.setInsertionPointToEnd(module_.getBody());
    builder_.create<LLVM::LLVMFuncOp>(
        loc_, name, LLVM::LLVMFunctionType::get(mlirTypeOf(context_, type->getReturnType(), name), params));
  }
  return builder_.create<LLVM::AddressOfOp>(loc_, ptr_, name);
}

void StepBuilder::call(const KernelCall &call) {
  if (call.kernel.empty())
    return;
  // A call with a Halide kernel for its shape calls it through the runtime's bridge, which takes
  // the kernel first, then the bridge's own arguments, then the call's.
  const HalideKernel *halide = halideKernelOf(halide_, call);
  LLVM::LLVMFuncOp callee = kernel(halide ? halide->bridge : call.kernel);
  llvm::SmallVector<mlir::Value> args;
  if (halide) {
    args.push_back(halideKernel(halide->name));
    for (int64_t value : halide->bridgeArgs)
      args.push_back(integer(builder_.getI64Type(), value));
  }
  llvm::ArrayRef<mlir::Type> params = callee.getFunctionType().getParams().drop_front(args.size());
  if (params.size() != call.args.size())
    fail("internal: kernel {} takes {} arguments, the program passes {}", call.kernel, params.size(), call.args.size());
  for (size_t i = 0; i < params.size(); ++i) {
    const KernelArg &arg = call.args[i];
    if (arg.isPointer() != mlir::isa<LLVM::LLVMPointerType>(params[i]))
      fail("internal: argument {} of kernel {} is {}a pointer, the runtime's parameter {}", i, call.kernel,
           arg.isPointer() ? "" : "not ", arg.isPointer() ? "is not" : "is");
    args.push_back(arg.isPointer() ? pointer(arg) : scalar(arg, params[i], call.kernel, i));
  }
  builder_.create<LLVM::CallOp>(loc_, callee, args);
}

mlir::OwningOpRef<mlir::ModuleOp> StepBuilder::build() {
  mlir::OwningOpRef<mlir::ModuleOp> owned = mlir::ModuleOp::create(loc_);
  module_ = *owned;
  declareData("needle_weights", builder_.getI8Type(), program_.weights.size());
  for (const auto &[bits, values] : program_.codebooks)
    declareData(fmt::format("needle_codebook{}", bits), builder_.getF32Type(), values.size());
  for (size_t i = 0; i < program_.constants.size(); ++i)
    declareData(fmt::format("needle_constant{}", i), builder_.getF32Type(), program_.constants[i].size());

  builder_.setInsertionPointToEnd(module_.getBody());
  const auto type = LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(&context_),
                                                {ptr_, builder_.getI32Type(), builder_.getI64Type()});
  auto step = builder_.create<LLVM::LLVMFuncOp>(loc_, "needle_step", type);
  mlir::Block *entry = step.addEntryBlock(builder_);
  arena_ = entry->getArgument(0);
  token_ = entry->getArgument(1);
  position_ = entry->getArgument(2);
  builder_.setInsertionPointToEnd(entry);
  for (const KernelCall &kernelCall : program_.step)
    call(kernelCall);
  builder_.create<LLVM::ReturnOp>(loc_, mlir::ValueRange{});
  return owned;
}

template <typename T> llvm::Constant *constantArray(llvm::LLVMContext &context, const std::vector<T> &values) {
  return llvm::ConstantDataArray::get(context, llvm::ArrayRef<T>(values));
}

/// Gives the data @step declared, and the runtime's needle_facts and needle_info, their values.
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
  for (const KernelCall &call : program.step)
    for (const KernelArg &arg : call.args)
      if (arg.kind == Kind::Int64List)
        define(fmt::format("needle_list{}", list++),
               constantArray(context, std::vector<uint64_t>(arg.ints.begin(), arg.ints.end())), 8);

  const ModelFacts &f = program.facts;
  auto *factsType = llvm::dyn_cast<llvm::StructType>(module.getNamedGlobal("needle_facts")->getValueType());
  if (!factsType || factsType->getNumElements() != 10)
    fail("internal: the runtime's needle_rt::ModelFacts is not the ten fields the object printer fills");
  auto i64 = [&](int64_t value) { return llvm::ConstantInt::get(llvm::Type::getInt64Ty(context), value); };
  auto i32 = [&](int64_t value) { return llvm::ConstantInt::get(llvm::Type::getInt32Ty(context), value); };
  define(
      "needle_facts",
      llvm::ConstantStruct::get(
          factsType, {i64(f.arenaSize), i64(f.arenaAlign), i64(f.outputsEnd), i64(f.maxSeqLen), i64(f.vocabSize),
                      i64(f.embeddingDim), i64(f.logits), i64(f.confidence), i64(f.embedding),
                      llvm::ConstantFP::get(llvm::Type::getFloatTy(context), static_cast<double>(f.confidenceBias))}),
      8);
  std::vector<uint32_t> sources(f.sourceBlocks.begin(), f.sourceBlocks.end());
  auto *sourceBlocks = new llvm::GlobalVariable(
      module, llvm::ArrayType::get(llvm::Type::getInt32Ty(context), sources.size()), true,
      llvm::GlobalValue::InternalLinkage, constantArray(context, sources), "needle_source_blocks");
  auto *infoType = llvm::dyn_cast<llvm::StructType>(module.getNamedGlobal("needle_info")->getValueType());
  if (!infoType || infoType->getNumElements() != 6)
    fail("internal: the runtime's ModelInfo is not the six fields of NAME_info_t");
  define("needle_info",
         llvm::ConstantStruct::get(infoType, {i32(f.vocabSize), i32(f.dModel), i32(f.numLayers), i32(f.maxSeqLen),
                                              i32(f.embeddingDim), sourceBlocks}),
         8);
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

/// Halide kernels are built with no_runtime: they may call nothing of Halide's runtime.
void checkNoHalideRuntime(const llvm::Module &module) {
  for (const llvm::Function &function : module)
    if (function.isDeclaration() && function.getName().starts_with("halide_") && !function.use_empty())
      fail("internal: a Halide kernel calls {}, a function of Halide's runtime", function.getName().str());
}

/// needle_abi_X becomes NAME_X; everything else becomes internal.
void exportInterface(llvm::Module &module, const std::string &name) {
  for (const char *function : kInterfaceFunctions) {
    llvm::Function *abi = module.getFunction(std::string("needle_abi_") + function);
    if (!abi)
      fail("internal: the runtime defines no needle_abi_{}", function);
    abi->setName(name + "_" + function);
  }
  const std::vector<std::string> exported = exportedSymbols(name);
  llvm::internalizeModule(module, [&](const llvm::GlobalValue &value) {
    return std::binary_search(exported.begin(), exported.end(), value.getName().str());
  });
}

/// Every function gets the target's CPU and features, as clang would give them.
void setTargetAttributes(llvm::Module &module, const TargetSpec &target) {
  for (llvm::Function &function : module) {
    if (function.isDeclaration())
      continue;
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
  builder.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3).run(module, modules);
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

} // namespace

std::vector<std::string> exportedSymbols(const std::string &name) {
  std::vector<std::string> symbols;
  for (const char *function : kInterfaceFunctions)
    symbols.push_back(name + "_" + function);
  std::sort(symbols.begin(), symbols.end());
  return symbols;
}

std::string emitObject(const KernelProgram &program, const TargetSpec &target, const ObjectOptions &options,
                       std::vector<PhaseTime> *times) {
  PhaseClock clock(times);
  std::unique_ptr<llvm::TargetMachine> machine = createTargetMachine(target);
  llvm::LLVMContext context;
  std::unique_ptr<llvm::Module> runtime = loadRuntime(context, target, *machine);
  clock.done("load runtime bitcode");
  HalideKernels halide;
  KernelProgram tiled;
  if (options.kernels == KernelChoice::Halide)
    if (const std::optional<HalideChoice> choice = halideChoice(target, *machine)) {
      halide = linkHalideKernels(*runtime, program, *choice);
      tiled = program;
      tileHalideWeights(tiled, halide);
      clock.done(fmt::format("Halide kernels ({})", choice->target).c_str());
    }
  const KernelProgram &printed = halide.empty() ? program : tiled;

  mlir::MLIRContext mlirContext;
  mlirContext.loadDialect<LLVM::LLVMDialect>();
  mlir::registerBuiltinDialectTranslation(mlirContext);
  mlir::registerLLVMDialectTranslation(mlirContext);
  mlir::OwningOpRef<mlir::ModuleOp> step = StepBuilder(mlirContext, *runtime, printed, halide).build();
  if (mlir::failed(mlir::verify(*step)))
    fail("internal: @step in the LLVM dialect does not verify");
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
  defineData(*module, printed);
  bindKernels(*module);
  checkNoHalideRuntime(*module);
  exportInterface(*module, options.name);
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
  clock.done(options.output == ObjectOutput::LlvmIr ? "print LLVM IR" : "code generation");
  return bytes;
}

} // namespace needle
