// The compiled tokenizer's runtime (docs/tokenizer.md, "The compiled tokenizer"): encoding and
// streaming decoding over read-only tables the compiler builds from a tokenizer.json. Like the
// kernels it is plain C++17 that allocates nothing and calls nothing of the OS: the caller
// passes scratch memory, and every table is constant data: one image (TokImage below) that
// needlec emits as a byte array beside the weights. The C++ backend carries this header, joined
// with the contract, into the sources of models that have a tokenizer.
#ifndef NEEDLE_RT_TOKENIZER_H
#define NEEDLE_RT_TOKENIZER_H

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "../needle_contract.h"
#include "added.h"
#include "unicode.h"

namespace needle_rt {

/// One split of the pre-tokenizer: its scanner, a DFA over symbols (classes of code points).
struct TokSplit {
  const uint32_t *run_starts; // ascending code points, [0] = 0: where runs of one symbol start
  const uint8_t *run_symbols; // the symbol of each run
  uint32_t runs;
  const uint8_t *ascii_symbols; // [128]: each ASCII character's symbol, without the search
  uint32_t symbols;             // symbols per state
  uint32_t invalid_symbol;      // a byte that begins no valid UTF-8 sequence
  uint32_t end_symbol;          // the end of the text
  const int16_t *next;          // by state * symbols + symbol: the next state, -1 when none
  const uint8_t *accept_before; // same index: a match ends before that symbol
  uint32_t matches_only;        // 1: the text between matches is dropped (Removed, inverted)
};

/// A merge in its hash slot: the left id (20 bits), the right id (20 bits) and the rank (24 bits),
/// so a probe reads 8 bytes; the merged id is tok_merged_id's. tok_no_merge marks an empty slot.
using TokMerge = uint64_t;
constexpr TokMerge tok_no_merge = ~TokMerge(0);
constexpr uint32_t tok_max_id_bits = 20, tok_max_rank_bits = 24;

/// The slot bits of a pair of ids (ids below 2^20), rank 0.
inline TokMerge tok_merge_key(int32_t left, int32_t right) {
  return TokMerge(uint32_t(left)) << (tok_max_id_bits + tok_max_rank_bits) | TokMerge(uint32_t(right))
                                                                                 << tok_max_rank_bits;
}

/// Offsets [count + 1] into a blob, as 16-bit steps from a base per block of 2^shift entries:
/// offset i is bases[i >> shift] + steps[i], 2 bytes an entry where a flat array takes 4 (the
/// compiler picks the largest shift whose steps fit 16 bits; 0 always does).
struct TokOffsets {
  const uint32_t *bases;
  const uint16_t *steps;
  uint32_t shift;
  uint32_t operator[](uint32_t i) const { return bases[i >> shift] + steps[i]; }
};

/// A vocabulary token in the hash by its spelling: its id (20 bits) and 11 bits of the spelling's
/// hash, so most probes for other spellings end without reading them; 4 bytes a slot.
/// tok_no_word (the top bit set) marks an empty slot.
using TokWord = uint32_t;
constexpr TokWord tok_no_word = ~TokWord(0);
constexpr uint32_t tok_word_tag_mask = 0x7FF;
inline TokWord tok_word(int32_t id, uint32_t hash) {
  return (hash & tok_word_tag_mask) << tok_max_id_bits | static_cast<uint32_t>(id);
}

/// How the image holds a split and a normalizer step: their arrays as offsets into the image.
struct TokImageSplit {
  uint32_t run_starts, run_symbols, runs, ascii_symbols, symbols, invalid_symbol, end_symbol, next, accept_before,
      matches_only;
};
/// A normalizer step on the text between added tokens: Replace (every `from` becomes `to`),
/// Prepend (`to` before a text that is not empty), Unicode (NFC or NFKC, by its tables), Prefix
/// (`to` before a text that is not empty and does not start with it: ByteLevel's
/// add_prefix_space, Metaspace's "always"), or PrefixFirst (the same, only for a text at the
/// start of what is encoded: Metaspace's "first").
enum : uint32_t { tok_step_replace, tok_step_prepend, tok_step_unicode, tok_step_prefix, tok_step_prefix_first };
struct TokImageNormalize {
  uint32_t kind, from, from_length, to, to_length;
  uint32_t unicode; // Unicode: the offset of its TokImageUnicode
};

/// The tables as one read-only image (docs/tokenizer.md, "The image"): this header, then every
/// array at an offset from the image's start aligned for its elements (4 or 8 bytes). Each field named after a pointer
/// of TokTables holds that array's offset (words: 0 when there are none); the others are TokTables'.
struct TokImage {
  int32_t ids;
  uint32_t byte_level, normalizer, normalizer_steps, pre_steps, growth, growth_extra, points_growth, points_extra, blob,
      token_bases, token_steps, token_shift, byte_ids, splits, split_count, space_level, merges, merge_slots,
      merged_ids, words, word_slots, spelling, spelling_bases, spelling_steps, spelling_shift, whole_pieces;
  int32_t unk_id, merged_base;
  uint32_t fuse_unk, added, added_normalized, word_starts, word_runs, prefix_ids, prefix_count, suffix_ids,
      suffix_count, strip_leading;
};

struct TokTables {
  const uint8_t *image; // where the splits' and the normalizer's offsets point
  int32_t ids;          // ids are 0 .. ids - 1
  uint32_t byte_level;  // 1: a piece's symbols are its bytes' tokens; 0: its characters'
  // The file's normalizer steps, then pre_steps more: what the first pre-tokenizer step does to
  // each piece between added tokens (ByteLevel's add_prefix_space, Metaspace's).
  const TokImageNormalize *normalizer;
  uint32_t normalizer_steps, pre_steps;
  uint32_t growth, growth_extra; // a normalized text is at most growth * length + growth_extra bytes
  uint32_t points_growth,
      points_extra;         // a Unicode step decomposes into at most points_growth * length + points_extra code points
  const uint8_t *blob;      // every id's bytes in a text, by token_offsets
  TokOffsets token_offsets; // [ids + 1]
  const int32_t *byte_ids;  // [256]: each byte's token (byte-level) or its <0xNN> (-1: none)
  const TokImageSplit *splits;
  uint32_t split_count;
  // ByteLevel's add_prefix_space after a Split: each piece that reaches split space_level (the
  // end: BPE) gets a space before it unless it starts with one; 0: none.
  uint32_t space_level;
  const TokMerge *merges; // open addressing (tok_slot), merge_slots slots, at most 3/4 full
  uint32_t merge_slots;
  const int32_t *merged_ids; // by rank: the id a merge makes; null when it is merged_base + rank
  int32_t merged_base;
  // The vocabulary by its spelling (raw bytes for byte-level, where the alphabet is a bijection),
  // open addressing (tok_slot), word_slots slots: every token where a piece's characters are
  // looked up or with ignore_merges, else the byte-level tokens that whole_pieces may take.
  const TokWord *words;
  uint32_t word_slots;
  const uint8_t *spelling; // the words' bytes, by spelling_offsets [ids + 1]
  TokOffsets spelling_offsets;
  uint32_t whole_pieces;                 // a piece that words holds is that token (ignore_merges, or BPE gives it)
  int32_t unk_id;                        // a character no token spells and no byte fallback covers; -1: none
  uint32_t fuse_unk;                     // consecutive unknown characters are one unknown token
  const TokImageAdded *added;            // every added token, by its content (the normalized ones skipped in the text)
  const TokImageAdded *added_normalized; // the normalized ones, by their normalized content
  TokWordRuns word_runs;                 // \w, for single_word (no runs when no token has it)
  const int32_t *prefix_ids;             // the post-processor's ids before and after one sequence
  uint32_t prefix_count;
  const int32_t *suffix_ids;
  uint32_t suffix_count;
  uint32_t strip_leading; // the decoder drops up to this many leading spaces of a stream
};

enum { TOK_ENCODE_SPECIAL = 1, TOK_ENCODE_BOS_EOS = 2 };

inline TokOffsets tok_offsets(const uint8_t *image, uint32_t bases, uint32_t steps, uint32_t shift) {
  return TokOffsets{tok_array<uint32_t>(image, bases), tok_array<uint16_t>(image, steps), shift};
}

/// The tables of an image (8-byte aligned) that needlec built.
inline TokTables tok_tables(const uint8_t *image) {
  const TokImage &h = *tok_array<TokImage>(image, 0);
  return TokTables{image,
                   h.ids,
                   h.byte_level,
                   tok_array<TokImageNormalize>(image, h.normalizer),
                   h.normalizer_steps,
                   h.pre_steps,
                   h.growth,
                   h.growth_extra,
                   h.points_growth,
                   h.points_extra,
                   image + h.blob,
                   tok_offsets(image, h.token_bases, h.token_steps, h.token_shift),
                   tok_array<int32_t>(image, h.byte_ids),
                   tok_array<TokImageSplit>(image, h.splits),
                   h.split_count,
                   h.space_level,
                   tok_array<TokMerge>(image, h.merges),
                   h.merge_slots,
                   h.merged_ids ? tok_array<int32_t>(image, h.merged_ids) : nullptr,
                   h.merged_base,
                   h.words ? tok_array<TokWord>(image, h.words) : nullptr,
                   h.word_slots,
                   image + h.spelling,
                   tok_offsets(image, h.spelling_bases, h.spelling_steps, h.spelling_shift),
                   h.whole_pieces,
                   h.unk_id,
                   h.fuse_unk,
                   tok_array<TokImageAdded>(image, h.added),
                   tok_array<TokImageAdded>(image, h.added_normalized),
                   TokWordRuns{tok_array<uint32_t>(image, h.word_starts), h.word_runs},
                   tok_array<int32_t>(image, h.prefix_ids),
                   h.prefix_count,
                   tok_array<int32_t>(image, h.suffix_ids),
                   h.suffix_count,
                   h.strip_leading};
}

/// Split `k` with its arrays found in the image.
inline TokSplit tok_split_tables(const TokTables &t, uint32_t k) {
  const TokImageSplit &s = t.splits[k];
  return TokSplit{tok_array<uint32_t>(t.image, s.run_starts),
                  t.image + s.run_symbols,
                  s.runs,
                  t.image + s.ascii_symbols,
                  s.symbols,
                  s.invalid_symbol,
                  s.end_symbol,
                  tok_array<int16_t>(t.image, s.next),
                  t.image + s.accept_before,
                  s.matches_only};
}

/// FNV-1a, the words' hash.
inline uint32_t tok_hash_bytes(const uint8_t *bytes, size_t length) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < length; ++i)
    h = (h ^ bytes[i]) * 16777619u;
  return h;
}

/// A hash's first slot in a table of `slots` (any count: the hash's high bits scaled, so a table
/// is sized to its entries rather than to a power of two).
inline uint32_t tok_slot(uint32_t hash, uint32_t slots) {
  return static_cast<uint32_t>((uint64_t(hash) * slots) >> 32);
}
inline uint32_t tok_next_slot(uint32_t slot, uint32_t slots) { return slot + 1 == slots ? 0 : slot + 1; }

/// The merges' hash of a pair of ids.
inline uint32_t tok_hash_pair(int32_t left, int32_t right) {
  return (static_cast<uint32_t>(left) * 0x9E3779B1u) ^ (static_cast<uint32_t>(right) * 0x85EBCA77u);
}

/// The symbol of the character at text[i] and its length in bytes.
inline uint32_t tok_symbol(const TokSplit &split, const uint8_t *text, size_t length, size_t i, size_t *bytes) {
  if (text[i] < 0x80) { // most text: one table lookup
    *bytes = 1;
    return split.ascii_symbols[text[i]];
  }
  uint32_t c = 0;
  *bytes = tok_sequence(text, length, i, &c);
  if (*bytes == 0) {
    *bytes = 1;
    return split.invalid_symbol;
  }
  return split.run_symbols[tok_count_at_or_below(split.run_starts, split.runs, c) - 1];
}

/// The end of the leftmost-first match starting at `start`, or `start` when none.
inline size_t tok_match_at(const TokSplit &split, const uint8_t *text, size_t length, size_t start) {
  size_t end = start;
  int32_t state = 0;
  for (size_t pos = start;;) {
    size_t bytes = 0;
    const uint32_t symbol = pos < length ? tok_symbol(split, text, length, pos, &bytes) : split.end_symbol;
    const size_t at = static_cast<size_t>(state) * split.symbols + symbol;
    if (split.accept_before[at])
      end = pos;
    if (symbol == split.end_symbol || split.next[at] < 0)
      return end;
    state = split.next[at];
    pos += bytes;
  }
}

/// Where the ids go: written while they fit, counted always.
struct TokOutput {
  int32_t *ids;
  size_t cap, count;
  void push(int32_t id) {
    if (count < cap)
      ids[count] = id;
    ++count;
  }
};

/// BPE's working state in the caller's scratch: a list of symbols and a heap of candidate merges.
struct TokSymbol {
  int32_t id, prev, next;
};
struct TokCandidate {
  int32_t rank, pos, merged;
};

/// The rank of the merge of `left` and `right`, or -1 when the pair does not merge.
inline int32_t tok_find_merge(const TokTables &t, int32_t left, int32_t right) {
  const TokMerge key = tok_merge_key(left, right), rank_mask = (TokMerge(1) << tok_max_rank_bits) - 1;
  for (uint32_t slot = tok_slot(tok_hash_pair(left, right), t.merge_slots);;
       slot = tok_next_slot(slot, t.merge_slots)) {
    const TokMerge m = t.merges[slot];
    if (m == tok_no_merge)
      return -1;
    if ((m & ~rank_mask) == key)
      return static_cast<int32_t>(m & rank_mask);
  }
}

inline int32_t tok_find_word(const TokTables &t, const uint8_t *bytes, size_t length) {
  const uint32_t hash = tok_hash_bytes(bytes, length);
  for (uint32_t slot = tok_slot(hash, t.word_slots);; slot = tok_next_slot(slot, t.word_slots)) {
    const TokWord w = t.words[slot];
    if (w == tok_no_word)
      return -1;
    if ((w >> tok_max_id_bits) != (hash & tok_word_tag_mask))
      continue;
    const int32_t id = static_cast<int32_t>(w & ((1u << tok_max_id_bits) - 1));
    const uint32_t begin = t.spelling_offsets[id], size = t.spelling_offsets[id + 1] - begin;
    if (size == length && memcmp(t.spelling + begin, bytes, length) == 0)
      return id;
  }
}

/// Candidates ordered by rank, then position (the leftmost of equal ranks first).
inline bool tok_before(const TokCandidate &a, const TokCandidate &b) {
  return a.rank < b.rank || (a.rank == b.rank && a.pos < b.pos);
}

inline void tok_heap_push(TokCandidate *heap, size_t *size, TokCandidate c) {
  size_t i = (*size)++;
  for (; i > 0 && tok_before(c, heap[(i - 1) / 2]); i = (i - 1) / 2)
    heap[i] = heap[(i - 1) / 2];
  heap[i] = c;
}

inline TokCandidate tok_heap_pop(TokCandidate *heap, size_t *size) {
  const TokCandidate top = heap[0], last = heap[--*size];
  size_t i = 0;
  for (;;) {
    size_t child = 2 * i + 1;
    if (child >= *size)
      break;
    if (child + 1 < *size && tok_before(heap[child + 1], heap[child]))
      ++child;
    if (!tok_before(heap[child], last))
      break;
    heap[i] = heap[child];
    i = child;
  }
  if (*size)
    heap[i] = last;
  return top;
}

/// Pushes the merge of the symbol at `pos` with the next one, if the pair merges.
inline void tok_offer(const TokTables &t, const TokSymbol *symbols, int32_t pos, TokCandidate *heap, size_t *size) {
  if (pos < 0 || symbols[pos].next < 0)
    return;
  const int32_t rank = tok_find_merge(t, symbols[pos].id, symbols[symbols[pos].next].id);
  if (rank >= 0)
    tok_heap_push(heap, size, TokCandidate{rank, pos, t.merged_ids ? t.merged_ids[rank] : t.merged_base + rank});
}

/// Bytes of scratch BPE needs per byte of a piece: one symbol and up to three candidates.
constexpr size_t kTokScratchPerByte = sizeof(TokSymbol) + 3 * sizeof(TokCandidate);

/// A piece's first symbols, linked in order: byte-level, each byte's token; else each
/// character's token, or its bytes' <0xNN> tokens when all exist, or the unknown token (one for
/// a run with fuse_unk). Returns how many (at most one a byte).
inline size_t tok_first_symbols(const TokTables &t, const uint8_t *piece, size_t length, TokSymbol *symbols) {
  size_t n = 0;
  auto push = [&](int32_t id) {
    symbols[n] = TokSymbol{id, static_cast<int32_t>(n) - 1, -1};
    if (n)
      symbols[n - 1].next = static_cast<int32_t>(n);
    ++n;
  };
  for (size_t i = 0; i < length;) {
    uint32_t c = 0;
    const size_t sequence = t.byte_level ? 1 : tok_sequence(piece, length, i, &c);
    const size_t bytes = sequence ? sequence : 1; // an invalid byte is a character of its own
    const int32_t id = t.byte_level ? t.byte_ids[piece[i]] : tok_find_word(t, piece + i, bytes);
    bool fallback = !t.byte_level && id < 0;
    for (size_t k = 0; k < bytes && fallback; ++k)
      fallback = t.byte_ids[piece[i + k]] >= 0;
    if (id >= 0)
      push(id);
    else if (fallback)
      for (size_t k = 0; k < bytes; ++k)
        push(t.byte_ids[piece[i + k]]);
    else if (!(t.fuse_unk && n && symbols[n - 1].id == t.unk_id)) // the tables guarantee an unk_id here
      push(t.unk_id);
    i += bytes;
  }
  return n;
}

/// BPE on one piece: its first symbols, then the lowest-ranked adjacent pair merged (the
/// leftmost of equals) until none merges.
inline void tok_bpe(const TokTables &t, const uint8_t *piece, size_t length, void *scratch, TokOutput *out) {
  if (t.whole_pieces)
    if (const int32_t id = tok_find_word(t, piece, length); id >= 0)
      return out->push(id);
  TokSymbol *symbols = static_cast<TokSymbol *>(scratch);
  TokCandidate *heap = reinterpret_cast<TokCandidate *>(symbols + length);
  const size_t n = tok_first_symbols(t, piece, length, symbols);
  size_t size = 0;
  for (size_t i = 0; i + 1 < n; ++i)
    tok_offer(t, symbols, static_cast<int32_t>(i), heap, &size);
  while (size) {
    const TokCandidate c = tok_heap_pop(heap, &size);
    TokSymbol &left = symbols[c.pos];
    if (left.id < 0 || left.next < 0) // merged away, or nothing to its right any more
      continue;
    if (tok_find_merge(t, left.id, symbols[left.next].id) != c.rank) // the pair changed since it was offered
      continue;
    TokSymbol &right = symbols[left.next];
    left.id = c.merged;
    left.next = right.next;
    if (right.next >= 0)
      symbols[right.next].prev = c.pos;
    right.id = -1;
    tok_offer(t, symbols, left.prev, heap, &size);
    tok_offer(t, symbols, c.pos, heap, &size);
  }
  for (int32_t i = n ? 0 : -1; i >= 0; i = symbols[i].next)
    out->push(symbols[i].id);
}

/// `p` rounded up to a multiple of `align` (a power of two).
inline uint8_t *tok_align(uint8_t *p, uintptr_t align) {
  return reinterpret_cast<uint8_t *>((reinterpret_cast<uintptr_t>(p) + align - 1) & ~(align - 1));
}

/// Splits text[begin, end) by split `k` and the ones after it, then BPE on each piece.
inline void tok_split(const TokTables &t, uint32_t k, const uint8_t *text, size_t begin, size_t end, void *scratch,
                      TokOutput *out) {
  if (t.space_level && k == t.space_level && begin < end && text[begin] != ' ') {
    // The piece with its space, at the front of the scratch; what follows works after it.
    uint8_t *spaced = static_cast<uint8_t *>(scratch);
    spaced[0] = ' ';
    memcpy(spaced + 1, text + begin, end - begin);
    return tok_split(t, k, spaced, 0, end - begin + 1, tok_align(spaced + end - begin + 1, 16), out);
  }
  if (k == t.split_count) {
    if (end > begin)
      tok_bpe(t, text + begin, end - begin, scratch, out);
    return;
  }
  const TokSplit split = tok_split_tables(t, k);
  size_t gap = begin;
  for (size_t start = begin; start < end;) {
    // A match may not run past the piece: the scanner sees the piece as the whole text.
    const size_t match = tok_match_at(split, text + begin, end - begin, start - begin) + begin;
    if (match == start) {
      size_t bytes = 0;
      tok_symbol(split, text, end, start, &bytes);
      start += bytes;
      continue;
    }
    if (gap < start && !split.matches_only)
      tok_split(t, k + 1, text, gap, start, scratch, out);
    tok_split(t, k + 1, text, start, match, scratch, out);
    gap = start = match;
  }
  if (gap < end && !split.matches_only)
    tok_split(t, k + 1, text, gap, end, scratch, out);
}

/// The most bytes `length` bytes of text become through the normalizer.
inline size_t tok_normalized_bound(const TokTables &t, size_t length) { return t.growth * length + t.growth_extra; }

/// The buffers the normalizer's steps write to in turn: two for the file's steps, two more for
/// the pre-tokenizer's (they run on pieces of the first two's result).
inline uint32_t tok_buffers(const TokTables &t) { return 2 * ((t.normalizer_steps > 0) + (t.pre_steps > 0)); }

/// The scratch tok_encode needs for `length` bytes of text: the normalizer's buffers, the code
/// points of a Unicode step (twice: sorting merges through a copy), then BPE's symbols and
/// candidates (after a piece's copy with its space, for space_level: a byte more, aligned). SIZE_MAX for a text
/// tok_encode refuses: one whose normalized bound passes INT32_MAX bytes (BPE's positions are int32_t), or whose
/// scratch size does not fit a size_t (a 32-bit target's).
inline size_t tok_encode_scratch_size(const TokTables &t, size_t length) {
  const uint64_t limit = 0x7FFFFFFF;
  if (length > (limit - t.growth_extra) / t.growth)
    return SIZE_MAX;
  const uint64_t normalized = uint64_t(t.growth) * length + t.growth_extra;
  const uint64_t points = uint64_t(t.points_growth) * length + t.points_extra;
  const uint64_t spaced = t.space_level ? normalized + 16 + kTokScratchPerByte : 0;
  const uint64_t bytes =
      tok_buffers(t) * normalized + 2 * sizeof(uint32_t) * points + kTokScratchPerByte * normalized + spaced + 48;
  return bytes > SIZE_MAX ? SIZE_MAX : static_cast<size_t>(bytes);
}

/// Where one text's work goes in the caller's scratch (tok_encode_scratch_size's layout).
struct TokWork {
  uint8_t *buffers[2],
      *pre_buffers[2];     // the file's steps write to each of the first in turn, the pre-tokenizer's to the others
  uint32_t *points, *temp; // a Unicode step's code points
  uint8_t *bpe;
};

/// The layout for `length` bytes of text, in scratch of tok_encode_scratch_size(t, length) bytes.
inline TokWork tok_work(const TokTables &t, uint8_t *scratch, size_t length) {
  const size_t bound = tok_normalized_bound(t, length);
  TokWork w;
  w.buffers[0] = scratch, w.buffers[1] = scratch + bound;
  uint8_t *pre = scratch + (t.normalizer_steps ? 2 * bound : 0);
  w.pre_buffers[0] = pre, w.pre_buffers[1] = pre + bound;
  uint8_t *points = tok_align(scratch + tok_buffers(t) * bound, 4);
  const size_t count = size_t(t.points_growth) * length + t.points_extra;
  w.points = reinterpret_cast<uint32_t *>(points);
  w.temp = w.points + count;
  w.bpe = tok_align(reinterpret_cast<uint8_t *>(w.temp + count), 16); // 4-byte fields
  return w;
}

/// Whether a Prepend, Prefix or PrefixFirst step puts its text before `in` (`at_start`: `in`
/// begins what is encoded).
inline bool tok_prefixes(const TokImageNormalize &step, const uint8_t *to, const uint8_t *in, size_t length,
                         bool at_start) {
  if (length == 0 || (step.kind == tok_step_prefix_first && !at_start))
    return false;
  return step.kind == tok_step_prepend || length < step.to_length || memcmp(in, to, step.to_length) != 0;
}

/// text[0, length) through normalizer steps [first, first + count), from one of `buffers` into
/// the other; returns the result (text itself when there are no steps) and its length in
/// *result_length.
inline const uint8_t *tok_normalize(const TokTables &t, uint32_t first, uint32_t count, const uint8_t *text,
                                    size_t length, bool at_start, uint8_t *const buffers[2], const TokWork &w,
                                    size_t *result_length) {
  const uint8_t *in = text;
  for (uint32_t k = 0; k < count; ++k) {
    const TokImageNormalize &step = t.normalizer[first + k];
    const uint8_t *from = t.image + step.from, *to = t.image + step.to;
    uint8_t *out = buffers[k % 2];
    size_t n = 0;
    if (step.kind == tok_step_unicode) {
      n = tok_normalize_unicode(t.image, *tok_array<TokImageUnicode>(t.image, step.unicode), in, length, w.points,
                                w.temp, out);
    } else if (step.kind != tok_step_replace) { // Prepend, Prefix, PrefixFirst
      if (tok_prefixes(step, to, in, length, at_start)) {
        memcpy(out, to, step.to_length);
        n = step.to_length;
      }
      memcpy(out + n, in, length);
      n += length;
    } else {
      for (size_t i = 0; i < length;) {
        if (length - i >= step.from_length && memcmp(in + i, from, step.from_length) == 0) {
          memcpy(out + n, to, step.to_length);
          n += step.to_length;
          i += step.from_length;
        } else {
          out[n++] = in[i++];
        }
      }
    }
    in = out;
    length = n;
  }
  *result_length = length;
  return in;
}

/// One piece of normalized text between added tokens (`at_start`: it begins what is encoded):
/// the pre-tokenizer's steps on it, then split and merged.
inline void tok_piece(const TokTables &t, const uint8_t *text, size_t length, bool at_start, const TokWork &w,
                      TokOutput *out) {
  if (length == 0)
    return;
  size_t piece_length = 0;
  const uint8_t *piece =
      tok_normalize(t, t.normalizer_steps, t.pre_steps, text, length, at_start, w.pre_buffers, w, &piece_length);
  tok_split(t, 0, piece, 0, piece_length, w.bpe, out);
}

/// One text between added tokens (`at_start`: the first of what is encoded): normalized, split at
/// the normalized added tokens, each piece pre-tokenized, split and merged.
inline void tok_segment(const TokTables &t, const uint8_t *text, size_t length, bool at_start, unsigned flags,
                        const TokWork &w, TokOutput *out) {
  if (length == 0)
    return;
  size_t normalized_length = 0;
  const uint8_t *normalized =
      tok_normalize(t, 0, t.normalizer_steps, text, length, at_start, w.buffers, w, &normalized_length);
  tok_split_added(
      t.image, *t.added_normalized, t.word_runs, normalized, normalized_length,
      flags & TOK_ENCODE_SPECIAL ? 0 : tok_added_special,
      [&](size_t begin, size_t end) { tok_piece(t, normalized + begin, end - begin, at_start && begin == 0, w, out); },
      [&](int32_t id) { out->push(id); });
}

/// Encodes text[0, length): the added tokens first, the rest normalized, split and merged
/// (docs/tokenizer.md).
inline int tok_encode(const TokTables &t, const char *text, size_t length, unsigned flags, void *scratch,
                      size_t scratch_size, int32_t *ids, size_t cap, size_t *count) {
  const size_t needed = tok_encode_scratch_size(t, length);
  if ((!text && length) || !count || (!ids && cap) || !scratch || needed == SIZE_MAX || scratch_size < needed)
    return status_err_arg;
  const uint8_t *bytes = reinterpret_cast<const uint8_t *>(text);
  const TokWork work = tok_work(t, static_cast<uint8_t *>(scratch), length);
  TokOutput out{ids, cap, 0};
  if (flags & TOK_ENCODE_BOS_EOS)
    for (uint32_t i = 0; i < t.prefix_count; ++i)
      out.push(t.prefix_ids[i]);
  const uint8_t skip = tok_added_normalized | (flags & TOK_ENCODE_SPECIAL ? 0 : tok_added_special);
  tok_split_added(
      t.image, *t.added, t.word_runs, bytes, length, skip,
      [&](size_t begin, size_t end) { tok_segment(t, bytes + begin, end - begin, begin == 0, flags, work, &out); },
      [&](int32_t id) { out.push(id); });
  if (flags & TOK_ENCODE_BOS_EOS)
    for (uint32_t i = 0; i < t.suffix_count; ++i)
      out.push(t.suffix_ids[i]);
  *count = out.count;
  return out.count > cap ? status_err_space : status_ok;
}

/// The streaming decoder: WHATWG's UTF-8 decoder over the tokens' bytes, so a sequence split
/// between tokens is held back and every maximal invalid subpart becomes U+FFFD; and the
/// decoder's start-of-text rule, leading spaces dropped.
struct TokDecoder {
  uint8_t held[4];      // the incomplete sequence so far
  uint8_t count;        // bytes held
  uint8_t needed;       // bytes the sequence still needs
  uint8_t lower, upper; // the bounds of its next byte
  uint8_t strip;        // leading spaces still to drop
};

/// Starts a stream in *d; nothing for a NULL d.
inline void tok_decoder_init(const TokTables &t, TokDecoder *d) {
  if (d)
    *d = TokDecoder{{0, 0, 0, 0}, 0, 0, 0x80, 0xBF, static_cast<uint8_t>(t.strip_leading)};
}

/// Appends bytes to out (counting them past cap; written only when they fit), dropping the
/// leading spaces the decoder still strips.
struct TokText {
  char *out;
  size_t cap, length;
  uint8_t *strip;
  void put(const uint8_t *bytes, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      if (*strip && bytes[i] == ' ') {
        --*strip;
        continue;
      }
      *strip = 0;
      if (length < cap)
        out[length] = static_cast<char>(bytes[i]);
      ++length;
    }
  }
  void replacement() {
    static const uint8_t fffd[3] = {0xEF, 0xBF, 0xBD};
    put(fffd, 3);
  }
};

/// One byte through the decoder.
inline void tok_decode_byte(TokDecoder *d, uint8_t b, TokText *text) {
  for (;;) {
    if (d->needed == 0) {
      d->lower = 0x80, d->upper = 0xBF;
      if (b < 0x80)
        return text->put(&b, 1);
      d->needed = b >= 0xC2 && b <= 0xDF ? 1 : b >= 0xE0 && b <= 0xEF ? 2 : b >= 0xF0 && b <= 0xF4 ? 3 : 0;
      if (d->needed == 0)
        return text->replacement();
      d->lower = b == 0xE0 ? 0xA0 : b == 0xF0 ? 0x90 : 0x80;
      d->upper = b == 0xED ? 0x9F : b == 0xF4 ? 0x8F : 0xBF;
      d->held[0] = b, d->count = 1;
      return;
    }
    if (b < d->lower || b > d->upper) { // the held bytes are a maximal invalid subpart; b starts anew
      d->needed = 0, d->count = 0;
      text->replacement();
      continue;
    }
    d->lower = 0x80, d->upper = 0xBF;
    d->held[d->count++] = b;
    if (--d->needed == 0) {
      text->put(d->held, d->count);
      d->count = 0;
    }
    return;
  }
}

/// Appends token `id`'s text to out[0, cap): what is complete so far (*length bytes).
/// status_err_space, the decoder unchanged, when it does not fit; status_err_token for an unknown id.
inline int tok_decode_next(const TokTables &t, TokDecoder *d, int32_t id, char *out, size_t cap, size_t *length) {
  if (!d || !length || (!out && cap))
    return status_err_arg;
  if (id < 0 || id >= t.ids)
    return status_err_token;
  const uint8_t *bytes = t.blob + t.token_offsets[id];
  const size_t n = t.token_offsets[id + 1] - t.token_offsets[id];
  if (cap < 3 * (3 + n)) { // it may not fit: measure first, so a buffer too small changes nothing
    TokDecoder trial = *d;
    TokText measure{nullptr, 0, 0, &trial.strip};
    for (size_t i = 0; i < n; ++i)
      tok_decode_byte(&trial, bytes[i], &measure);
    if (measure.length > cap) {
      *length = measure.length;
      return status_err_space;
    }
  }
  TokText text{out, cap, 0, &d->strip};
  for (size_t i = 0; i < n; ++i)
    tok_decode_byte(d, bytes[i], &text);
  *length = text.length;
  return status_ok;
}

/// Ends a stream: an incomplete sequence held back becomes U+FFFD. The decoder starts anew.
inline int tok_decode_flush(const TokTables &t, TokDecoder *d, char *out, size_t cap, size_t *length) {
  if (!d || !length || (!out && cap))
    return status_err_arg;
  *length = d->count ? 3 : 0;
  if (*length > cap)
    return status_err_space;
  if (d->count) {
    TokText text{out, cap, 0, &d->strip};
    text.replacement();
  }
  tok_decoder_init(t, d);
  return status_ok;
}

/// Points *bytes at the *length bytes token `id` stands for in a text.
inline int tok_token_bytes(const TokTables &t, int32_t id, const char **bytes, size_t *length) {
  if (!bytes || !length)
    return status_err_arg;
  if (id < 0 || id >= t.ids)
    return status_err_token;
  *bytes = reinterpret_cast<const char *>(t.blob + t.token_offsets[id]);
  *length = t.token_offsets[id + 1] - t.token_offsets[id];
  return status_ok;
}

/// The added token whose content is exactly text[0, length), or -1.
inline int32_t tok_token_id(const TokTables &t, const char *text, size_t length) {
  size_t found = 0;
  const int32_t k = text && length
                        ? tok_added_at(t.image, *t.added, reinterpret_cast<const uint8_t *>(text), length, 0, 0, &found)
                        : -1;
  // The longest entry that starts the text: the one, when it is all of it.
  return k >= 0 && found == length ? tok_array<int32_t>(t.image, t.added->ids)[k] : -1;
}

/// The most stack tok_encode takes with `split_count` splits (each split's level of tok_split
/// recurses into the next), for the header's NAME_ENCODE_STACK_BYTES: measured at most 1.3 KB
/// with one split on x86_64, GCC and Clang, -O0 to -O3 (test/e2e/text_behaviour.c checks it).
constexpr size_t tok_encode_stack_bytes(uint32_t split_count) { return 2048 + 256 * size_t(split_count); }

/// The bytes the C interface's NAME_decoder holds: a TokDecoder fits.
constexpr size_t tok_decoder_bytes = 16;
static_assert(sizeof(TokDecoder) <= tok_decoder_bytes && alignof(TokDecoder) == 1, "NAME_decoder holds a TokDecoder");

} // namespace needle_rt

#endif // NEEDLE_RT_TOKENIZER_H
