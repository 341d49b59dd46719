#include "Model/Safetensors.h"

#include "Model/Layout.h"
#include "Support/Error.h"
#include "Support/Files.h"
#include "Support/Half.h"
#include "Support/Json.h"
#include "Support/Limits.h"

#include <algorithm>
#include <cstring>

namespace needle {

const char *dtypeName(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "F32";
  case DType::F16:
    return "F16";
  case DType::BF16:
    return "BF16";
  case DType::U8:
    return "U8";
  case DType::I32:
    return "I32";
  }
  return "?";
}

size_t dtypeSize(DType dtype) {
  switch (dtype) {
  case DType::F32:
  case DType::I32:
    return 4;
  case DType::F16:
  case DType::BF16:
    return 2;
  case DType::U8:
    return 1;
  }
  return 0;
}

int64_t SafetensorsEntry::elements() const {
  int64_t count = 1;
  for (int64_t dim : shape)
    count *= dim;
  return count;
}

namespace {

DType parseDType(const std::string &text, const std::string &where) {
  for (DType dtype : {DType::F32, DType::F16, DType::BF16, DType::U8, DType::I32})
    if (text == dtypeName(dtype))
      return dtype;
  fail("{}: dtype \"{}\" is not supported (F32, F16, BF16, U8, I32)", where, text);
}

uint64_t parseOffset(const json::Value &v, const std::string &where) {
  if (v.kind != json::Value::Kind::Number || !v.isInteger || v.integer < 0)
    fail("{}: data_offsets must be two non-negative integers", where);
  return static_cast<uint64_t>(v.integer);
}

SafetensorsEntry parseEntry(const std::string &name, const json::Value &v, const std::string &where) {
  if (v.kind != json::Value::Kind::Object)
    fail("{}: expected an object", where);
  SafetensorsEntry entry;
  entry.name = name;
  const json::Value *dtype = v.find("dtype"), *shape = v.find("shape"), *offsets = v.find("data_offsets");
  if (!dtype || dtype->kind != json::Value::Kind::String)
    fail("{}: dtype is missing or not a string", where);
  if (!shape || shape->kind != json::Value::Kind::Array)
    fail("{}: shape is missing or not an array", where);
  if (!offsets || offsets->kind != json::Value::Kind::Array || offsets->items.size() != 2)
    fail("{}: data_offsets must be two non-negative integers", where);
  for (const auto &[key, value] : v.members)
    if (key != "dtype" && key != "shape" && key != "data_offsets")
      fail("{}: unknown field \"{}\"", where, key);
  entry.dtype = parseDType(dtype->string, where);
  if (shape->items.size() > kMaxTensorRank)
    fail("{}: shape has {} dimensions, more than {}", where, shape->items.size(), kMaxTensorRank);
  for (const json::Value &dim : shape->items) {
    if (dim.kind != json::Value::Kind::Number || !dim.isInteger || dim.integer < 0)
      fail("{}: shape must hold non-negative integers", where);
    entry.shape.push_back(dim.integer);
  }
  const uint64_t elements = checkedElementCount(entry.shape, where);
  entry.begin = parseOffset(offsets->items[0], where);
  entry.end = parseOffset(offsets->items[1], where);
  if (entry.end < entry.begin)
    fail("{}: data_offsets end {} is before begin {}", where, entry.end, entry.begin);
  if (entry.end - entry.begin != elements * dtypeSize(entry.dtype))
    fail("{}: {} bytes of data, but shape and dtype {} need {}", where, entry.end - entry.begin, dtypeName(entry.dtype),
         elements * dtypeSize(entry.dtype));
  return entry;
}

} // namespace

SafetensorsFile SafetensorsFile::read(const std::filesystem::path &path) {
  return load(path.string(), [&](uint64_t count) { return readFileHead(path, count); });
}

SafetensorsFile SafetensorsFile::parse(std::span<const uint8_t> bytes, std::string name) {
  return load(std::move(name), [&](uint64_t count) {
    const std::span<const uint8_t> head = bytes.first(std::min<uint64_t>(count, bytes.size()));
    return FileHead{{head.begin(), head.end()}, bytes.size()};
  });
}

SafetensorsFile SafetensorsFile::load(std::string name, const std::function<FileHead(uint64_t)> &readHead) {
  // The header first, checked against the file's size; then only the data its tensors cover, so a
  // huge (or sparse) file is refused or read in part, never read whole before any check.
  SafetensorsFile file;
  file.path_ = std::move(name);
  const std::string &p = file.path_;
  const FileHead prefix = readHead(8);
  if (prefix.bytes.size() < 8)
    fail("{}: truncated: {} bytes, too short for the safetensors header length", p, prefix.bytes.size());
  uint64_t headerBytes = 0;
  for (int i = 7; i >= 0; --i)
    headerBytes = headerBytes << 8 | prefix.bytes[i];
  if (headerBytes > kMaxSafetensorsHeaderBytes)
    fail("{}: header length {} is more than the {} bytes a safetensors header may have here", p, headerBytes,
         kMaxSafetensorsHeaderBytes);
  if (headerBytes > prefix.size - 8)
    fail("{}: header length {} exceeds the file ({} bytes); truncated or not safetensors", p, headerBytes, prefix.size);
  file.dataStart_ = 8 + headerBytes;
  const FileHead head = readHead(file.dataStart_);
  if (head.bytes.size() < file.dataStart_)
    fail("{}: truncated while reading its header", p);
  std::string_view headerText(reinterpret_cast<const char *>(head.bytes.data() + 8), headerBytes);
  json::Value header = json::parse(headerText, p + ": header");
  if (header.kind != json::Value::Kind::Object)
    fail("{}: header: expected a JSON object", p);
  const uint64_t dataBytes = head.size - file.dataStart_;
  uint64_t dataEnd = 0;
  for (const auto &[name, value] : header.members) {
    if (name == "__metadata__") {
      if (value.kind != json::Value::Kind::Object)
        fail("{}: __metadata__: expected an object of strings", p);
      for (const auto &[key, text] : value.members) {
        if (text.kind != json::Value::Kind::String)
          fail("{}: __metadata__.{}: expected a string", p, key);
        file.metadata_[key] = text.string;
      }
      continue;
    }
    SafetensorsEntry entry = parseEntry(name, value, fmt::format("{}: tensor \"{}\"", p, name));
    if (entry.end > dataBytes)
      fail("{}: tensor \"{}\": data_offsets [{}, {}] run past the end of the data ({} bytes); truncated?", p, name,
           entry.begin, entry.end, dataBytes);
    dataEnd = std::max(dataEnd, entry.end);
    file.entries_.push_back(std::move(entry));
  }
  file.file_ = readHead(file.dataStart_ + dataEnd).bytes;
  if (file.file_.size() < file.dataStart_ + dataEnd)
    fail("{}: truncated while reading its tensors (the file shrank)", p);
  std::vector<const SafetensorsEntry *> sorted;
  for (const auto &entry : file.entries_)
    sorted.push_back(&entry);
  std::sort(sorted.begin(), sorted.end(), [](auto *a, auto *b) { return a->begin < b->begin; });
  for (size_t i = 1; i < sorted.size(); ++i)
    if (sorted[i]->begin < sorted[i - 1]->end)
      fail("{}: tensors \"{}\" and \"{}\" overlap", p, sorted[i - 1]->name, sorted[i]->name);
  return file;
}

const SafetensorsEntry *SafetensorsFile::find(std::string_view name) const {
  for (const auto &entry : entries_)
    if (entry.name == name)
      return &entry;
  return nullptr;
}

std::span<const uint8_t> SafetensorsFile::bytes(const SafetensorsEntry &entry) const {
  return {file_.data() + dataStart_ + entry.begin, entry.end - entry.begin};
}

std::vector<float> SafetensorsFile::floats(const SafetensorsEntry &entry) const {
  std::span<const uint8_t> raw = bytes(entry);
  std::vector<float> values(entry.elements());
  for (size_t i = 0; i < values.size(); ++i) {
    switch (entry.dtype) {
    case DType::F32:
      std::memcpy(&values[i], raw.data() + 4 * i, 4);
      break;
    case DType::F16:
      values[i] = halfToFloat(raw[2 * i] | raw[2 * i + 1] << 8);
      break;
    case DType::BF16:
      values[i] = bfloat16ToFloat(raw[2 * i] | raw[2 * i + 1] << 8);
      break;
    default:
      fail("{}: tensor \"{}\": dtype {} is not a float type", path_, entry.name, dtypeName(entry.dtype));
    }
  }
  return values;
}

std::vector<uint8_t> serializeSafetensors(const std::vector<SafetensorsWriteEntry> &entries,
                                          const std::map<std::string, std::string> &metadata) {
  std::string header = "{";
  if (!metadata.empty()) {
    header += "\"__metadata__\":{";
    bool first = true;
    for (const auto &[key, value] : metadata) {
      header += first ? "" : ",";
      first = false;
      json::appendQuoted(header, key);
      header += ':';
      json::appendQuoted(header, value);
    }
    header += "}";
  }
  uint64_t offset = 0;
  for (const auto &entry : entries) {
    header += header.size() > 1 ? "," : "";
    json::appendQuoted(header, entry.name);
    header += fmt::format(":{{\"dtype\":\"{}\",\"shape\":[", dtypeName(entry.dtype));
    for (size_t i = 0; i < entry.shape.size(); ++i)
      header += fmt::format("{}{}", i ? "," : "", entry.shape[i]);
    header += fmt::format("],\"data_offsets\":[{},{}]}}", offset, offset + entry.bytes.size());
    offset += entry.bytes.size();
  }
  header += "}";
  header.append((8 - header.size() % 8) % 8, ' '); // keeps the data 8-byte aligned
  std::vector<uint8_t> out;
  out.reserve(8 + header.size() + offset);
  for (int i = 0; i < 8; ++i)
    out.push_back(static_cast<uint8_t>(static_cast<uint64_t>(header.size()) >> (8 * i)));
  out.insert(out.end(), header.begin(), header.end());
  for (const auto &entry : entries)
    out.insert(out.end(), entry.bytes.begin(), entry.bytes.end());
  return out;
}

void writeSafetensors(const std::filesystem::path &path, const std::vector<SafetensorsWriteEntry> &entries,
                      const std::map<std::string, std::string> &metadata) {
  writeFile(path, serializeSafetensors(entries, metadata));
}

} // namespace needle
