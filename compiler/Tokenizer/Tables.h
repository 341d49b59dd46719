// The compiled tokenizer's tables (docs/tokenizer.md, "The compiled tokenizer"): a TokenizerSpec
// turned into the flat, read-only data the runtime (runtime/tokenizer/tokenizer.h) walks. A
// printer emits them as constants; tests run the runtime on them in process (view()). Plain
// C++, no MLIR.
#pragma once

#include "Tokenizer/TokenizerSpec.h"
#include "runtime/tokenizer/tokenizer.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace needle::tokenizer {

struct TokenizerTables {
  struct Split {
    std::vector<uint32_t> runStarts;
    std::vector<uint8_t> runSymbols;
    std::array<uint8_t, 128> asciiSymbols{};
    uint32_t symbols = 0, invalidSymbol = 0, endSymbol = 0;
    std::vector<int16_t> next;
    std::vector<uint8_t> acceptBefore;
    bool matchesOnly = false;
  };
  /// An NFC or NFKC step's tables (needle_rt::TokImageUnicode).
  struct Unicode {
    uint32_t quickBelow = 0;
    std::vector<uint32_t> decomposed, decompositions, points, classStarts, composites;
    std::vector<uint8_t> classValues;
    std::vector<uint64_t> composePairs;
  };
  /// A set of added tokens (needle_rt::TokImageAdded): by first byte of the text each matches,
  /// longest first.
  struct Added {
    std::array<uint32_t, 257> first{};
    std::vector<int32_t> ids;
    std::vector<uint8_t> rules; // needle_rt::tok_added_* bits
    std::vector<uint8_t> text;
    std::vector<uint32_t> textOffsets{0};
  };
  struct Normalize {
    uint32_t kind = needle_rt::tok_step_replace;
    std::string from, to; // Replace: every `from` becomes `to`; Prepend: `to`
    Unicode unicode;
  };
  int32_t ids = 0;
  bool byteLevel = false;
  std::vector<Normalize> normalizer; // the file's steps, then preSteps of the first pre-tokenizer step's
  uint32_t preSteps = 0;
  uint32_t growth = 1, growthExtra = 0;       // a normalized text's bound
  uint32_t pointsGrowth = 0, pointsExtra = 0; // a Unicode step's code points' bound
  std::vector<uint8_t> blob;                  // every id's bytes in a text, by tokenOffsets [ids + 1]
  std::vector<uint32_t> tokenOffsets;
  std::vector<uint8_t> spelling; // every id's spelling in the vocabulary, by spellingOffsets [ids + 1]
  std::vector<uint32_t> spellingOffsets;
  std::array<int32_t, 256> byteIds{}; // each byte's token, or its <0xNN> (-1: none)
  std::vector<Split> splits;
  uint32_t spaceLevel = 0;                 // a space before each piece that reaches split spaceLevel (0: none)
  std::vector<needle_rt::TokMerge> merges; // 3/4 full
  std::vector<int32_t> mergedIds;          // by rank; empty when each is mergedBase + rank
  int32_t mergedBase = 0;
  std::vector<needle_rt::TokWord> words; // the vocabulary by spelling, when encoding needs it
  bool wholePieces = false;              // a piece that words holds is that token
  bool fuseUnk = false;
  int32_t unk = -1;
  Added added;                      // every added token, by its content
  Added addedNormalized;            // the normalized ones, by their content normalized
  std::vector<uint32_t> wordStarts; // \w as runs from 0, not-word first, when a token is single_word
  std::vector<int32_t> prefixIds, suffixIds;
  uint32_t stripLeading = 0;

  /// The tables as the one image a printer emits (needle_rt::TokImage): each array at its alignment.
  std::vector<uint8_t> image() const;

  /// The runtime's view of image(), kept here; valid while these tables live and do not change.
  needle_rt::TokTables view();

private:
  std::vector<uint8_t> image_;
};

/// How the tables trade bytes for speed (needlec --tokenizer-tables, docs/tokenizer.md).
enum class TableLayout {
  Fast,  // byte-level: also the hash of the tokens BPE makes from their own bytes (whole pieces)
  Small, // without it
};

/// Builds the tables of `spec`; what the compiled tokenizer does not support yet is an error
/// naming `source` and the part.
TokenizerTables buildTokenizerTables(const TokenizerSpec &spec, const std::string &source,
                                     TableLayout layout = TableLayout::Fast);

} // namespace needle::tokenizer
