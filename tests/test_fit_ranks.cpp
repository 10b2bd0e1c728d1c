// How vkblr-fit cuts a batch over ranks and micro-batches (fit_ranks.hpp):
// contiguous parts in token order, uneven by at most one token, the same
// parts for N ranks × 1 micro-batch as for 1 rank × N micro-batches; bad
// splits refused with a message. (The runs themselves: tests/mpi/fit_ranks.cmake.)
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <string_view>
#include <vector>

#include "support/fake_ranks.hpp"
#include "vkblr-fit/fit_ranks.hpp"
#include "vkblr/error.hpp"

using namespace vkblr;
using Catch::Matchers::ContainsSubstring;
using vkt::FakeRanks;

TEST_CASE("fit ranks: split_tokens cuts contiguous parts in order, one token apart at most", "[fit]") {
  CHECK(fit::split_tokens(64, 2, 0) == fit::FitSlice{0, 32});
  CHECK(fit::split_tokens(64, 2, 1) == fit::FitSlice{32, 32});
  // 65 over 3: 22 + 22 + 21, contiguous
  CHECK(fit::split_tokens(65, 3, 0) == fit::FitSlice{0, 22});
  CHECK(fit::split_tokens(65, 3, 1) == fit::FitSlice{22, 22});
  CHECK(fit::split_tokens(65, 3, 2) == fit::FitSlice{44, 21});
  CHECK(fit::split_tokens(5, 5, 4) == fit::FitSlice{4, 1});
  CHECK_THROWS_AS(fit::split_tokens(4, 5, 0), Error);  // a part without a token
  CHECK_THROWS_AS(fit::split_tokens(8, 2, 2), Error);
  CHECK_THROWS_AS(fit::split_tokens(8, 0, 0), Error);
}

TEST_CASE("fit ranks: N ranks x 1 micro-batch hold the parts of 1 rank x N micro-batches", "[fit]") {
  const std::vector<fit::FitSlice> one = fit::rank_parts(FakeRanks(0, 1), 96, 4);
  REQUIRE(one.size() == 4);
  for (int r = 0; r < 4; ++r) {
    const std::vector<fit::FitSlice> mine = fit::rank_parts(FakeRanks(r, 4), 96, 1);
    REQUIRE(mine.size() == 1);
    CHECK(mine[0] == one[static_cast<std::size_t>(r)]);
    CHECK(mine[0] == fit::FitSlice{24u * static_cast<std::uint32_t>(r), 24});
  }
  // 2 ranks x 2 micro-batches: rank 1 holds tokens [48, 96) as two parts
  CHECK(fit::rank_parts(FakeRanks(1, 2), 96, 2) == std::vector<fit::FitSlice>{{48, 24}, {72, 24}});
  // uneven slices need one micro-batch per rank
  CHECK(fit::rank_parts(FakeRanks(1, 2), 65, 1) == std::vector<fit::FitSlice>{{33, 32}});
  CHECK_THROWS_WITH(fit::rank_parts(FakeRanks(0, 2), 66, 2), ContainsSubstring("--batch 66 is not a multiple of 2 ranks x 2"));
  CHECK_THROWS_WITH(fit::rank_parts(FakeRanks(0, 4), 3, 1), ContainsSubstring("each rank needs a token"));
  CHECK_THROWS_WITH(fit::rank_parts(FakeRanks(0, 1), 64, 0), ContainsSubstring("--micro-batches 0"));
}
