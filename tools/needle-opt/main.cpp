// needle-opt: mlir-opt with the needle dialect and needlec's passes registered. Its input is
// bounded (size, bracket nesting) before MLIR parses it, and a failure's first line follows the
// tools' contract, "needle-opt: error: <the first diagnostic>", with MLIR's full diagnostics
// (locations, source lines) after it.
#include "Needle/Transforms/Passes.h"
#include "Support/CaptureStderr.h"
#include "Support/Error.h"
#include "Support/Files.h"
#include "Support/Limits.h"
#include "Support/Version.h"
#include "codegen/Transforms/Passes.h"

#include "mlir/Debug/Counter.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"

#include <cstdio>
#include <cstring>
#include <iostream>

namespace {

constexpr const char *kTool = "needle-opt";

/// The input text: a regular file or standard input ("-"), at most kMaxIrBytes.
std::string readInput(const std::string &path) {
  if (path != "-") {
    std::vector<uint8_t> bytes = needle::readFile(path, needle::kMaxIrBytes);
    return std::string(bytes.begin(), bytes.end());
  }
  std::string text;
  char chunk[1 << 16];
  while (std::cin.read(chunk, sizeof chunk) || std::cin.gcount() > 0) {
    text.append(chunk, std::cin.gcount());
    if (text.size() > needle::kMaxIrBytes)
      needle::fail("<stdin>: more than the {} bytes IR may have", needle::kMaxIrBytes);
  }
  return text;
}

/// MLIR's report of a failure, preceded by one contract line: its first error, or its first line.
void reportFailure(const std::string &diagnostics) {
  std::string first;
  for (size_t begin = 0; begin < diagnostics.size() && first.empty();) {
    const size_t end = std::min(diagnostics.find('\n', begin), diagnostics.size());
    const std::string line = diagnostics.substr(begin, end - begin);
    if (const size_t at = line.find(": error: "); at != std::string::npos)
      first = line.substr(0, at + 2) + line.substr(at + 9);
    begin = end + 1;
  }
  if (first.empty())
    first = diagnostics.substr(0, diagnostics.find('\n'));
  if (first.starts_with(std::string(kTool) + ": "))
    first.erase(0, std::strlen(kTool) + 2);
  std::fprintf(stderr, "%s: error: %s\n%s", kTool, needle::oneLine(first.empty() ? "failed" : first).c_str(),
               diagnostics.c_str());
}

int run(mlir::DialectRegistry &registry, const std::string &inputPath, const std::string &outputPath) {
  const std::string text = readInput(inputPath);
  needle::checkIrNesting(text, inputPath == "-" ? "<stdin>" : inputPath);
  const mlir::MlirOptMainConfig config = mlir::MlirOptMainConfig::createFromCLOptions();
  std::string message;
  std::unique_ptr<llvm::ToolOutputFile> output = mlir::openOutputFile(outputPath, &message);
  if (!output)
    needle::fail("{}: cannot write: {}", outputPath, message);
  bool ok = false;
  const std::string diagnostics = needle::capturingStderr([&] {
    ok = mlir::succeeded(
        mlir::MlirOptMain(output->os(), llvm::MemoryBuffer::getMemBufferCopy(text, inputPath), registry, config));
  });
  if (!ok) {
    reportFailure(diagnostics);
    return 1;
  }
  std::fputs(diagnostics.c_str(), stderr); // warnings and remarks, as MLIR printed them
  output->os().flush();
  if (std::error_code error = output->os().error()) {
    output->os().clear_error(); // else its destructor aborts the tool
    needle::fail("{}: cannot write: {}", outputPath == "-" ? "stdout" : outputPath, error.message());
  }
  output->keep();
  return 0;
}

/// mlir::registerAndParseCLIOptions, with a bad argument reported in the tools' one-line format
/// (llvm::cl's own report is two lines and names the binary's path): the input and output paths.
std::pair<std::string, std::string> parseOptions(int argc, char **argv, mlir::DialectRegistry &registry) {
  static llvm::cl::opt<std::string> input(llvm::cl::Positional, llvm::cl::desc("<input file>"), llvm::cl::init("-"));
  static llvm::cl::opt<std::string> output("o", llvm::cl::desc("Output filename"), llvm::cl::value_desc("filename"),
                                           llvm::cl::init("-"));
  mlir::MlirOptMainConfig::registerCLOptions(registry);
  mlir::registerAsmPrinterCLOptions();
  mlir::registerMLIRContextCLOptions();
  mlir::registerPassManagerCLOptions();
  mlir::registerDefaultTimingManagerCLOptions();
  mlir::tracing::DebugCounter::registerCLOptions();
  std::string errors;
  llvm::raw_string_ostream stream(errors);
  if (!llvm::cl::ParseCommandLineOptions(argc, argv, "needle-opt: the needle dialect and passes\n", &stream)) {
    // "<argv0>: Unknown command line argument '--x'.  Try: '<argv0> --help'\n<argv0>: Did you mean ...":
    // the first line's message, without the program's path or the advice.
    std::string message = errors.substr(0, errors.find('\n'));
    message = message.substr(std::min(message.size(), message.find(": ") + 2));
    message = message.substr(0, message.find("  Try:"));
    while (!message.empty() && (message.back() == '.' || message.back() == '!'))
      message.pop_back();
    needle::fail("{}; see needle-opt --help", message);
  }
  return {input.getValue(), output.getValue()};
}

} // namespace

int main(int argc, char **argv) {
  needle::guardStandardStreams();
  mlir::DialectRegistry registry;
  registry.insert<needle::ir::NeedleDialect, mlir::func::FuncDialect, mlir::arith::ArithDialect>();
  needle::registerNeedlePasses();
  needle::registerNeedleCodegenPasses();
  llvm::cl::SetVersionPrinter([](llvm::raw_ostream &os) { os << needle::versionText(kTool); });
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  try {
    const auto [inputPath, outputPath] = parseOptions(argc, argv, registry);
    const mlir::MlirOptMainConfig config = mlir::MlirOptMainConfig::createFromCLOptions();
    if (config.shouldShowDialects())
      return mlir::asMainReturnCode(mlir::MlirOptMain(argc, argv, inputPath, outputPath, registry));
    return run(registry, inputPath, outputPath);
  } catch (const needle::Error &e) {
    std::fprintf(stderr, "%s: error: %s\n", kTool, e.what());
    return 1;
  }
}
