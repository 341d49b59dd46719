#include "Model/Validate.h"

#include "Model/Layout.h"
#include "Quant/Cq.h"
#include "Support/Error.h"
#include "Support/Half.h"

#include <cmath>
#include <cstring>
#include <set>

namespace needle {

namespace {

const char *storageName(const Tensor &t) {
  switch (t.storage) {
  case Tensor::Storage::F32:
    return "F32";
  case Tensor::Storage::F16:
    return "F16";
  case Tensor::Storage::I32:
    return "I32";
  case Tensor::Storage::CQ:
    return t.bits == 2 ? "CQ2" : t.bits == 3 ? "CQ3" : "CQ4";
  }
  return "?";
}

void checkStorage(const TensorSpec &spec, const Tensor &t, const std::string &where) {
  bool ok = false;
  switch (spec.role) {
  case TensorSpec::Role::Float:
    ok = t.isFloat();
    break;
  case TensorSpec::Role::Quantizable:
    ok = t.isFloat() || t.storage == Tensor::Storage::CQ;
    break;
  case TensorSpec::Role::Permutation:
    ok = t.storage == Tensor::Storage::I32;
    break;
  }
  if (!ok)
    fail("{}: stored as {}, expected {}", where, storageName(t),
         spec.role == TensorSpec::Role::Float         ? "a float type"
         : spec.role == TensorSpec::Role::Quantizable ? "a float type or CQ"
                                                      : "I32");
}

void checkValues(const Model &model, const TensorSpec &spec, const Tensor &t, const std::string &where) {
  if (t.isFloat()) {
    for (size_t i = 0; i < t.floats.size(); ++i)
      if (!std::isfinite(t.floats[i]))
        fail("{}: element {} is not finite", where, i);
  } else if (t.storage == Tensor::Storage::CQ) {
    auto codebook = model.codebooks.find(t.bits);
    if (codebook == model.codebooks.end())
      fail("{}: CQ{} but the model has no {}-bit codebook", where, t.bits, t.bits);
    for (size_t i = 0; i < t.norms.size(); ++i) {
      float norm = halfToFloat(t.norms[i]);
      if (!std::isfinite(norm) || norm < 0)
        fail("{}: group norm {} is {} (must be finite and non-negative)", where, i, norm);
    }
  } else if (spec.role == TensorSpec::Role::Permutation) {
    std::vector<bool> seen(t.ints.size(), false);
    for (int32_t v : t.ints) {
      if (v < 0 || static_cast<size_t>(v) >= t.ints.size() || seen[v])
        fail("{}: is not a permutation of 0..{}", where, t.ints.size() - 1);
      seen[v] = true;
    }
  }
}

} // namespace

void validateModel(const Model &model, std::string_view source) {
  for (const auto &[bits, values] : model.codebooks) {
    if (bits < 2 || bits > 4)
      fail("{}: codebook for {} bits: only 2, 3 and 4 are supported", source, bits);
    cq::validateCodebook(values, bits, source);
  }
  std::set<std::string> expected;
  for (const TensorSpec &spec : modelLayout(model.config)) {
    expected.insert(spec.name);
    const std::string where = fmt::format("{}: tensor \"{}\"", source, spec.name);
    auto it = model.tensors.find(spec.name);
    if (it == model.tensors.end()) {
      if (spec.optional)
        continue;
      fail("{}: missing (the config needs it with shape {})", where, shapeString(spec.shape));
    }
    const Tensor &t = it->second;
    if (t.shape != spec.shape)
      fail("{}: shape {} does not match the config's {}", where, shapeString(t.shape), shapeString(spec.shape));
    checkStorage(spec, t, where);
    checkValues(model, spec, t, where);
  }
  for (const auto &[name, t] : model.tensors)
    if (!expected.count(name))
      fail("{}: tensor \"{}\": unknown; the config has no such tensor", source, name);
}

void setPlainPayload(Tensor &t, std::span<const uint8_t> bytes, std::string_view where) {
  const size_t width = t.storage == Tensor::Storage::F16 ? 2 : 4;
  const uint64_t count = checkedElementCount(t.shape, where);
  if (bytes.size() != count * width)
    fail("{}: {} bytes, but shape {} needs {}", where, bytes.size(), shapeString(t.shape), count * width);
  if (t.storage == Tensor::Storage::I32) {
    t.ints.resize(count);
    std::memcpy(t.ints.data(), bytes.data(), bytes.size());
  } else if (t.storage == Tensor::Storage::F32) {
    t.floats.resize(count);
    std::memcpy(t.floats.data(), bytes.data(), bytes.size());
  } else {
    t.floats.resize(count);
    for (uint64_t i = 0; i < count; ++i)
      t.floats[i] = halfToFloat(static_cast<uint16_t>(bytes[2 * i] | bytes[2 * i + 1] << 8));
  }
}

void setCqPayload(Tensor &t, std::span<const uint8_t> bytes, std::string_view where) {
  checkedElementCount(t.shape, where);
  if (t.shape.empty() || t.cols() == 0)
    fail("{}: a CQ tensor needs a non-empty last dimension", where);
  const uint64_t packedBytes = static_cast<uint64_t>(t.rows()) * cq::packedRowBytes(t.cols(), t.bits);
  const uint64_t normCount = static_cast<uint64_t>(t.rows()) * cq::groupsPerRow(t.cols());
  if (bytes.size() != packedBytes + 2 * normCount)
    fail("{}: {} bytes, but CQ{} of shape {} needs {}", where, bytes.size(), t.bits, shapeString(t.shape),
         packedBytes + 2 * normCount);
  t.packed.assign(bytes.begin(), bytes.begin() + packedBytes);
  t.norms.resize(normCount);
  std::memcpy(t.norms.data(), bytes.data() + packedBytes, 2 * normCount);
}

} // namespace needle
