#include "Model/Quantize.h"
#include "Model/Layout.h"
#include "Support/Error.h"

namespace needle {

void quantizeModel(Model &model, std::optional<cq::CodebookKind> requested) {
  const cq::CodebookKind codebookKind = requested.value_or(cq::CodebookKind::Needle);
  const QuantScheme &scheme = model.config.quantization;
  if (scheme.isNone())
    return;
  int quantized = 0;
  for (const TensorSpec &spec : modelLayout(model.config)) {
    if (spec.role != TensorSpec::Role::Quantizable)
      continue;
    Tensor &t = model.tensors.at(spec.name);
    const int bits = scheme.bitsFor(spec.kind, spec.name);
    if (!t.isFloat() || bits == 0)
      continue;
    auto [codebook, inserted] = model.codebooks.try_emplace(bits, cq::codebook(codebookKind, bits));
    if (!inserted && requested && codebook->second != cq::codebook(*requested, bits))
      fail("--codebook: the model's pre-quantized {}-bit tensors use another codebook, and one model holds "
           "one codebook per width (quantizing \"{}\")",
           bits, spec.name);
    cq::Packed packed = cq::quantize(t.floats, t.rows(), t.cols(), bits, codebook->second, spec.name);
    t.storage = Tensor::Storage::CQ;
    t.bits = bits;
    t.packed = std::move(packed.indices);
    t.norms = std::move(packed.norms);
    t.floats = {};
    ++quantized;
  }
  if (quantized)
    model.provenance.push_back(fmt::format("quantized {} tensors: scheme {}, {} codebook", quantized, scheme.text,
                                           codebookKind == cq::CodebookKind::Needle ? "needle" : "lloyd-max"));
}

} // namespace needle
