#include "codegen/Lower/AddressSpace.h"

#include "Support/Error.h"

namespace needle {

int64_t largestObject(unsigned pointerBits) {
  return pointerBits >= 64 ? INT64_MAX : (int64_t{1} << (pointerBits - 1)) - 1;
}

void checkFitsAddressSpace(const KernelProgram &program, unsigned pointerBits, const std::string &target) {
  const int64_t limit = largestObject(pointerBits);
  for (const RungProgram &rung : program.rungs) {
    const ModelFacts &f = rung.facts;
    if (f.arenaSize > limit)
      fail("{}: the session arena needs {} bytes, more than a {}-bit target addresses ({}); lower max_seq_len ({}) "
           "with --max-seq",
           target, f.arenaSize, pointerBits, limit, f.maxSeqLen);
  }
  if (static_cast<int64_t>(program.weights.size()) > limit)
    fail("{}: the weights take {} bytes, more than a {}-bit target addresses ({})", target, program.weights.size(),
         pointerBits, limit);
}

} // namespace needle
