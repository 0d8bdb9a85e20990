// Every input the fuzzers ever flagged (regressions/<target>/) and every seed (corpus/<target>/)
// goes through the same target body as in the fuzzer (targets.h) and must end well: returned,
// or the tool's clear error. Inputs saved for running out of time or memory (timeout-*, oom-*,
// slow-unit-*) are replayed by scripts/fuzz.sh only, under libFuzzer's limits.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "testbench/fuzz/targets.h"

namespace fs = std::filesystem;
using stepsim::fuzz::outcome;
using stepsim::fuzz::target_named;

namespace {

bool replayed_here(const fs::path& file) {
  const std::string name = file.filename().string();
  for (const char* prefix : {"timeout-", "oom-", "slow-unit-", "README"})
    if (name.rfind(prefix, 0) == 0) return false;
  return true;
}

// Replays every file of DIR/<target>; returns how many it replayed.
int replay(const std::string& dir, const std::string& target) {
  const fs::path folder = fs::path(STEPSIM_FUZZ_DIR) / dir / target;
  int replayed = 0;
  if (!fs::is_directory(folder)) return 0;
  for (const fs::directory_entry& e : fs::directory_iterator(folder)) {
    if (!e.is_regular_file() || !replayed_here(e.path())) continue;
    std::ifstream in(e.path(), std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(outcome(target_named(target), reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()), "")
        << e.path();
    ++replayed;
  }
  return replayed;
}

class FuzzReplay : public ::testing::TestWithParam<std::string> {};

TEST_P(FuzzReplay, SavedFindingsEndInAClearError) { replay("regressions", GetParam()); }

TEST_P(FuzzReplay, SeedCorpusEndsWell) { EXPECT_GT(replay("corpus", GetParam()), 0) << "no seeds for " << GetParam(); }

INSTANTIATE_TEST_SUITE_P(Targets, FuzzReplay, ::testing::Values("graph", "tokens", "npy", "csv", "preset", "tech", "expr"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

// The judge itself: a clear error passes, anything else is named.
TEST(FuzzOutcome, JudgesExceptionTypesAndLibraryText) {
  const uint8_t text[] = "1 2 S1 D";
  EXPECT_EQ(outcome([](const uint8_t*, size_t) { throw std::invalid_argument("stream: bad"); }, text, 8), "");
  EXPECT_EQ(outcome([](const uint8_t*, size_t) { throw std::runtime_error("file: bad"); }, text, 8), "");
  EXPECT_NE(outcome([](const uint8_t*, size_t) { throw std::out_of_range("x"); }, text, 8).find("exception of type"),
            std::string::npos);
  EXPECT_EQ(outcome([](const uint8_t*, size_t) { throw std::invalid_argument("stoll"); }, text, 8),
            "library text 'stoll' in the error: stoll");
  // Text the input itself contains may be quoted back.
  const uint8_t quoted[] = "stoll";
  EXPECT_EQ(outcome([](const uint8_t*, size_t) { throw std::invalid_argument("bad word 'stoll'"); }, quoted, 5), "");
  EXPECT_EQ(outcome([](const uint8_t*, size_t) { throw 1; }, text, 8), "an exception not derived from std::exception");
}

}  // namespace
