// The compiled tokenizer's added tokens (docs/tokenizer.md, "The compiled tokenizer"): a text
// split at them as the Rust crate's AddedVocabulary does, with their lstrip, rstrip and
// single_word rules. Plain C++17 over the tokenizer's image; allocates nothing.
#ifndef NEEDLE_RT_TOKENIZER_ADDED_H
#define NEEDLE_RT_TOKENIZER_ADDED_H

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "unicode.h"

namespace needle_rt {

/// A set of added tokens as the image holds it: by first byte, longest first, each with the
/// text it matches and its rules.
struct TokImageAdded {
  uint32_t first;        // [257] u32: the entries starting with byte b are [first[b], first[b + 1])
  uint32_t ids;          // [count] i32
  uint32_t rules;        // [count] u8: tok_added_* bits
  uint32_t text;         // the entries' texts, one after the other
  uint32_t text_offsets; // [count + 1] u32
  uint32_t count;
};

enum : uint8_t {
  tok_added_special = 1,     // matched only with TOK_ENCODE_SPECIAL
  tok_added_lstrip = 2,      // takes the white space before it
  tok_added_rstrip = 4,      // takes the white space after it
  tok_added_single_word = 8, // not next to a word character
  tok_added_normalized = 16, // matched in the normalized text (the other set), not in the text
};

/// Unicode's White_Space (the Rust crate's regex \s): 25 code points, fixed since Unicode 6.3.
inline bool tok_white_space(uint32_t c) {
  return (c >= 9 && c <= 13) || c == 32 || c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) ||
         c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

/// The code points of the Rust crate's regex \w, as runs from 0 alternating not-word and word.
struct TokWordRuns {
  const uint32_t *starts;
  uint32_t runs;
  bool contains(uint32_t c) const { return c < tok_invalid_point && tok_count_at_or_below(starts, runs, c) % 2 == 0; }
};

/// The code point at text[at] (an invalid byte as tok_invalid_point + it); returns its length.
inline size_t tok_point_at(const uint8_t *text, size_t length, size_t at, uint32_t *c) {
  const size_t n = tok_sequence(text, length, at, c);
  if (n == 0)
    *c = tok_invalid_point + text[at];
  return n ? n : 1;
}

/// The code point that ends text[0, at) (at > 0, a character boundary); returns its length.
inline size_t tok_point_before(const uint8_t *text, size_t at, uint32_t *c) {
  for (size_t n = at < 4 ? at : 4; n > 0; --n) // at most one valid sequence ends here
    if (tok_sequence(text, at, at - n, c) == n)
      return n;
  *c = tok_invalid_point + text[at - 1];
  return 1;
}

/// The entry of set `a` that starts at text[at] and is the longest there, or -1 (its length in
/// *token_length); entries with a rule in `skip` do not match.
inline int32_t tok_added_at(const uint8_t *image, const TokImageAdded &a, const uint8_t *text, size_t length, size_t at,
                            uint8_t skip, size_t *token_length) {
  const uint32_t *first = tok_array<uint32_t>(image, a.first), *offsets = tok_array<uint32_t>(image, a.text_offsets);
  for (uint32_t i = first[text[at]]; i < first[text[at] + 1]; ++i) {
    const uint32_t begin = offsets[i], size = offsets[i + 1] - begin;
    if ((image[a.rules + i] & skip) == 0 && size <= length - at &&
        memcmp(text + at, image + a.text + begin, size) == 0) {
      *token_length = size;
      return static_cast<int32_t>(i);
    }
  }
  return -1;
}

/// Splits text[0, length) at the tokens of set `a` as the Rust crate's find_matches does: the
/// longest at the leftmost position, matches not overlapping; a single_word match next to a word
/// character is dropped (its text stays text); lstrip and rstrip take the white space around a
/// match (lstrip not past the previous one). Calls on_text(begin, end) for the text between
/// matches (empty too) and on_token(id) for each match, in order.
template <typename OnText, typename OnToken>
inline void tok_split_added(const uint8_t *image, const TokImageAdded &a, const TokWordRuns &words, const uint8_t *text,
                            size_t length, uint8_t skip, OnText on_text, OnToken on_token) {
  if (a.count == 0) {
    on_text(0, length);
    return;
  }
  size_t done = 0; // where the previous match ended
  for (size_t at = 0; at < length;) {
    size_t n = 0;
    const int32_t k = tok_added_at(image, a, text, length, at, skip, &n);
    if (k < 0) {
      ++at;
      continue;
    }
    const uint8_t rules = image[a.rules + k];
    size_t start = at, stop = at + n;
    at = stop;
    uint32_t c = 0;
    if ((rules & tok_added_single_word) &&
        ((start > 0 && (tok_point_before(text, start, &c), words.contains(c))) ||
         (stop < length && (tok_point_at(text, length, stop, &c), words.contains(c)))))
      continue;
    // Whole characters only, never into the previous match (tokens are valid UTF-8, so a match
    // ends between characters; the bytes check keeps that so for any table).
    for (size_t bytes; (rules & tok_added_lstrip) && start > done &&
                       (bytes = tok_point_before(text, start, &c), tok_white_space(c) && bytes <= start - done);)
      start -= bytes;
    for (size_t bytes; (rules & tok_added_rstrip) && stop < length &&
                       (bytes = tok_point_at(text, length, stop, &c), tok_white_space(c));)
      stop += bytes;
    on_text(done, start);
    on_token(tok_array<int32_t>(image, a.ids)[k]);
    done = at = stop;
  }
  on_text(done, length);
}

} // namespace needle_rt

#endif // NEEDLE_RT_TOKENIZER_ADDED_H
