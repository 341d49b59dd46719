#include "Model/NeedleFile.h"

#include "Model/Layout.h"
#include "Model/ModelTokenizer.h"
#include "Model/Validate.h"
#include "Support/Error.h"
#include "Support/Files.h"
#include "Support/Half.h"
#include "Support/RoundUp.h"
#include "needle_generated.h"

#include <algorithm>
#include <cstring>

namespace needle {

namespace {

fb::TensorFormat formatOf(const Tensor &t) {
  switch (t.storage) {
  case Tensor::Storage::F32:
    return fb::TensorFormat::F32;
  case Tensor::Storage::F16:
    return fb::TensorFormat::F16;
  case Tensor::Storage::I32:
    return fb::TensorFormat::I32;
  case Tensor::Storage::CQ:
    return static_cast<fb::TensorFormat>(t.bits);
  }
  return fb::TensorFormat::F32;
}

/// "blocks.3.attn.q" -> {"blocks.3", "attn.q"}; "embed.weight" -> {"", "embed.weight"}.
std::pair<std::string, std::string> splitName(const std::string &name) {
  const TensorOwner owner = tensorOwner(name);
  if (owner.kind == TensorOwner::Kind::Model)
    return {"", name};
  return {name.substr(0, name.size() - owner.leaf.size() - 1), owner.leaf};
}

void appendPayload(std::vector<uint8_t> &payload, const Tensor &t) {
  auto append = [&](const void *data, size_t bytes) {
    const auto *p = static_cast<const uint8_t *>(data);
    payload.insert(payload.end(), p, p + bytes);
  };
  switch (t.storage) {
  case Tensor::Storage::F32:
    append(t.floats.data(), 4 * t.floats.size());
    break;
  case Tensor::Storage::I32:
    append(t.ints.data(), 4 * t.ints.size());
    break;
  case Tensor::Storage::F16:
    for (float v : t.floats) {
      uint16_t h = floatToHalf(v);
      append(&h, 2);
    }
    break;
  case Tensor::Storage::CQ:
    append(t.packed.data(), t.packed.size());
    append(t.norms.data(), 2 * t.norms.size());
    break;
  }
}

flatbuffers::Offset<fb::Config> buildConfig(flatbuffers::FlatBufferBuilder &b, const Config &c) {
  // Nested vectors and strings must exist before the table is started.
#define NEEDLE_CONFIG_LIST(key, member) auto key = b.CreateVector(c.member);
#include "Model/ConfigFields.def"
  auto scheme = b.CreateString(c.quantization.text);
  fb::ConfigBuilder cb(b);
#define NEEDLE_CONFIG_INT(key, member, init) cb.add_##key(c.member);
#define NEEDLE_CONFIG_REAL(key, member) cb.add_##key(c.member);
#define NEEDLE_CONFIG_LIST(key, member) cb.add_##key(key);
#include "Model/ConfigFields.def"
  cb.add_quantization_scheme(scheme);
  cb.add_quantization_group_size(c.quantization.groupSize);
  return cb.Finish();
}

/// FlatBuffers' verifier aligns a vector's length field, not its 8-byte elements, so a crafted
/// file can misalign them: read each element bytewise.
template <typename T> std::vector<int64_t> longs(const flatbuffers::Vector<T> *v) {
  std::vector<int64_t> out;
  if (!v)
    return out;
  out.reserve(v->size());
  for (uint32_t i = 0; i < v->size(); ++i) {
    T value;
    std::memcpy(&value, v->Data() + size_t(i) * sizeof(T), sizeof(T));
    out.push_back(flatbuffers::EndianScalar(value));
  }
  return out;
}

Config readConfig(const fb::Config *c, std::string_view source) {
  if (!c)
    fail("{}: config: missing", source);
  Config config;
#define NEEDLE_CONFIG_INT(key, member, init) config.member = c->key();
#define NEEDLE_CONFIG_REAL(key, member) config.member = c->key();
#define NEEDLE_CONFIG_LIST(key, member) config.member = longs(c->key());
#include "Model/ConfigFields.def"
  config.quantization = parseScheme(c->quantization_scheme() ? c->quantization_scheme()->str() : "",
                                    c->quantization_group_size(), source);
  return config;
}

} // namespace

std::vector<uint8_t> serializeNeedle(const Model &model) {
  flatbuffers::FlatBufferBuilder b(1 << 16);
  b.ForceDefaults(false);
  // Payload first: tensors grouped by owner, each group in name order, each 64-byte aligned.
  std::map<std::string, std::vector<std::pair<std::string, const Tensor *>>> groups;
  for (const auto &[name, t] : model.tensors) {
    auto [prefix, leaf] = splitName(name);
    groups[prefix].emplace_back(leaf, &t);
  }
  std::vector<uint8_t> payload;
  std::map<std::vector<int64_t>, flatbuffers::Offset<flatbuffers::Vector<uint32_t>>> shapes;
  std::vector<flatbuffers::Offset<fb::TensorGroup>> groupOffsets;
  for (const auto &[prefix, members] : groups) {
    std::vector<flatbuffers::Offset<fb::Tensor>> tensors;
    for (const auto &[leaf, t] : members) {
      payload.resize(roundUp(payload.size(), kNeedleAlignment), 0);
      const uint64_t offset = payload.size();
      appendPayload(payload, *t);
      if (payload.size() > UINT32_MAX)
        fail("the model is too large for the .needle format (4 GiB of payload at most)");
      auto name = b.CreateSharedString(leaf);
      auto &shape = shapes[t->shape];
      if (shape.IsNull())
        shape = b.CreateVector(std::vector<uint32_t>(t->shape.begin(), t->shape.end()));
      tensors.push_back(fb::CreateTensor(b, name, formatOf(*t), shape, static_cast<uint32_t>(offset),
                                         static_cast<uint32_t>(t->storedBytes())));
    }
    groupOffsets.push_back(fb::CreateTensorGroup(b, b.CreateString(prefix), b.CreateVector(tensors)));
  }
  std::vector<flatbuffers::Offset<fb::Codebook>> codebooks;
  for (const auto &[bits, values] : model.codebooks)
    codebooks.push_back(fb::CreateCodebook(b, static_cast<uint8_t>(bits), b.CreateVector(values)));
  std::vector<flatbuffers::Offset<flatbuffers::String>> provenance;
  for (const auto &line : model.provenance)
    provenance.push_back(b.CreateString(line));
  auto config = buildConfig(b, model.config);
  auto tokenizer = model.tokenizerJson.empty() ? 0 : b.CreateString(model.tokenizerJson);
  auto tokenizerConfig = model.tokenizerConfigJson.empty() ? 0 : b.CreateString(model.tokenizerConfigJson);
  auto root =
      fb::CreateModel(b, kNeedleFormatVersion, config, b.CreateVector(model.config.order()),
                      b.CreateVector(model.config.sources()), b.CreateVector(codebooks), b.CreateVector(provenance),
                      payload.size(), b.CreateVector(groupOffsets), tokenizer, tokenizerConfig);
  fb::FinishSizePrefixedModelBuffer(b, root);

  std::vector<uint8_t> file(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
  file.resize(roundUp(file.size(), kNeedleAlignment), 0);
  file.insert(file.end(), payload.begin(), payload.end());
  return file;
}

bool looksLikeNeedle(std::span<const uint8_t> bytes) {
  // A size-prefixed buffer: the 4-byte size, the 4-byte root offset, then the identifier.
  return bytes.size() >= 12 && flatbuffers::BufferHasIdentifier(bytes.data(), fb::ModelIdentifier(), true);
}

namespace {

/// The header's size from a buffer's first bytes, checked against the file's `fileSize` bytes.
uint32_t headerSizeOf(std::span<const uint8_t> bytes, uint64_t fileSize, std::string_view source) {
  if (!looksLikeNeedle(bytes))
    fail("{}: not a .needle file (no NEDL identifier)", source);
  const uint32_t headerSize = flatbuffers::ReadScalar<uint32_t>(bytes.data());
  if (headerSize > fileSize - 4)
    fail("{}: truncated: the header says {} bytes, the file has {}", source, uint64_t(headerSize) + 4, fileSize);
  return headerSize;
}

/// The verified header at the start of `bytes` (at least its size prefix + header), whose payload
/// must end the file of `fileSize` bytes exactly.
const fb::Model *verifiedHeader(std::span<const uint8_t> bytes, uint64_t fileSize, std::string_view source) {
  const uint32_t headerSize = headerSizeOf(bytes, fileSize, source);
  flatbuffers::Verifier verifier(bytes.data(), headerSize + 4, /*max_depth=*/64, /*max_tables=*/1000000);
  if (!fb::VerifySizePrefixedModelBuffer(verifier))
    fail("{}: the FlatBuffers header failed verification (corrupt file)", source);
  const fb::Model *root = fb::GetSizePrefixedModel(bytes.data());
  if (root->format_version() != kNeedleFormatVersion)
    fail("{}: format_version {} is not supported (this needlec reads {})", source, root->format_version(),
         kNeedleFormatVersion);
  const uint64_t payloadStart = roundUp(headerSize + 4, kNeedleAlignment);
  if (fileSize < payloadStart || fileSize - payloadStart != root->payload_size())
    fail("{}: truncated or padded: the payload should be {} bytes, the file holds {}", source, root->payload_size(),
         fileSize < payloadStart ? 0 : fileSize - payloadStart);
  return root;
}

} // namespace

std::vector<uint8_t> readNeedleFile(const std::filesystem::path &path) {
  const std::string source = path.string();
  const FileHead prefix = readFileHead(path, 12);
  const FileHead header = readFileHead(path, uint64_t(headerSizeOf(prefix.bytes, prefix.size, source)) + 4);
  verifiedHeader(header.bytes, header.size, source);
  return readFile(path);
}

Model parseNeedle(std::span<const uint8_t> bytes, std::string_view source) {
  const fb::Model *root = verifiedHeader(bytes, bytes.size(), source);
  const uint8_t *payload =
      bytes.data() + roundUp(flatbuffers::ReadScalar<uint32_t>(bytes.data()) + 4, kNeedleAlignment);

  Model model;
  model.config = readConfig(root->config(), source);
  model.config.ladderOrder = longs(root->ladder_order());
  model.config.sourceBlocks = longs(root->source_blocks());
  validateConfig(model.config, source);
  if (root->codebooks())
    for (const fb::Codebook *c : *root->codebooks()) {
      std::vector<float> values =
          c->values() ? std::vector<float>(c->values()->begin(), c->values()->end()) : std::vector<float>{};
      if (model.codebooks.count(c->bits()))
        fail("{}: codebooks: two codebooks for {} bits", source, c->bits());
      model.codebooks[c->bits()] = std::move(values);
    }
  if (root->provenance())
    for (const auto *line : *root->provenance())
      model.provenance.push_back(line->str());

  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  if (root->groups())
    for (const fb::TensorGroup *group : *root->groups()) {
      const std::string prefix = group->prefix() ? group->prefix()->str() : "";
      if (!group->tensors())
        continue;
      for (const fb::Tensor *entry : *group->tensors()) {
        const std::string leaf = entry->name() ? entry->name()->str() : "";
        const std::string name = prefix.empty() ? leaf : prefix + "." + leaf;
        const std::string where = fmt::format("{}: tensor \"{}\"", source, name);
        if (entry->offset() % kNeedleAlignment)
          fail("{}: offset {} is not a multiple of {}", where, entry->offset(), kNeedleAlignment);
        if (uint64_t{entry->offset()} + entry->size() > root->payload_size())
          fail("{}: bytes [{}, {}) run past the payload ({} bytes)", where, entry->offset(),
               uint64_t{entry->offset()} + entry->size(), root->payload_size());
        ranges.emplace_back(entry->offset(), uint64_t{entry->offset()} + entry->size());
        Tensor t;
        if (entry->shape())
          t.shape.assign(entry->shape()->begin(), entry->shape()->end());
        const uint8_t *data = payload + entry->offset();
        const auto format = entry->format();
        if (format == fb::TensorFormat::CQ2 || format == fb::TensorFormat::CQ3 || format == fb::TensorFormat::CQ4) {
          t.storage = Tensor::Storage::CQ;
          t.bits = static_cast<int>(format);
          setCqPayload(t, std::span(data, entry->size()), where);
        } else if (format == fb::TensorFormat::F32 || format == fb::TensorFormat::F16 ||
                   format == fb::TensorFormat::I32) {
          t.storage = format == fb::TensorFormat::F32   ? Tensor::Storage::F32
                      : format == fb::TensorFormat::F16 ? Tensor::Storage::F16
                                                        : Tensor::Storage::I32;
          setPlainPayload(t, std::span(data, entry->size()), where);
        } else {
          fail("{}: unknown format {}", where, static_cast<int>(format));
        }
        if (!model.tensors.emplace(name, std::move(t)).second)
          fail("{}: appears twice", where);
      }
    }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i)
    if (ranges[i].first < ranges[i - 1].second)
      fail("{}: two tensors overlap at payload byte {}", source, ranges[i].first);
  validateModel(model, source);
  if (root->tokenizer_config_json() && !root->tokenizer_json())
    fail("{}: tokenizer_config_json: present without tokenizer_json", source);
  if (root->tokenizer_json())
    setTokenizer(model, root->tokenizer_json()->str(), fmt::format("{}: tokenizer_json", source),
                 root->tokenizer_config_json() ? root->tokenizer_config_json()->str() : std::string(),
                 fmt::format("{}: tokenizer_config_json", source));
  return model;
}

} // namespace needle
