// NAME_sample's rules (docs/c-interface.md, "Sampling") on a session whose logits the test
// writes: frequencies against probabilities worked out by hand from the logits, the rules'
// order, ties, the penalty, the RNG's known first output, and every refusal.
#include "runtime/needle_runtime.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <vector>

namespace {

using needle_rt::SampleParams;
using needle_rt::SampleRng;

constexpr int64_t kHeader = 64;

/// A session of a model that only has logits: the header, then vocab floats.
class Logits {
public:
  explicit Logits(std::vector<float> logits) : arena_(kHeader + logits.size() * 4 + 64) {
    const int64_t vocab = static_cast<int64_t>(logits.size());
    facts_ = {kHeader + vocab * 4, 64, kHeader + vocab * 4, 8, vocab, 0, kHeader, 1, 0.0f, 42, 0, 0, nullptr, 2, 0};
    session_ = needle_rt::session_open(facts_, aligned(), static_cast<size_t>(facts_.arena_size));
    std::memcpy(static_cast<unsigned char *>(session_) + kHeader, logits.data(), logits.size() * 4);
    auto *header = static_cast<needle_rt::SessionHeader *>(session_);
    header->position = header->high_water = 1;
    scratch_.resize(logits.size());
  }

  int sample(const SampleParams *params, SampleRng *rng, int32_t *token) {
    return needle_rt::session_sample(facts_, session_, params, rng, scratch_.data(), scratch_.size() * 8, token);
  }
  int sample(const SampleParams *params, SampleRng *rng, void *scratch, size_t size, int32_t *token) {
    return needle_rt::session_sample(facts_, session_, params, rng, scratch, size, token);
  }
  /// How often each token comes out of `draws` samples from seed 1.
  std::map<int32_t, double> frequencies(const SampleParams &params, int draws = 40000) {
    SampleRng rng{1};
    std::map<int32_t, double> counts;
    for (int i = 0; i < draws; ++i) {
      int32_t token = -1;
      EXPECT_EQ(sample(&params, &rng, &token), needle_rt::status_ok);
      counts[token] += 1.0 / draws;
    }
    return counts;
  }

private:
  void *aligned() {
    const auto at = reinterpret_cast<uintptr_t>(arena_.data());
    return arena_.data() + (64 - at % 64) % 64;
  }

  std::vector<unsigned char> arena_;
  needle_rt::ModelFacts facts_;
  void *session_ = nullptr;
  std::vector<std::pair<float, int32_t>> scratch_;
};

SampleParams params(float temperature) { return {temperature, 0, 1.0f, 0.0f, 1.0f, nullptr, 0}; }

/// Logits whose softmax is 1/2, 1/4, 1/8, 1/8.
std::vector<float> halves() { return {std::log(0.5f), std::log(0.25f), std::log(0.125f), std::log(0.125f)}; }

void expectFrequencies(const std::map<int32_t, double> &got, const std::map<int32_t, double> &want) {
  // 40000 draws: a frequency's standard deviation is at most 0.0025; 0.012 is over four of them.
  for (const auto &[token, p] : want)
    EXPECT_NEAR(got.count(token) ? got.at(token) : 0.0, p, 0.012) << "token " << token;
  for (const auto &[token, f] : got)
    EXPECT_TRUE(want.count(token)) << "token " << token << " drawn " << f << " of the time";
}

TEST(Sample, RngIsSplitmix64) {
  // splitmix64's first output from state 0 is 0xE220A8397B1DCDAF (Vigna's reference code); the
  // fraction is its top 24 bits.
  SampleRng rng{0};
  EXPECT_EQ(needle_rt::rng_fraction(&rng), static_cast<float>(0xE220A8) / 16777216.0f);
  EXPECT_EQ(rng.state, 0x9E3779B97F4A7C15u);
}

TEST(Sample, GreedyIsTheLargestLogitLowestIdOnATie) {
  Logits session({0.5f, 2.0f, -1.0f, 2.0f});
  int32_t token = -1;
  // No params: greedy, and neither rng nor scratch is needed.
  EXPECT_EQ(needle_rt::session_sample(needle_rt::ModelFacts{}, nullptr, nullptr, nullptr, nullptr, 0, &token),
            needle_rt::status_err_arg);
  EXPECT_EQ(session.sample(nullptr, nullptr, nullptr, 0, &token), needle_rt::status_ok);
  EXPECT_EQ(token, 1);
  const SampleParams zero = params(0.0f);
  EXPECT_EQ(session.sample(&zero, nullptr, nullptr, 0, &token), needle_rt::status_ok);
  EXPECT_EQ(token, 1);
}

TEST(Sample, TemperatureOneDrawsTheSoftmax) {
  Logits session(halves());
  expectFrequencies(session.frequencies(params(1.0f)), {{0, 0.5}, {1, 0.25}, {2, 0.125}, {3, 0.125}});
}

TEST(Sample, TemperatureTwoDrawsTheSquareRoots) {
  Logits session(halves());
  // p^(1/2) normalized: 0.7071, 0.5, 0.3536, 0.3536 over 1.9142.
  expectFrequencies(session.frequencies(params(2.0f)), {{0, 0.3694}, {1, 0.2612}, {2, 0.1847}, {3, 0.1847}});
}

TEST(Sample, TopKKeepsTheLargestRenormalized) {
  Logits session(halves());
  SampleParams p = params(1.0f);
  p.top_k = 2;
  expectFrequencies(session.frequencies(p), {{0, 2.0 / 3}, {1, 1.0 / 3}});
  p.top_k = 3; // 2 and 3 tie: the lower id stays
  expectFrequencies(session.frequencies(p), {{0, 4.0 / 7}, {1, 2.0 / 7}, {2, 1.0 / 7}});
}

TEST(Sample, TopPKeepsTheFewestThatReachIt) {
  Logits session(halves());
  SampleParams p = params(1.0f);
  p.top_p = 0.7f; // 0.5 does not reach it, 0.5 + 0.25 does
  expectFrequencies(session.frequencies(p), {{0, 2.0 / 3}, {1, 1.0 / 3}});
  p.top_p = 0.4f; // the likeliest alone
  expectFrequencies(session.frequencies(p), {{0, 1.0}});
  Logits shuffled({std::log(0.125f), std::log(0.5f), std::log(0.125f), std::log(0.25f)});
  p.top_p = 0.7f;
  expectFrequencies(shuffled.frequencies(p), {{1, 2.0 / 3}, {3, 1.0 / 3}});
}

TEST(Sample, MinPDropsTheUnlikely) {
  Logits session(halves());
  SampleParams p = params(1.0f);
  p.min_p = 0.3f; // at least 0.15: tokens 0 and 1
  expectFrequencies(session.frequencies(p), {{0, 2.0 / 3}, {1, 1.0 / 3}});
  p.min_p = 5.0f; // more than the likeliest itself: it stays, alone
  expectFrequencies(session.frequencies(p), {{0, 1.0}});
}

TEST(Sample, RulesApplyInOrder) {
  Logits session(halves());
  SampleParams p = params(1.0f);
  p.top_k = 3;     // 4/7, 2/7, 1/7
  p.top_p = 0.8f;  // 4/7 + 2/7 = 0.857 reaches it
  p.min_p = 0.45f; // 2/7 is half of 4/7: kept
  expectFrequencies(session.frequencies(p), {{0, 2.0 / 3}, {1, 1.0 / 3}});
}

TEST(Sample, RepetitionPenaltyDividesPositiveMultipliesNegativeOnce) {
  int32_t token = -1;
  SampleParams p = params(0.0f);
  p.repetition_penalty = 2.0f;
  const int32_t twice[] = {0, 0};
  p.recent = twice;
  p.recent_count = 2;
  Logits positive({4.0f, 1.5f}); // 4 / 2 = 2 > 1.5 (divided twice, 1 would lose)
  EXPECT_EQ(positive.sample(&p, nullptr, &token), needle_rt::status_ok);
  EXPECT_EQ(token, 0);
  Logits close({2.0f, 1.9f}); // 1.0 < 1.9
  EXPECT_EQ(close.sample(&p, nullptr, &token), needle_rt::status_ok);
  EXPECT_EQ(token, 1);
  Logits negative({-1.0f, -1.5f}); // -2 < -1.5
  EXPECT_EQ(negative.sample(&p, nullptr, &token), needle_rt::status_ok);
  EXPECT_EQ(token, 1);
}

TEST(Sample, SameSeedSameTokens) {
  Logits session(halves());
  const SampleParams p = params(1.0f);
  auto draws = [&](uint64_t seed) {
    SampleRng rng{seed};
    std::vector<int32_t> tokens(64);
    for (int32_t &token : tokens)
      EXPECT_EQ(session.sample(&p, &rng, &token), needle_rt::status_ok);
    return tokens;
  };
  EXPECT_EQ(draws(7), draws(7));
  EXPECT_NE(draws(7), draws(8));
}

TEST(Sample, Refusals) {
  Logits session(halves());
  int32_t token = 0;
  SampleRng rng{1};
  SampleParams p = params(1.0f);
  std::vector<float> scratch(8);
  EXPECT_EQ(session.sample(&p, &rng, nullptr), needle_rt::status_err_arg);                    // no token
  EXPECT_EQ(session.sample(&p, nullptr, &token), needle_rt::status_err_arg);                  // no rng
  EXPECT_EQ(session.sample(&p, &rng, nullptr, 0, &token), needle_rt::status_err_arg);         // no scratch
  EXPECT_EQ(session.sample(&p, &rng, scratch.data(), 31, &token), needle_rt::status_err_arg); // too small
  EXPECT_EQ(session.sample(&p, &rng, reinterpret_cast<char *>(scratch.data()) + 1, 31, &token),
            needle_rt::status_err_arg); // misaligned
  EXPECT_EQ(session.sample(&p, &rng, scratch.data(), 32, &token), needle_rt::status_ok);
  for (float SampleParams::*field :
       {&SampleParams::temperature, &SampleParams::top_p, &SampleParams::min_p, &SampleParams::repetition_penalty}) {
    SampleParams bad = p;
    bad.*field = NAN;
    EXPECT_EQ(session.sample(&bad, &rng, &token), needle_rt::status_err_arg);
  }
  SampleParams bad = p;
  bad.top_p = -0.1f;
  EXPECT_EQ(session.sample(&bad, &rng, &token), needle_rt::status_err_arg);
  bad = p;
  bad.repetition_penalty = 0.0f;
  EXPECT_EQ(session.sample(&bad, &rng, &token), needle_rt::status_err_arg);
  bad = p;
  bad.recent_count = 1; // with no recent tokens
  EXPECT_EQ(session.sample(&bad, &rng, &token), needle_rt::status_err_arg);
  const int32_t outside[] = {4};
  bad.recent = outside;
  EXPECT_EQ(session.sample(&bad, &rng, &token), needle_rt::status_err_token);
}

} // namespace
