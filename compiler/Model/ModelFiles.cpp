#include "Model/ModelFiles.h"

#include "Model/Layout.h"
#include "Model/ModelTokenizer.h"
#include "Model/NeedleFile.h"
#include "Model/Safetensors.h"
#include "Model/Validate.h"
#include "Quant/Cq.h"
#include "Support/Error.h"
#include "Support/Files.h"
#include "Support/Half.h"
#include "Support/Limits.h"
#include "Support/Text.h"

#include "Support/Json.h"
#include <charconv>
#include <cstring>
#include <set>

namespace fs = std::filesystem;

namespace needle {

namespace {

constexpr std::string_view kIdx = ".cq_idx", kNorm = ".cq_norm", kBits = ".cq_bits";

std::vector<float> parseCodebook(const std::string &text, const std::string &where) {
  std::vector<float> values;
  for (std::string_view item : splitList(text)) {
    item.remove_prefix(std::min(item.find_first_not_of(' '), item.size()));
    double value = 0;
    auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), value);
    if (item.empty() || ec != std::errc() || ptr != item.data() + item.size())
      fail("{}: \"{}\" is not a number", where, item);
    values.push_back(static_cast<float>(value));
  }
  return values;
}

const SafetensorsEntry &need(const SafetensorsFile &file, const std::string &name, DType dtype,
                             const std::string &where) {
  const SafetensorsEntry *entry = file.find(name);
  if (!entry)
    fail("{}: \"{}\" is missing", where, name);
  if (entry->dtype != dtype)
    fail("{}: \"{}\" is {}, expected {}", where, name, dtypeName(entry->dtype), dtypeName(dtype));
  return *entry;
}

Tensor readPrequantized(const SafetensorsFile &file, const TensorSpec &spec, const std::string &where) {
  const SafetensorsEntry &bitsEntry = need(file, spec.name + std::string(kBits), DType::U8, where);
  if (bitsEntry.elements() != 1)
    fail("{}: \"{}{}\" must hold one byte", where, spec.name, kBits);
  Tensor t;
  t.storage = Tensor::Storage::CQ;
  t.shape = spec.shape;
  t.bits = file.bytes(bitsEntry)[0];
  if (t.bits < 2 || t.bits > 4)
    fail("{}: {} bits is not supported (2, 3 or 4)", where, t.bits);
  const SafetensorsEntry &idx = need(file, spec.name + std::string(kIdx), DType::U8, where);
  const SafetensorsEntry &norm = need(file, spec.name + std::string(kNorm), DType::F16, where);
  std::vector<int64_t> idxShape(spec.shape.begin(), spec.shape.end() - 1), normShape = idxShape;
  idxShape.push_back(cq::packedRowBytes(spec.shape.back(), t.bits));
  normShape.push_back(cq::groupsPerRow(spec.shape.back()));
  if (idx.shape != idxShape)
    fail("{}: \"{}{}\" has shape {}, CQ{} of {} needs {}", where, spec.name, kIdx, shapeString(idx.shape), t.bits,
         shapeString(spec.shape), shapeString(idxShape));
  if (norm.shape != normShape)
    fail("{}: \"{}{}\" has shape {}, CQ{} of {} needs {}", where, spec.name, kNorm, shapeString(norm.shape), t.bits,
         shapeString(spec.shape), shapeString(normShape));
  auto idxBytes = file.bytes(idx), normBytes = file.bytes(norm);
  t.packed.assign(idxBytes.begin(), idxBytes.end());
  t.norms.resize(norm.elements());
  std::memcpy(t.norms.data(), normBytes.data(), normBytes.size());
  return t;
}

Tensor readPlain(const SafetensorsFile &file, const SafetensorsEntry &entry, const std::string &where) {
  Tensor t;
  t.shape = entry.shape;
  switch (entry.dtype) {
  case DType::I32:
    t.storage = Tensor::Storage::I32;
    setPlainPayload(t, file.bytes(entry), where);
    break;
  case DType::F32:
  case DType::F16:
  case DType::BF16:
    // BF16 has no .needle form; its values are exact in F32.
    t.storage = entry.dtype == DType::F16 ? Tensor::Storage::F16 : Tensor::Storage::F32;
    t.floats = file.floats(entry);
    break;
  case DType::U8:
    fail("{}: dtype U8 is only allowed in pre-quantized .cq_idx / .cq_bits tensors", where);
  }
  return t;
}

} // namespace

Model loadSafetensorsModel(const fs::path &configPath, const fs::path &tensorsPath) {
  std::vector<uint8_t> configBytes = readFile(configPath, kMaxConfigBytes);
  const Config config = parseConfig(
      std::string_view(reinterpret_cast<const char *>(configBytes.data()), configBytes.size()), configPath.string());
  return modelFromSafetensors(config, SafetensorsFile::read(tensorsPath));
}

Model modelFromSafetensors(const Config &config, const SafetensorsFile &file) {
  Model model;
  model.config = config;
  const std::string &source = file.path();
  std::set<std::string> claimed;
  for (const TensorSpec &spec : modelLayout(model.config)) {
    const std::string where = fmt::format("{}: tensor \"{}\"", source, spec.name);
    if (spec.role == TensorSpec::Role::Quantizable && file.find(spec.name + std::string(kBits))) {
      if (file.find(spec.name))
        fail("{}: given both as float and pre-quantized", where);
      model.tensors[spec.name] = readPrequantized(file, spec, where);
      for (auto suffix : {kIdx, kNorm, kBits})
        claimed.insert(spec.name + std::string(suffix));
    } else if (const SafetensorsEntry *entry = file.find(spec.name)) {
      model.tensors[spec.name] = readPlain(file, *entry, where);
      claimed.insert(spec.name);
    }
  }
  for (const SafetensorsEntry &entry : file.entries())
    if (!claimed.count(entry.name))
      fail("{}: tensor \"{}\": unknown; the config has no such tensor", source, entry.name);
  for (const auto &[key, value] : file.metadata()) {
    if (!key.starts_with("cq_codebook_"))
      continue;
    const std::string suffix = key.substr(std::strlen("cq_codebook_"));
    if (suffix != "2" && suffix != "3" && suffix != "4")
      fail("{}: __metadata__.{}: only cq_codebook_2, _3 and _4 exist", source, key);
    model.codebooks[suffix[0] - '0'] = parseCodebook(value, fmt::format("{}: __metadata__.{}", source, key));
  }
  for (const auto &[name, t] : model.tensors)
    if (t.storage == Tensor::Storage::CQ && !model.codebooks.count(t.bits))
      model.codebooks[t.bits] = cq::codebook(cq::CodebookKind::Needle, t.bits);
  model.provenance.push_back("read " + fs::path(source).filename().string());
  validateModel(model, source);
  return model;
}

namespace {

/// The model of config.json + `tensorsPath`, with the tokenizer.json beside config.json if any
/// and `withTokenizer`.
Model loadModelBeside(const fs::path &dir, const fs::path &tensorsPath, bool withTokenizer) {
  Model model = loadSafetensorsModel(dir / "config.json", tensorsPath);
  std::error_code ec;
  if (withTokenizer && fs::exists(dir / "tokenizer.json", ec))
    readTokenizer(model, dir / "tokenizer.json");
  return model;
}

} // namespace

Model loadModel(const fs::path &path, bool withTokenizer) {
  std::error_code ec;
  if (!fs::exists(path, ec))
    fail("{}: no such file or directory", path.string());
  if (fs::is_directory(path, ec))
    return loadModelBeside(path, path / "model.safetensors", withTokenizer);
  if (path.extension() == ".safetensors")
    return loadModelBeside(path.parent_path(), path, withTokenizer);
  if (path.extension() == ".needle" || looksLikeNeedle(readFileHead(path, 12).bytes)) {
    Model model = parseNeedle(readNeedleFile(path), path.string());
    if (!withTokenizer) {
      model.tokenizerJson.clear();
      model.tokenizerConfigJson.clear();
    }
    return model;
  }
  fail("{}: not a model: expected a .needle file, a directory with config.json and model.safetensors, "
       "or a .safetensors file",
       path.string());
}

void writeSafetensorsModel(const Model &model, const fs::path &dir) {
  writeFile(dir / "config.json", writeConfig(model.config));
  std::vector<SafetensorsWriteEntry> entries;
  auto asBytes = [](const void *data, size_t size) {
    const auto *p = static_cast<const uint8_t *>(data);
    return std::vector<uint8_t>(p, p + size);
  };
  for (const auto &[name, t] : model.tensors) {
    switch (t.storage) {
    case Tensor::Storage::F32:
      entries.push_back({name, DType::F32, t.shape, asBytes(t.floats.data(), 4 * t.floats.size())});
      break;
    case Tensor::Storage::F16: {
      std::vector<uint16_t> halves(t.floats.size());
      for (size_t i = 0; i < halves.size(); ++i)
        halves[i] = floatToHalf(t.floats[i]);
      entries.push_back({name, DType::F16, t.shape, asBytes(halves.data(), 2 * halves.size())});
      break;
    }
    case Tensor::Storage::I32:
      entries.push_back({name, DType::I32, t.shape, asBytes(t.ints.data(), 4 * t.ints.size())});
      break;
    case Tensor::Storage::CQ: {
      std::vector<int64_t> idxShape(t.shape.begin(), t.shape.end() - 1), normShape = idxShape;
      idxShape.push_back(cq::packedRowBytes(t.cols(), t.bits));
      normShape.push_back(cq::groupsPerRow(t.cols()));
      entries.push_back({name + std::string(kIdx), DType::U8, idxShape, t.packed});
      entries.push_back(
          {name + std::string(kNorm), DType::F16, normShape, asBytes(t.norms.data(), 2 * t.norms.size())});
      entries.push_back({name + std::string(kBits), DType::U8, {1}, {static_cast<uint8_t>(t.bits)}});
      break;
    }
    }
  }
  std::map<std::string, std::string> metadata;
  for (const auto &[bits, values] : model.codebooks) {
    std::string text;
    for (size_t i = 0; i < values.size(); ++i)
      text += (i ? "," : "") + json::formatNumber(values[i]);
    metadata[fmt::format("cq_codebook_{}", bits)] = text;
  }
  writeSafetensors(dir / "model.safetensors", entries, metadata);
  if (!model.tokenizerJson.empty())
    writeFile(dir / "tokenizer.json", model.tokenizerJson);
  if (!model.tokenizerConfigJson.empty())
    writeFile(dir / "tokenizer_config.json", model.tokenizerConfigJson);
}

void writeNeedleModel(const Model &model, const fs::path &path) { writeFile(path, serializeNeedle(model)); }

} // namespace needle
