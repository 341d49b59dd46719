// The .needle container: a FlatBuffers header (schema: needle.fbs) and 64-byte aligned tensor
// payloads. Every buffer is checked by the FlatBuffers verifier before use.
#pragma once

#include "Model/Model.h"

#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

namespace needle {

constexpr uint32_t kNeedleFormatVersion = 1;
constexpr uint64_t kNeedleAlignment = 64;

/// The whole file, deterministic for a given model.
std::vector<uint8_t> serializeNeedle(const Model &model);

/// Parses and validates a .needle image; errors name `source`.
Model parseNeedle(std::span<const uint8_t> bytes, std::string_view source);

bool looksLikeNeedle(std::span<const uint8_t> bytes);

/// The bytes of the .needle file at `path`, read header first: the size prefix and the verified
/// FlatBuffers header are checked against the file's size before the payload is read, so a
/// huge or sparse file whose header does not cover it is refused unread. Errors name the path.
std::vector<uint8_t> readNeedleFile(const std::filesystem::path &path);

} // namespace needle
