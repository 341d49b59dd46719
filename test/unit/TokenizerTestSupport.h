// What the tokenizer unit tests share: the vocabulary entries of a byte-level tokenizer's 256
// byte tokens, for small tokenizer.json texts whose ids say what happened.
#pragma once

#include "Tokenizer/Unicode.h"

#include <fmt/format.h>

#include <string>

namespace needle::tokenizer {

/// `"<byte b's character>": b, ` for every byte, as JSON object members: id = byte, so "a" is 97
/// and "Ġ" (the space) 32.
inline std::string byteTokensJson() {
  std::string vocab;
  for (int b = 0; b < 256; ++b) {
    std::string token;
    appendUtf8(token, byteLevelAlphabet()[b]);
    if (token == "\"" || token == "\\")
      token.insert(0, "\\");
    vocab += fmt::format(R"("{}": {}, )", token, b);
  }
  return vocab;
}

} // namespace needle::tokenizer
