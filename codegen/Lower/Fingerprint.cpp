#include "codegen/Lower/Fingerprint.h"

#include "Support/Version.h"

#include <span>
#include <string>

namespace needle {

namespace {

class Fnv1a {
public:
  void add(std::span<const uint8_t> bytes) {
    for (uint8_t b : bytes)
      hash_ = (hash_ ^ b) * 0x100000001B3u;
    add(bytes.size()); // lengths too, so two fields never run into each other
  }
  void add(std::string_view text) { add(std::span(reinterpret_cast<const uint8_t *>(text.data()), text.size())); }
  void add(uint64_t value) {
    for (int i = 0; i < 8; ++i)
      hash_ = (hash_ ^ ((value >> (8 * i)) & 0xFF)) * 0x100000001B3u;
  }
  uint64_t value() const { return hash_; }

private:
  uint64_t hash_ = 0xCBF29CE484222325u;
};

} // namespace

uint64_t modelFingerprint(const KernelProgram &program, std::string_view build) {
  Fnv1a h;
  h.add(versionString());
  h.add(build);
  for (const RungProgram &rung : program.rungs) {
    const ModelFacts &f = rung.facts;
    for (int64_t fact : {f.arenaSize, f.arenaAlign, f.outputsEnd, f.maxSeqLen, f.vocabSize, f.embeddingDim, f.batch,
                         f.logits, f.dModel, f.numLayers, int64_t(f.bosId), int64_t(f.eosId), f.tokenLog})
      h.add(static_cast<uint64_t>(fact));
    for (int32_t stop : f.stopIds)
      h.add(static_cast<uint64_t>(stop));
  }
  h.add(program.weights);
  h.add(program.tokenizer);
  h.add(program.calls);
  return h.value();
}

} // namespace needle
