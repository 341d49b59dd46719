#include "Model/Model.h"

#include "Quant/Cq.h"
#include "Support/Error.h"

namespace needle {

int64_t Tensor::elements() const {
  int64_t count = 1;
  for (int64_t dim : shape)
    count *= dim;
  return count;
}

uint64_t Tensor::storedBytes() const {
  switch (storage) {
  case Storage::F32:
  case Storage::I32:
    return 4 * elements();
  case Storage::F16:
    return 2 * elements();
  case Storage::CQ:
    return packed.size() + 2 * norms.size();
  }
  return 0;
}

const Tensor &Model::tensor(const std::string &name) const {
  auto it = tensors.find(name);
  if (it == tensors.end())
    fail("tensor \"{}\" is missing", name);
  return it->second;
}

std::vector<float> Model::floats(const std::string &name) const {
  const Tensor &t = tensor(name);
  if (t.isFloat())
    return t.floats;
  if (t.storage != Tensor::Storage::CQ)
    fail("tensor \"{}\" is not a float tensor", name);
  std::vector<float> values(t.elements());
  cq::dequantizeRows(t.packed.data(), t.norms.data(), 0, t.rows(), t.cols(), t.bits, codebooks.at(t.bits),
                     values.data());
  return values;
}

int64_t Model::parameterCount() const {
  int64_t count = 0;
  for (const auto &[name, t] : tensors)
    if (t.storage != Tensor::Storage::I32)
      count += t.elements();
  return count;
}

} // namespace needle
