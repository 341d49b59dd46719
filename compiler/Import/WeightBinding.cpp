#include "Import/WeightBinding.h"

#include "Model/Layout.h"
#include "Model/Permutation.h"
#include "Quant/Cq.h"
#include "Support/Error.h"

#include <algorithm>

using namespace mlir;
using namespace needle::ir;

namespace needle {

namespace {

std::string typeText(Type type) {
  std::string text;
  llvm::raw_string_ostream stream(text);
  stream << type;
  return stream.str();
}

/// The head tensors with one row per source block (plus x0's): the ones `rows` may select from.
bool isHeadRowTensor(std::string_view name) {
  return (name.starts_with("confidence.") || name.starts_with("embedding_head.")) &&
         (name.ends_with(".probes") || name.ends_with(".gain") || name.ends_with(".row_bias"));
}

bool isDefaultPermutation(const Model &model, const std::string &name) {
  return (name == "mlp.p1" || name == "mlp.p2") && !model.tensors.count(name);
}

} // namespace

WeightBinding::WeightBinding(const Model &model) : model_(model), sources_(model.config.sources()) {}

std::string WeightBinding::tensorName(WeightOp op) const {
  const std::string leaf = op.getName().str();
  return op.getBlockAttr() ? sourceTensorName(model_.config, leaf, op.getBlockAttr().getInt()) : leaf;
}

const Tensor &WeightBinding::tensor(WeightOp op) {
  const std::string name = tensorName(op);
  const Tensor &t = model_.tensor(name);
  if (!checked_.insert(op).second)
    return t;
  std::vector<int64_t> shape = t.shape;
  if (op.getRowsAttr() && !isHeadRowTensor(name))
    fail("weight \"{}\": `rows` selects head rows; only a head's probes, gain and row_bias have them", name);
  if (op.getRowsAttr())
    shape[headRowAxis(name)] = static_cast<int64_t>(op.getRowsAttr().size()) + 1;
  bool ok;
  if (auto cq = dyn_cast<CqType>(op.getType())) {
    ok = t.storage == Tensor::Storage::CQ && static_cast<int>(cq.getBits()) == t.bits && cq.getGroup() == cq::kGroup &&
         cq.getShape() == ArrayRef<int64_t>(shape);
  } else {
    auto type = cast<RankedTensorType>(op.getType());
    const bool isInt = type.getElementType().isInteger(32);
    ok = type.getShape() == ArrayRef<int64_t>(shape) && isInt == (t.storage == Tensor::Storage::I32);
  }
  if (!ok)
    fail("weight \"{}\": the IR says {}, the model file holds {} {}", name, typeText(op.getType()),
         t.storage == Tensor::Storage::CQ ? fmt::format("CQ{}", t.bits) : std::string("float"), shapeString(shape));
  return t;
}

std::vector<float> WeightBinding::floats(WeightOp op) {
  const std::string name = tensorName(op);
  const Tensor &t = tensor(op);
  if (!op.getRows())
    return model_.floats(name);
  std::vector<int64_t> rows = {0};
  for (int64_t source : op.getRowsAttr().asArrayRef()) {
    auto it = std::find(sources_.begin(), sources_.end(), source);
    if (it == sources_.end())
      fail("weight \"{}\": the model file has no head row for source block {}", name, source);
    rows.push_back(it - sources_.begin() + 1);
    if (rows.back() >= t.shape[headRowAxis(name)])
      fail("weight \"{}\": the model file has no head row for source block {}", name, source);
  }
  return selectRows(model_.floats(name), t.shape, headRowAxis(name), rows);
}

std::vector<int32_t> WeightBinding::ints(WeightOp op) {
  const std::string name = tensorName(op);
  std::vector<int32_t> values =
      isDefaultPermutation(model_, name) ? mlpPermutation(model_, name == "mlp.p1" ? 1 : 2) : tensor(op).ints;
  if (static_cast<int64_t>(values.size()) != cast<RankedTensorType>(op.getType()).getDimSize(0))
    fail("weight \"{}\": the IR says {}, the permutation has {} entries", name, typeText(op.getType()), values.size());
  return values;
}

} // namespace needle
