// The compiled tokenizer's code-point level (docs/tokenizer.md, "The compiled tokenizer"): UTF-8
// sequences as c-interface.md defines them, lookups in tables sorted by code point, and the
// NFC and NFKC normalizers over tables the compiler takes from ICU. Plain C++17 that allocates
// nothing: the normalizer's code points live in the caller's scratch.
#ifndef NEEDLE_RT_TOKENIZER_UNICODE_H
#define NEEDLE_RT_TOKENIZER_UNICODE_H

#include <cstddef>
#include <cstdint>

namespace needle_rt {

/// The length of the valid UTF-8 sequence at text[i] and its code point, or 0 (an invalid byte):
/// the rule of c-interface.md (no overlongs, surrogates or code points past U+10FFFF).
inline size_t tok_sequence(const uint8_t *text, size_t length, size_t i, uint32_t *c) {
  const uint8_t lead = text[i];
  const size_t n = lead < 0x80                   ? 1
                   : lead >= 0xC2 && lead < 0xE0 ? 2
                   : lead >= 0xE0 && lead < 0xF0 ? 3
                   : lead >= 0xF0 && lead < 0xF5 ? 4
                                                 : 0;
  if (n == 0 || i + n > length)
    return 0;
  uint32_t value = n == 1 ? lead : lead & (0x7Fu >> n);
  for (size_t k = 1; k < n; ++k) {
    if ((text[i + k] & 0xC0) != 0x80)
      return 0;
    value = value << 6 | (text[i + k] & 0x3Fu);
  }
  if ((n == 3 && value < 0x800) || (n == 4 && value < 0x10000) || value > 0x10FFFF ||
      (value >= 0xD800 && value <= 0xDFFF))
    return 0;
  *c = value;
  return n;
}

/// How many elements of ascending a[0, n) are at or below key: for runs that start at a[0] = 0,
/// the run holding key is the count less one.
template <typename T> inline uint32_t tok_count_at_or_below(const T *a, uint32_t n, T key) {
  uint32_t low = 0, high = n;
  while (low < high) {
    const uint32_t mid = low + (high - low) / 2;
    if (a[mid] <= key)
      low = mid + 1;
    else
      high = mid;
  }
  return low;
}

/// A normalization step's tables (NFC or NFKC), as offsets into the tokenizer's image. A code
/// point is kept with its canonical combining class above it: class << tok_class_shift | point.
struct TokImageUnicode {
  uint32_t quick_below;      // code points below this are their own decomposition, of class 0
  uint32_t decomposed;       // [decomposed_count] ascending: the code points that decompose
  uint32_t decompositions;   // same order: offset << 8 | length, into `points`
  uint32_t points;           // the decompositions' code points, with their classes
  uint32_t decomposed_count; // (Hangul syllables are computed, not listed)
  uint32_t class_starts;     // [class_runs] ascending, [0] = 0: runs of code points of one class
  uint32_t class_values;     // the class of each run (bytes)
  uint32_t class_runs;
  uint32_t compose_pairs; // [compose_count] ascending 64-bit first << 21 | second: canonical compositions
  uint32_t composites;    // same order: the composite, with its class
  uint32_t compose_count;
};

constexpr uint32_t tok_class_shift = 21, tok_point_mask = (1u << tok_class_shift) - 1;
/// An invalid byte b is the code point tok_invalid_point + b: a starter that nothing composes
/// with, written back as the byte.
constexpr uint32_t tok_invalid_point = 0x110000;
constexpr uint32_t tok_hangul_s = 0xAC00, tok_hangul_l = 0x1100, tok_hangul_v = 0x1161, tok_hangul_t = 0x11A7,
                   tok_hangul_v_count = 21, tok_hangul_t_count = 28, tok_hangul_s_count = 11172;

/// Array `offset` of the tokenizer's image.
template <typename T> inline const T *tok_array(const uint8_t *image, uint32_t offset) {
  return reinterpret_cast<const T *>(image + offset);
}

/// Writes c's full decomposition, each point with its class, to out; returns how many.
inline size_t tok_decompose(const uint8_t *image, const TokImageUnicode &u, uint32_t c, uint32_t *out) {
  if (c < u.quick_below || c >= tok_invalid_point) {
    out[0] = c;
    return 1;
  }
  if (c - tok_hangul_s < tok_hangul_s_count) { // Unicode's arithmetic for Hangul syllables
    const uint32_t s = c - tok_hangul_s, t = s % tok_hangul_t_count;
    const uint32_t per_l = tok_hangul_v_count * tok_hangul_t_count;
    out[0] = tok_hangul_l + s / per_l;
    out[1] = tok_hangul_v + s % per_l / tok_hangul_t_count;
    out[2] = tok_hangul_t + t;
    return t ? 3 : 2;
  }
  const uint32_t *keys = tok_array<uint32_t>(image, u.decomposed);
  const uint32_t found = tok_count_at_or_below(keys, u.decomposed_count, c);
  if (found && keys[found - 1] == c) {
    const uint32_t entry = tok_array<uint32_t>(image, u.decompositions)[found - 1];
    const uint32_t *points = tok_array<uint32_t>(image, u.points) + (entry >> 8);
    for (uint32_t k = 0; k < (entry & 0xFF); ++k)
      out[k] = points[k];
    return entry & 0xFF;
  }
  const uint32_t run = tok_count_at_or_below(tok_array<uint32_t>(image, u.class_starts), u.class_runs, c) - 1;
  out[0] = uint32_t(image[u.class_values + run]) << tok_class_shift | c;
  return 1;
}

/// Sorts a[0, n) by class, stably (canonical ordering), with temp[0, n) to merge through.
inline void tok_sort_by_class(uint32_t *a, uint32_t *temp, size_t n) {
  const auto before = [](uint32_t x, uint32_t y) { return (x >> tok_class_shift) < (y >> tok_class_shift); };
  if (n <= 8) { // most runs: one or two marks
    for (size_t i = 1; i < n; ++i)
      for (size_t j = i; j > 0 && before(a[j], a[j - 1]); --j) {
        const uint32_t x = a[j];
        a[j] = a[j - 1], a[j - 1] = x;
      }
    return;
  }
  uint32_t *from = a, *to = temp; // bottom-up merge sort: O(n log n) for any run a text holds
  for (size_t width = 1; width < n; width *= 2) {
    for (size_t low = 0; low < n; low += 2 * width) {
      const size_t mid = low + width < n ? low + width : n, high = low + 2 * width < n ? low + 2 * width : n;
      size_t i = low, j = mid, k = low;
      while (i < mid && j < high)
        to[k++] = before(from[j], from[i]) ? from[j++] : from[i++];
      while (i < mid)
        to[k++] = from[i++];
      while (j < high)
        to[k++] = from[j++];
    }
    uint32_t *swap = from;
    from = to, to = swap;
  }
  if (from != a)
    for (size_t i = 0; i < n; ++i)
      a[i] = from[i];
}

/// The canonical composition of `first` and `second` (points with classes), or 0.
inline uint32_t tok_compose(const uint8_t *image, const TokImageUnicode &u, uint32_t first, uint32_t second) {
  const uint32_t a = first & tok_point_mask, b = second & tok_point_mask;
  if (a - tok_hangul_l < 19 && b - tok_hangul_v < tok_hangul_v_count)
    return tok_hangul_s + ((a - tok_hangul_l) * tok_hangul_v_count + b - tok_hangul_v) * tok_hangul_t_count;
  if (a - tok_hangul_s < tok_hangul_s_count && (a - tok_hangul_s) % tok_hangul_t_count == 0 && b > tok_hangul_t &&
      b < tok_hangul_t + tok_hangul_t_count)
    return a + b - tok_hangul_t;
  const uint64_t key = uint64_t(a) << 21 | b;
  const uint64_t *pairs = tok_array<uint64_t>(image, u.compose_pairs);
  const uint32_t found = tok_count_at_or_below(pairs, u.compose_count, key);
  return found && pairs[found - 1] == key ? tok_array<uint32_t>(image, u.composites)[found - 1] : 0;
}

/// Composes points[0, n) in place (Unicode's canonical composition algorithm); returns the count.
inline size_t tok_compose_all(const uint8_t *image, const TokImageUnicode &u, uint32_t *points, size_t n) {
  size_t out = 0, starter = 0;
  bool has_starter = false;
  int32_t last_class = -1; // of the last point kept after the starter; -1: none yet
  for (size_t i = 0; i < n; ++i) {
    const uint32_t p = points[i];
    const int32_t cls = static_cast<int32_t>(p >> tok_class_shift);
    // Not blocked: next to the starter, or every point between is of a lower class (canonical
    // order makes the last one the highest) and not a starter.
    if (has_starter && (last_class < 0 || (last_class > 0 && last_class < cls)))
      if (const uint32_t composite = tok_compose(image, u, points[starter], p)) {
        points[starter] = composite;
        continue;
      }
    if (cls == 0)
      starter = out, has_starter = true, last_class = -1;
    else
      last_class = cls;
    points[out++] = p;
  }
  return out;
}

/// Writes point p (tok_invalid_point + b: the byte b) as UTF-8; returns the bytes written.
inline size_t tok_put_utf8(uint32_t p, uint8_t *out) {
  const uint32_t c = p & tok_point_mask;
  if (c >= tok_invalid_point) {
    out[0] = static_cast<uint8_t>(c - tok_invalid_point);
    return 1;
  }
  if (c < 0x80) {
    out[0] = static_cast<uint8_t>(c);
    return 1;
  }
  if (c < 0x800) {
    out[0] = static_cast<uint8_t>(0xC0 | c >> 6), out[1] = static_cast<uint8_t>(0x80 | (c & 0x3F));
    return 2;
  }
  if (c < 0x10000) {
    out[0] = static_cast<uint8_t>(0xE0 | c >> 12), out[1] = static_cast<uint8_t>(0x80 | (c >> 6 & 0x3F));
    out[2] = static_cast<uint8_t>(0x80 | (c & 0x3F));
    return 3;
  }
  out[0] = static_cast<uint8_t>(0xF0 | c >> 18), out[1] = static_cast<uint8_t>(0x80 | (c >> 12 & 0x3F));
  out[2] = static_cast<uint8_t>(0x80 | (c >> 6 & 0x3F)), out[3] = static_cast<uint8_t>(0x80 | (c & 0x3F));
  return 4;
}

/// text[0, length) in the step's normal form into out; returns its length. points and temp
/// hold the text's full decomposition (the tables bound its length).
inline size_t tok_normalize_unicode(const uint8_t *image, const TokImageUnicode &u, const uint8_t *text, size_t length,
                                    uint32_t *points, uint32_t *temp, uint8_t *out) {
  size_t n = 0, marks = 0; // marks: where the current run of non-starters began
  for (size_t i = 0; i < length;) {
    uint32_t c = text[i];
    size_t bytes = 1;
    if (c >= 0x80 && (bytes = tok_sequence(text, length, i, &c)) == 0)
      c = tok_invalid_point + text[i], bytes = 1;
    i += bytes;
    const size_t added = tok_decompose(image, u, c, points + n);
    for (size_t k = n; k < n + added; ++k) {
      if (points[k] >> tok_class_shift)
        continue;
      tok_sort_by_class(points + marks, temp, k - marks);
      marks = k + 1;
    }
    n += added;
  }
  tok_sort_by_class(points + marks, temp, n - marks);
  n = tok_compose_all(image, u, points, n);
  size_t written = 0;
  for (size_t k = 0; k < n; ++k)
    written += tok_put_utf8(points[k], out + written);
  return written;
}

} // namespace needle_rt

#endif // NEEDLE_RT_TOKENIZER_UNICODE_H
