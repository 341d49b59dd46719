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

} // namespace

mlir::OwningOpRef<mlir::ModuleOp> buildStep(mlir::MLIRContext &context, const llvm::Module &runtime,
                                            const KernelProgram &program, const HalideKernels &halide) {
  return StepBuilder(context, runtime, program, halide).build();
}

} // namespace needle
