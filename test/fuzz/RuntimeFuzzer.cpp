// fuzz-runtime: the C interface of a model emitted by needlec --emit cpp (docs/c-interface.md),
// driven by a call sequence decoded from the input. Session A gets every call; session B, opened
// in an arena filled with other bytes, mirrors only the calls that must succeed. After each call:
// the status is the contract's, a refused call left A exactly as it was, A and B show the same
// outputs bit for bit, and a reset or reopened session shows what a fresh one does. The model is
// the tiny preset at 2 blocks, max_seq_len 16 (CMakeLists.txt): a few bytes feed past the end.
#include "FuzzHarness.h"
#include "fuzz_model.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

const fuzz_model_info_t &info = *fuzz_model_info();
const size_t kArenaSize = fuzz_model_arena_size(), kAlign = fuzz_model_arena_align();
const int32_t kVocab = static_cast<int32_t>(info.vocab_size);

/// Everything a session shows.
struct Snapshot {
  explicit Snapshot(const fuzz_model_session *s)
      : position(fuzz_model_position(s)), confidence(fuzz_model_confidence(s)),
        logits(fuzz_model_logits(s), fuzz_model_logits(s) + info.vocab_size), embedding(info.embedding_dim) {
    embeddingStatus = fuzz_model_embedding(s, embedding.data());
  }

  /// Bit for bit, NaNs included.
  bool operator==(const Snapshot &o) const {
    return position == o.position && embeddingStatus == o.embeddingStatus &&
           std::memcmp(&confidence, &o.confidence, sizeof confidence) == 0 &&
           std::memcmp(logits.data(), o.logits.data(), logits.size() * sizeof(float)) == 0 &&
           std::memcmp(embedding.data(), o.embedding.data(), embedding.size() * sizeof(float)) == 0;
  }

  size_t position;
  float confidence;
  int embeddingStatus = 0;
  std::vector<float> logits, embedding;
};

/// `bytes` of memory aligned as the model asks, exactly that long: AddressSanitizer catches a
/// session touching the byte past its arena.
void *alignedBytes(size_t bytes) {
  void *memory = nullptr;
  NEEDLE_FUZZ_CHECK(posix_memalign(&memory, std::max(kAlign, sizeof(void *)), bytes) == 0);
  return memory;
}

/// An arena of arena_size() bytes and the session last opened in it. Any bytes must do, so each
/// open fills the arena with a byte of the input first.
struct Arena {
  void *memory = alignedBytes(kArenaSize);
  fuzz_model_session *session = nullptr;

  void open(uint8_t fill) {
    std::memset(memory, fill, kArenaSize);
    session = fuzz_model_open(memory, kArenaSize);
    NEEDLE_FUZZ_CHECK(session != nullptr);
  }
};

/// The input, a byte at a time; zeros once it runs out.
class Reader {
public:
  Reader(const uint8_t *data, size_t size) : data_(data), left_(size) {}
  bool empty() const { return left_ == 0; }
  uint8_t next() { return left_ ? (--left_, *data_++) : 0; }

private:
  const uint8_t *data_;
  size_t left_;
};

/// Mostly a valid id; bytes 0xf0 and up pick an edge case, most of them outside [0, vocab_size).
int32_t decodeToken(Reader &in) {
  const uint8_t byte = in.next();
  if (byte < 0xf0)
    return byte % kVocab;
  const int32_t edges[] = {kVocab - 1, kVocab, kVocab + 1, -1, -kVocab, INT32_MIN, INT32_MAX, 0};
  return edges[(byte - 0xf0) % 8];
}

/// What feed(s, tokens, n) must return for a session holding `position` tokens: a bad token
/// wins over a full session, and n = 0 always succeeds.
int expectedFeed(const int32_t *tokens, size_t n, size_t position) {
  if (!tokens && n)
    return NEEDLE_ERR_ARG;
  for (size_t i = 0; i < n; ++i)
    if (tokens[i] < 0 || tokens[i] >= kVocab)
      return NEEDLE_ERR_TOKEN;
  return n > info.max_seq_len - position ? NEEDLE_ERR_FULL : NEEDLE_OK;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static Arena a, b;
  static const Snapshot fresh = [] {
    Arena f;
    f.open(0);
    Snapshot s(f.session);
    std::free(f.memory);
    return s;
  }();
  // Room for open() to refuse: too small, or misaligned by up to kAlign - 1 bytes.
  static uint8_t *const room = static_cast<uint8_t *>(alignedBytes(kArenaSize + kAlign));

  Reader in(data, size);
  const uint8_t fill = in.next();
  a.open(fill);
  b.open(fill ^ 0xff);
  size_t position = 0;
  for (int call = 0; call < 64 && !in.empty(); ++call) {
    const Snapshot before(a.session);
    bool refused = false, wasReset = false;
    switch (in.next() % 5) {
    case 0: { // feed 0 to max_seq_len + 3 tokens
      std::vector<int32_t> tokens(in.next() % (info.max_seq_len + 4));
      for (int32_t &token : tokens)
        token = decodeToken(in);
      const int expected = expectedFeed(tokens.data(), tokens.size(), position);
      NEEDLE_FUZZ_CHECK(fuzz_model_feed(a.session, tokens.data(), tokens.size()) == expected);
      if (expected == NEEDLE_OK) {
        NEEDLE_FUZZ_CHECK(fuzz_model_feed(b.session, tokens.data(), tokens.size()) == NEEDLE_OK);
        position += tokens.size();
      }
      refused = expected != NEEDLE_OK;
      break;
    }
    case 1:
      fuzz_model_reset(a.session);
      fuzz_model_reset(b.session);
      position = 0, wasReset = true;
      break;
    case 2: { // reopen both arenas over new bytes
      const uint8_t refill = in.next();
      a.open(refill);
      b.open(refill ^ 0xff);
      position = 0, wasReset = true;
      break;
    }
    case 3: { // NULL arguments
      const size_t n = in.next() % 4;
      const int32_t token = decodeToken(in);
      float out[1];
      NEEDLE_FUZZ_CHECK(fuzz_model_feed(a.session, nullptr, n) == expectedFeed(nullptr, n, position));
      NEEDLE_FUZZ_CHECK(fuzz_model_feed(nullptr, &token, n) == NEEDLE_ERR_ARG);
      NEEDLE_FUZZ_CHECK(fuzz_model_embedding(a.session, nullptr) == NEEDLE_ERR_ARG);
      NEEDLE_FUZZ_CHECK(fuzz_model_embedding(nullptr, out) == NEEDLE_ERR_ARG);
      refused = true;
      break;
    }
    case 4: { // arenas open() must refuse, in a room of its own
      const size_t shortBy = 1 + in.next() % kArenaSize, misaligned = 1 + in.next() % std::max<size_t>(kAlign - 1, 1);
      NEEDLE_FUZZ_CHECK(fuzz_model_open(nullptr, kArenaSize) == nullptr);
      NEEDLE_FUZZ_CHECK(fuzz_model_open(room, kArenaSize - shortBy) == nullptr);
      if (kAlign > 1)
        NEEDLE_FUZZ_CHECK(fuzz_model_open(room + misaligned, kArenaSize) == nullptr);
      refused = true;
      break;
    }
    }
    const Snapshot after(a.session);
    NEEDLE_FUZZ_CHECK(after.position == position);
    NEEDLE_FUZZ_CHECK(!refused || after == before);
    NEEDLE_FUZZ_CHECK(!wasReset || after == fresh);
    NEEDLE_FUZZ_CHECK(after == Snapshot(b.session));
  }
  return 0;
}
