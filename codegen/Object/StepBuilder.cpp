#include "codegen/Object/StepBuilder.h"

#include "Support/Error.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"

#include <fmt/format.h>

namespace needle {

namespace {

namespace LLVM = mlir::LLVM;
using Kind = KernelArg::Kind;

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
  mlir::Value offset(mlir::Value base, mlir::Value bytes);
  mlir::Value arena(int64_t bytes);
  mlir::Value integer(mlir::Type type, int64_t value) {
    return builder_.create<LLVM::ConstantOp>(loc_, type, builder_.getIntegerAttr(type, value));
  }
  mlir::Value i64(int64_t value) { return integer(builder_.getI64Type(), value); }
  void call(const KernelCall &call);
  void stage(const StepStage &stage);
  void parallelStage(const StepStage &stage);
  void callOfTask(LLVM::LLVMFuncOp function, mlir::Value task, const std::vector<KernelCall> &calls);
  mlir::Value stepContext();
  mlir::Type contextType();
  mlir::Value contextField(mlir::Value context, int i);
  void eachToken(const std::vector<KernelCall> &calls);
  void step(const RungProgram &rung);
  void head(const std::string &name, const std::vector<KernelCall> &calls);
  mlir::Value halideKernel(const std::string &name);

  mlir::MLIRContext &context_;
  const llvm::Module &runtime_;
  const KernelProgram &program_;
  const RungProgram *rung_ = nullptr; // the one being built
  const HalideKernels &halide_;
  mlir::OpBuilder builder_;
  mlir::Location loc_;
  mlir::Type ptr_;
  mlir::ModuleOp module_;
  mlir::Block *entry_ = nullptr;
  mlir::Value arena_, tokens_, count_, start_; // the step's arguments
  mlir::Value index_;                          // the token the calls are for; null: token 0
  mlir::Value scratch_, out_;                  // a head function's own scratch, and its out
  mlir::Value stepContext_;                    // needle_rt::StepContext of the step's arguments
  int tasks_ = 0;                              // task functions so far
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
  return bytes == 0 ? base : offset(base, i64(bytes));
}

mlir::Value StepBuilder::offset(mlir::Value base, mlir::Value bytes) {
  return builder_.create<LLVM::GEPOp>(loc_, ptr_, builder_.getI8Type(), base, mlir::ValueRange{bytes},
                                      /*inbounds=*/true);
}

/// arena + bytes; in the scratch, the current token's copy.
mlir::Value StepBuilder::arena(int64_t bytes) {
  const ModelFacts &f = rung_->facts;
  if (!index_ || bytes < f.outputsEnd)
    return offset(arena_, bytes);
  mlir::Value skip = builder_.create<LLVM::MulOp>(loc_, index_, i64(f.tokenStride));
  return offset(arena_, builder_.create<LLVM::AddOp>(loc_, skip, i64(bytes)).getResult());
}

mlir::Value StepBuilder::pointer(const KernelArg &arg) {
  auto address = [&](const std::string &global) { return builder_.create<LLVM::AddressOfOp>(loc_, ptr_, global); };
  switch (arg.kind) {
  case Kind::Arena:
    return arena(arg.value);
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
  case Kind::PointerList: { // on the stack, allocated once in the entry block
    const auto array = LLVM::LLVMArrayType::get(ptr_, arg.pointers.size());
    mlir::Value list;
    {
      mlir::OpBuilder::InsertionGuard guard(builder_);
      builder_.setInsertionPointToStart(entry_);
      list = builder_.create<LLVM::AllocaOp>(loc_, ptr_, array, integer(builder_.getI32Type(), 1));
    }
    const int64_t pointerBytes = runtime_.getDataLayout().getPointerSize();
    for (size_t i = 0; i < arg.pointers.size(); ++i)
      builder_.create<LLVM::StoreOp>(loc_, pointer(arg.pointers[i]),
                                     offset(list, static_cast<int64_t>(i) * pointerBytes));
    return list;
  }
  case Kind::HeadScratch:
    return offset(scratch_, arg.value);
  case Kind::HeadOutput:
    return out_;
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
  case Kind::Token: { // an int32_t, widened where a kernel takes a row index
    mlir::Value at = index_ ? builder_.create<LLVM::GEPOp>(loc_, ptr_, builder_.getI32Type(), tokens_,
                                                           mlir::ValueRange{index_}, /*inbounds=*/true)
                            : tokens_;
    mlir::Value token = builder_.create<LLVM::LoadOp>(loc_, builder_.getI32Type(), at);
    if (type.isInteger(32))
      return token;
    return type.isInteger(64) ? builder_.create<LLVM::SExtOp>(loc_, type, token).getResult() : mismatch();
  }
  case Kind::Position:
    if (!type.isInteger(64))
      return mismatch();
    return index_ ? builder_.create<LLVM::AddOp>(loc_, start_, index_).getResult() : start_;
  case Kind::Count:
    return type.isInteger(64) ? count_ : mismatch();
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
  LLVM::LLVMFuncOp callee = kernel(halide ? call.kernel + "_halide" : call.kernel);
  llvm::SmallVector<mlir::Value> args;
  if (halide) {
    args.push_back(halideKernel(halide->name));
    if (call.kernel == "cq_matmul")
      args.push_back(halideKernel(halide->batched));
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

/// for (i = 0; i < n; ++i) calls; as blocks: a header on i, the body, and the exit, where the
/// insertion point is left.
void StepBuilder::eachToken(const std::vector<KernelCall> &calls) {
  mlir::Region *region = builder_.getInsertionBlock()->getParent();
  auto *header = new mlir::Block(), *body = new mlir::Block(), *exit = new mlir::Block();
  region->push_back(header);
  region->push_back(body);
  region->push_back(exit);
  mlir::Value i = header->addArgument(builder_.getI64Type(), loc_);
  builder_.create<LLVM::BrOp>(loc_, mlir::ValueRange{i64(0)}, header);
  builder_.setInsertionPointToEnd(header);
  mlir::Value more = builder_.create<LLVM::ICmpOp>(loc_, LLVM::ICmpPredicate::slt, i, count_);
  builder_.create<LLVM::CondBrOp>(loc_, more, body, exit);
  builder_.setInsertionPointToEnd(body);
  index_ = i;
  for (const KernelCall &kernelCall : calls)
    call(kernelCall);
  builder_.create<LLVM::BrOp>(loc_, mlir::ValueRange{builder_.create<LLVM::AddOp>(loc_, i, i64(1)).getResult()},
                              header);
  builder_.setInsertionPointToEnd(exit);
}

/// needle_rt::StepContext: {arena, tokens, n, t}.
mlir::Type StepBuilder::contextType() {
  return LLVM::LLVMStructType::getLiteral(&context_, {ptr_, ptr_, builder_.getI64Type(), builder_.getI64Type()});
}

/// The address of field i of the StepContext at `context`.
mlir::Value StepBuilder::contextField(mlir::Value context, int i) {
  return builder_.create<LLVM::GEPOp>(loc_, ptr_, contextType(), context, llvm::ArrayRef<LLVM::GEPArg>{0, i});
}

/// The step's arguments as a needle_rt::StepContext, on the step's stack (stored once).
mlir::Value StepBuilder::stepContext() {
  if (stepContext_)
    return stepContext_;
  mlir::OpBuilder::InsertionGuard guard(builder_);
  builder_.setInsertionPointToStart(entry_);
  stepContext_ = builder_.create<LLVM::AllocaOp>(loc_, ptr_, contextType(), integer(builder_.getI32Type(), 1));
  builder_.setInsertionPointAfter(stepContext_.getDefiningOp());
  mlir::Value fields[] = {arena_, tokens_, count_, start_};
  for (int i = 0; i < 4; ++i)
    builder_.create<LLVM::StoreOp>(loc_, fields[i], contextField(stepContext_, i));
  return stepContext_;
}

/// A parallel stage: void needle_tasksK(StepContext *context, uint32_t task) makes the stage's
/// call `task` (a loop over the tokens: its calls for token `task`) on the step's arguments, and
/// the step hands it to the runtime's run_tasks.
void StepBuilder::parallelStage(const StepStage &stage) {
  mlir::Value context = stepContext();
  const std::string name = fmt::format("needle_tasks{}", tasks_++);
  const bool tokens = stage.kind == StepStage::Kind::EachToken;
  mlir::Value arena = arena_, tokenList = tokens_, count = count_, start = start_;
  mlir::Block *entry = entry_;
  {
    mlir::OpBuilder::InsertionGuard guard(builder_);
    builder_.setInsertionPointToEnd(module_.getBody());
    auto function = builder_.create<LLVM::LLVMFuncOp>(
        loc_, name, LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(&context_), {ptr_, builder_.getI32Type()}));
    entry_ = function.addEntryBlock(builder_);
    builder_.setInsertionPointToEnd(entry_);
    auto field = [&](int i, mlir::Type fieldType) -> mlir::Value {
      return builder_.create<LLVM::LoadOp>(loc_, fieldType, contextField(entry_->getArgument(0), i));
    };
    arena_ = field(0, ptr_);
    tokens_ = field(1, ptr_);
    count_ = field(2, builder_.getI64Type());
    start_ = field(3, builder_.getI64Type());
    mlir::Value task = entry_->getArgument(1);
    if (tokens) { // every call, for token `task`
      index_ = builder_.create<LLVM::ZExtOp>(loc_, builder_.getI64Type(), task);
      for (const KernelCall &kernelCall : stage.calls)
        call(kernelCall);
      builder_.create<LLVM::ReturnOp>(loc_, mlir::ValueRange{});
    } else {
      index_ = stage.kind == StepStage::Kind::LastToken ? builder_.create<LLVM::SubOp>(loc_, count_, i64(1)).getResult()
                                                        : nullptr;
      callOfTask(function, task, stage.calls);
    }
  }
  arena_ = arena, tokens_ = tokenList, count_ = count, start_ = start, entry_ = entry;
  mlir::Value tasks = builder_.create<LLVM::AddressOfOp>(loc_, ptr_, name);
  mlir::Value taskCount = tokens ? builder_.create<LLVM::TruncOp>(loc_, builder_.getI32Type(), count_).getResult()
                                 : integer(builder_.getI32Type(), static_cast<int64_t>(stage.calls.size()));
  builder_.create<LLVM::CallOp>(loc_, kernel("run_tasks"), mlir::ValueRange{arena_, tasks, context, taskCount});
}

/// The rest of a task function: switch (task) { case i: calls[i] }, then return.
void StepBuilder::callOfTask(LLVM::LLVMFuncOp function, mlir::Value task, const std::vector<KernelCall> &calls) {
  mlir::Region &body = function.getBody();
  auto *exit = new mlir::Block();
  llvm::SmallVector<int32_t> values;
  llvm::SmallVector<mlir::Block *> cases;
  for (size_t i = 0; i < calls.size(); ++i) {
    values.push_back(static_cast<int32_t>(i));
    cases.push_back(new mlir::Block());
    body.push_back(cases.back());
  }
  body.push_back(exit);
  builder_.create<LLVM::SwitchOp>(loc_, task, exit, mlir::ValueRange{}, values, cases,
                                  llvm::SmallVector<mlir::ValueRange>(cases.size(), mlir::ValueRange{}));
  for (size_t i = 0; i < calls.size(); ++i) {
    builder_.setInsertionPointToEnd(cases[i]);
    call(calls[i]);
    builder_.create<LLVM::BrOp>(loc_, mlir::ValueRange{}, exit);
  }
  builder_.setInsertionPointToEnd(exit);
  builder_.create<LLVM::ReturnOp>(loc_, mlir::ValueRange{});
}

void StepBuilder::stage(const StepStage &stage) {
  if (stage.parallel)
    return parallelStage(stage);
  switch (stage.kind) {
  case StepStage::Kind::EachToken:
    return eachToken(stage.calls);
  case StepStage::Kind::LastToken:
    index_ = builder_.create<LLVM::SubOp>(loc_, count_, i64(1));
    break;
  case StepStage::Kind::Batched:
    index_ = nullptr;
    break;
  }
  for (const KernelCall &kernelCall : stage.calls)
    call(kernelCall);
}

mlir::OwningOpRef<mlir::ModuleOp> StepBuilder::build() {
  mlir::OwningOpRef<mlir::ModuleOp> owned = mlir::ModuleOp::create(loc_);
  module_ = *owned;
  declareData("needle_weights", builder_.getI8Type(), program_.weights.size());
  for (const auto &[bits, values] : program_.codebooks)
    declareData(fmt::format("needle_codebook{}", bits), builder_.getF32Type(), values.size());
  for (size_t i = 0; i < program_.constants.size(); ++i)
    declareData(fmt::format("needle_constant{}", i), builder_.getF32Type(), program_.constants[i].size());

  for (const RungProgram &rung : program_.rungs)
    step(rung);
  return owned;
}

/// The rung's step and heads: needle_step_D, needle_confidence_head_D, needle_embedding_head_D
/// for its depth D (ObjectEmitter gathers them into the runtime's arrays).
void StepBuilder::step(const RungProgram &rung) {
  rung_ = &rung;
  const int64_t depth = rung.facts.numLayers;
  builder_.setInsertionPointToEnd(module_.getBody());
  const auto type = LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(&context_),
                                                {ptr_, ptr_, builder_.getI64Type(), builder_.getI64Type()});
  auto step = builder_.create<LLVM::LLVMFuncOp>(loc_, fmt::format("needle_step_{}", depth), type);
  entry_ = step.addEntryBlock(builder_);
  stepContext_ = nullptr;
  arena_ = entry_->getArgument(0);
  tokens_ = entry_->getArgument(1);
  count_ = entry_->getArgument(2);
  start_ = entry_->getArgument(3);
  builder_.setInsertionPointToEnd(entry_);
  for (const StepStage &each : rung.step)
    stage(each);
  builder_.create<LLVM::ReturnOp>(loc_, mlir::ValueRange{});
  head(fmt::format("needle_confidence_head_{}", depth), rung.confidenceHead);
  head(fmt::format("needle_embedding_head_{}", depth), rung.embeddingHead);
}

/// void name(const unsigned char *arena, float *out): a head's calls, on the arena (read only),
/// a scratch of the head's own on the stack, and out.
void StepBuilder::head(const std::string &name, const std::vector<KernelCall> &calls) {
  builder_.setInsertionPointToEnd(module_.getBody());
  auto function = builder_.create<LLVM::LLVMFuncOp>(
      loc_, name, LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(&context_), {ptr_, ptr_}));
  entry_ = function.addEntryBlock(builder_);
  arena_ = entry_->getArgument(0);
  out_ = entry_->getArgument(1);
  index_ = tokens_ = count_ = start_ = nullptr;
  builder_.setInsertionPointToEnd(entry_);
  const auto bytes = LLVM::LLVMArrayType::get(builder_.getI8Type(), std::max<int64_t>(rung_->headScratch, 1));
  scratch_ = builder_.create<LLVM::AllocaOp>(loc_, ptr_, bytes, integer(builder_.getI32Type(), 1), kWeightAlign);
  for (const KernelCall &kernelCall : calls)
    call(kernelCall);
  builder_.create<LLVM::ReturnOp>(loc_, mlir::ValueRange{});
}

} // namespace

mlir::OwningOpRef<mlir::ModuleOp> buildStep(mlir::MLIRContext &context, const llvm::Module &runtime,
                                            const KernelProgram &program, const HalideKernels &halide) {
  return StepBuilder(context, runtime, program, halide).build();
}

} // namespace needle
