// needle-opt: mlir-opt with the needle dialect and needlec's passes registered.
#include "Needle/Transforms/Passes.h"
#include "Support/Version.h"
#include "codegen/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<needle::ir::NeedleDialect, mlir::func::FuncDialect, mlir::arith::ArithDialect>();
  needle::registerNeedlePasses();
  needle::registerNeedleCodegenPasses();
  llvm::cl::SetVersionPrinter([](llvm::raw_ostream &os) { os << needle::versionText("needle-opt"); });
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  return mlir::asMainReturnCode(mlir::MlirOptMain(argc, argv, "needle-opt: the needle dialect and passes\n", registry));
}
