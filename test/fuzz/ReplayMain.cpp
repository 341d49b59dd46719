// The main() of a harness built without libFuzzer (every build; docs/reliability.md): runs
// LLVMFuzzerTestOneInput once over each file named on the command line and each file in each
// directory named (sorted; names starting with '.' such as .gitkeep are skipped). ctest runs it
// over the seed corpus and the regressions, so a fixed finding stays fixed in every build.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

namespace fs = std::filesystem;

namespace {

void collect(const fs::path &path, std::vector<fs::path> &inputs) {
  if (!fs::is_directory(path)) {
    inputs.push_back(path);
    return;
  }
  std::vector<fs::path> files;
  for (const fs::directory_entry &entry : fs::directory_iterator(path))
    if (entry.is_regular_file() && entry.path().filename().string()[0] != '.')
      files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  inputs.insert(inputs.end(), files.begin(), files.end());
}

} // namespace

int main(int argc, char **argv) {
  std::vector<fs::path> inputs;
  for (int i = 1; i < argc; ++i) {
    if (!fs::exists(argv[i])) {
      std::fprintf(stderr, "replay: %s: no such file or directory\n", argv[i]);
      return 2;
    }
    collect(argv[i], inputs);
  }
  for (const fs::path &input : inputs) {
    std::ifstream in(input, std::ios::binary);
    std::vector<char> bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    if (!in.good() && !in.eof()) {
      std::fprintf(stderr, "replay: %s: cannot read\n", input.c_str());
      return 2;
    }
    // A buffer of exactly the input's size, as libFuzzer passes: AddressSanitizer then catches a
    // read one byte past the end.
    std::unique_ptr<uint8_t[]> data(new uint8_t[bytes.size()]);
    std::copy(bytes.begin(), bytes.end(), data.get());
    std::fprintf(stderr, "replay: %s (%zu bytes)\n", input.c_str(), bytes.size());
    LLVMFuzzerTestOneInput(data.get(), bytes.size());
  }
  std::printf("replay: %zu inputs, no finding\n", inputs.size());
  return 0;
}
