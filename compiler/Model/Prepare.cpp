#include "Model/Prepare.h"

#include "Model/Ladder.h"
#include "Model/Lora.h"
#include "Model/ModelFiles.h"
#include "Model/ModelTokenizer.h"
#include "Model/Quantize.h"
#include "Model/Slice.h"

namespace needle {

Model prepareModel(const std::filesystem::path &input, const PrepareOptions &options, bool *transformed) {
  const bool noTokenizer = options.tokenizer && *options.tokenizer == "none";
  Model model = loadModel(input, !options.tokenizer); // a --tokenizer replaces it: no need to read it

  const size_t steps = model.provenance.size(); // every transform records itself
  // Check the depth before the slow steps, so a bad --layers fails at once.
  for (const std::optional<int64_t> &depth : {options.shallowest, options.layers})
    if (depth)
      validateDepth(*depth, model.config.numLayers, input.string());
  if (options.tokenizer && !noTokenizer)
    readTokenizer(model, *options.tokenizer);
  if (options.lora)
    mergeLora(model, *options.lora);
  // Quantizing before slicing keeps scheme prefixes (e.g. "blocks.3") naming the input's blocks.
  quantizeModel(model, options.codebook);
  if (options.layers && *options.layers != model.config.numLayers)
    model = sliceModel(model, *options.layers, input.string());
  if (transformed)
    *transformed = model.provenance.size() != steps;
  return model;
}

} // namespace needle
