// The text around the user's words in NAME_call (docs/tool-calls.md, "The prompt"): fixed when
// the model is compiled, so it is encoded once, here, to the ids NAME_call feeds before and after
// the query's. No MLIR.
#pragma once

#include "Calls/TokenAutomaton.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace needle::calls {

/// The prompt when --prompt gives none, and the record prompt when --schema-prompt gives none.
inline constexpr std::string_view kDefaultPrompt = "Tools: {{tools}}\nRequest: {{query}}\nCall:";
inline constexpr std::string_view kDefaultRecordPrompt = "Schema: {{schema}}\nText: {{query}}\nRecord:";

/// The most bytes of a query NAME_call takes by default (--max-query).
inline constexpr uint32_t kDefaultMaxQuery = 1024;

/// `text` encoded as NAME_call encodes a query: special tokens taken as text.
std::vector<int32_t> encodeAsQuery(const std::vector<uint8_t> &tokenizer, const std::string &text,
                                   const std::string &source);

/// `prompt` with `placeholder` ({{tools}}, {{schema}}) as `json` (compact), split at its one
/// {{query}}, each side encoded with the tokenizer image `tokenizer` (special tokens matched by
/// name); a query of up to `maxQuery` bytes and `maxQueryIds` ids. Errors name `source`.
CallPrompt buildPrompt(std::string_view prompt, std::string_view placeholder, std::string_view json,
                       const std::vector<uint8_t> &tokenizer, uint32_t maxQuery, uint32_t maxQueryIds,
                       const std::string &source);

} // namespace needle::calls
