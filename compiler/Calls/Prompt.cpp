#include "Calls/Prompt.h"

#include "Support/Error.h"
#include "runtime/tokenizer/tokenizer.h"

namespace needle::calls {
namespace {

std::string replaceAll(std::string text, std::string_view from, std::string_view to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

std::vector<int32_t> encode(const needle_rt::TokTables &tables, const std::string &text, unsigned flags,
                            const std::string &source) {
  const size_t scratchSize = needle_rt::tok_encode_scratch_size(tables, text.size());
  if (scratchSize == SIZE_MAX)
    fail("{}: the text is too long to encode", source);
  std::vector<unsigned char> scratch(scratchSize);
  std::vector<int32_t> ids(text.size() + 8);
  size_t count = 0;
  int status = needle_rt::tok_encode(tables, text.data(), text.size(), flags, scratch.data(), scratch.size(),
                                     ids.data(), ids.size(), &count);
  if (status == needle_rt::status_err_space) {
    ids.resize(count);
    status = needle_rt::tok_encode(tables, text.data(), text.size(), flags, scratch.data(), scratch.size(), ids.data(),
                                   ids.size(), &count);
  }
  if (status != needle_rt::status_ok)
    fail("internal: {}: the text does not encode (status {})", source, status);
  ids.resize(count);
  return ids;
}

} // namespace

std::vector<int32_t> encodeAsQuery(const std::vector<uint8_t> &tokenizer, const std::string &text,
                                   const std::string &source) {
  return encode(needle_rt::tok_tables(tokenizer.data()), text, 0, source);
}

CallPrompt buildPrompt(std::string_view prompt, std::string_view placeholder, std::string_view json,
                       const std::vector<uint8_t> &tokenizer, uint32_t maxQuery, uint32_t maxQueryIds,
                       const std::string &source) {
  // Split first: the JSON may hold "{{query}}" itself (in a description).
  constexpr std::string_view kQuery = "{{query}}";
  const size_t query = prompt.find(kQuery);
  if (query == std::string::npos || prompt.find(kQuery, query + 1) != std::string::npos)
    fail("{}: the prompt must hold {{{{query}}}} exactly once, where the user's words go", source);
  const needle_rt::TokTables tables = needle_rt::tok_tables(tokenizer.data());
  CallPrompt out;
  const std::string before = replaceAll(std::string(prompt.substr(0, query)), placeholder, json);
  const std::string after = replaceAll(std::string(prompt.substr(query + kQuery.size())), placeholder, json);
  out.prefix = encode(tables, before, needle_rt::TOK_ENCODE_SPECIAL, source);
  out.suffix = encode(tables, after, needle_rt::TOK_ENCODE_SPECIAL, source);
  out.maxQuery = maxQuery;
  out.maxQueryIds = maxQueryIds;
  out.encodeScratch = needle_rt::tok_encode_scratch_size(tables, maxQuery);
  if (out.encodeScratch == SIZE_MAX)
    fail("--max-query: {} bytes is too long a query to encode", maxQuery);
  return out;
}

} // namespace needle::calls
