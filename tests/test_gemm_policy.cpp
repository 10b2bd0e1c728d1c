// The GEMM policy: read from the environment (every variable, every
// malformed value refused by name), once per context and only where the
// options set none; its fields as vkblr-info and the MPI ranks' agreement
// check see them.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <deque>
#include <format>
#include <string>
#include <vector>

#include "support/gpu.hpp"
#include "support/scoped_env.hpp"
#include "vkblr/error.hpp"
#include "vkblr/gemm.hpp"
#include "vkblr/gemm_policy.hpp"

using namespace vkblr;
using Catch::Matchers::ContainsSubstring;

namespace {

// Every variable of the GEMM policy unset for the scope.
class NoPolicyVariables {
 public:
  NoPolicyVariables() {
    for (const char* name : {"VKBLR_GEMM_TILE", "VKBLR_GEMM_SPLITK", "VKBLR_MM_COOPMAT", "VKBLR_MM_COOPMAT2",
                             "VKBLR_MM_BITS", "VKBLR_MM_WORD_GROUPS", "VKBLR_GEMM_F32_TILE"}) {
      unset_.emplace_back(name, nullptr);
    }
  }

 private:
  std::deque<vkt::ScopedEnv> unset_;
};

}  // namespace

TEST_CASE("gemm_policy_from_env: each variable sets its field; unset or empty, the default", "[gemm_policy]") {
  const NoPolicyVariables none;
  CHECK(gemm_policy_from_env() == GemmPolicy{});
  const vkt::ScopedEnv tile("VKBLR_GEMM_TILE", ""), splits("VKBLR_GEMM_SPLITK", ""), coopmat("VKBLR_MM_COOPMAT", ""),
      coopmat2("VKBLR_MM_COOPMAT2", ""), bits("VKBLR_MM_BITS", ""), groups("VKBLR_MM_WORD_GROUPS", ""),
      f32_tile("VKBLR_GEMM_F32_TILE", "");
  CHECK(gemm_policy_from_env() == GemmPolicy{});
  coopmat.set("1");  // the defaults, written out
  coopmat2.set("0");
  bits.set("1");
  groups.set("1");
  CHECK(gemm_policy_from_env() == GemmPolicy{});

  // each variable in turn, the ones before it kept
  GemmPolicy want;
  const auto set = [&](const vkt::ScopedEnv& env, const char* value, auto&& field) {
    INFO(value);
    env.set(value);
    field(want);
    CHECK(gemm_policy_from_env() == want);
  };
  set(tile, "64,64,32,32,32,2", [](GemmPolicy& p) { p.tile = GemmTile{64, 64, 32, 32, 32, 2}; });
  set(tile, "64,64,32,32,32,1,2",
      [](GemmPolicy& p) { p.tile = GemmTile{64, 64, 32, 32, 32, 1, GemmKernel::plain, 2}; });
  set(splits, "64", [](GemmPolicy& p) { p.k_splits = 64; });
  set(coopmat, "0", [](GemmPolicy& p) { p.coopmat = false; });
  set(coopmat2, "1", [](GemmPolicy& p) { p.coopmat2 = true; });
  set(bits, "0", [](GemmPolicy& p) { p.bitmap_staging = false; });
  set(groups, "0", [](GemmPolicy& p) { p.word_groups = false; });
  set(f32_tile, "64,64,16,8,8", [](GemmPolicy& p) { p.f32_tile = ops::GemmF32Tile{64, 64, 16, 8, 8}; });
}

TEST_CASE("gemm_policy_from_env: a malformed value throws naming the variable and the value",
          "[gemm_policy][errors]") {
  struct Bad {
    const char* name;
    const char* value;
    const char* expected;
  };
  const char* tile_fields = "expected bm,bn,bk,wm,wn,stages[,prefetch]";
  const Bad cases[] = {
      {"VKBLR_GEMM_TILE", "64,64,32", tile_fields},
      {"VKBLR_GEMM_TILE", "64,64,32,32,32,1,", tile_fields},
      {"VKBLR_GEMM_TILE", "64,64,32,32,32,1,x", tile_fields},
      {"VKBLR_GEMM_TILE", "64,64,32,32,32,1,2,9", tile_fields},
      {"VKBLR_GEMM_TILE", "64,64,32,32,32,1 junk", tile_fields},
      {"VKBLR_GEMM_TILE", "64,-64,32,32,32,1", tile_fields},
      {"VKBLR_GEMM_TILE", "64,64,32,32,32,4294967296", tile_fields},
      {"VKBLR_GEMM_SPLITK", "0", "expected 1..64"},
      {"VKBLR_GEMM_SPLITK", "65", "expected 1..64"},
      {"VKBLR_GEMM_SPLITK", "2x", "expected 1..64"},
      {"VKBLR_GEMM_SPLITK", "-1", "expected 1..64"},
      {"VKBLR_MM_COOPMAT", "yes", "expected 0 or 1"},
      {"VKBLR_MM_COOPMAT2", "2", "expected 0 or 1"},
      {"VKBLR_MM_BITS", "off", "expected 0 or 1"},
      {"VKBLR_MM_WORD_GROUPS", "00", "expected 0 or 1"},
      {"VKBLR_GEMM_F32_TILE", "64,32,4,8", "expected bm,bn,bk,tm,tn"},
      {"VKBLR_GEMM_F32_TILE", "64,32,4,8,4,1", "expected bm,bn,bk,tm,tn"},
  };
  const NoPolicyVariables none;
  for (const Bad& bad : cases) {
    INFO(bad.name << "=" << bad.value);
    const vkt::ScopedEnv env(bad.name, bad.value);
    CHECK_THROWS_WITH(gemm_policy_from_env(),
                      ContainsSubstring(std::format("{}={}: {}", bad.name, bad.value, bad.expected)));
  }
}

TEST_CASE("parse_gemm_tile: the fields in order, or an error naming the field at fault", "[gemm_policy][errors]") {
  CHECK(parse_gemm_tile("64,128,32,16,32,3") == GemmTile{64, 128, 32, 16, 32, 3, GemmKernel::plain, 0});
  CHECK(parse_gemm_tile("64,128,32,16,32,3,2") == GemmTile{64, 128, 32, 16, 32, 3, GemmKernel::plain, 2});
  CHECK(parse_gemm_f32_tile("64,32,8,4,2") == ops::GemmF32Tile{64, 32, 8, 4, 2});
  CHECK_THROWS_WITH(parse_gemm_tile("64,+64,32,32,32,1"),
                    ContainsSubstring("got '64,+64,32,32,32,1': '+64' is not a number"));
  CHECK_THROWS_WITH(parse_gemm_tile("64,64,,32,32,1"), ContainsSubstring("'' is not a number"));
  CHECK_THROWS_WITH(parse_gemm_tile("64,64,32,32,32,4294967296"),
                    ContainsSubstring("4294967296 is beyond 32 bits (at most 4294967295)"));
  CHECK_THROWS_WITH(parse_gemm_tile("64,64,32"),
                    ContainsSubstring("expected bm,bn,bk,wm,wn,stages[,prefetch], got '64,64,32' (3 numbers)"));
  CHECK_THROWS_WITH(parse_gemm_f32_tile("64,32,8,4,2,1"),
                    ContainsSubstring("expected bm,bn,bk,tm,tn, got '64,32,8,4,2,1' (6 numbers)"));
}

TEST_CASE("the GEMM policy's fields: each named once; two policies differ in the fields they differ in",
          "[gemm_policy]") {
  const GemmPolicy base;
  const auto fields = gemm_policy_fields(base);
  const std::vector<std::pair<std::string, std::string>> want{
      {"tile", "auto"},           {"k_splits", "auto"},   {"coopmat", "1"},      {"coopmat2", "0"},
      {"bitmap_staging", "1"},    {"word_groups", "1"},   {"f32_tile", "auto"}};
  CHECK(fields == want);
  CHECK(to_string(base) ==
        "tile auto, k_splits auto, coopmat 1, coopmat2 0, bitmap_staging 1, word_groups 1, f32_tile auto");
  // one policy per field, that field changed: the fields the MPI ranks
  // compare differ in that entry alone
  // (each built whole: GCC -O3 warns of a null dereference when a vector
  // element's optional is assigned in place)
  GemmPolicy tile = base, k_splits = base, coopmat = base, coopmat2 = base, staging = base, groups = base,
             f32_tile = base;
  tile.tile = GemmTile{64, 64, 32, 32, 32, 1, GemmKernel::plain, 2};
  k_splits.k_splits = 1;
  coopmat.coopmat = false;
  coopmat2.coopmat2 = true;
  staging.bitmap_staging = false;
  groups.word_groups = false;
  f32_tile.f32_tile = ops::GemmF32Tile{32, 32, 8, 4, 4};
  const std::vector<GemmPolicy> changed{tile, k_splits, coopmat, coopmat2, staging, groups, f32_tile};
  REQUIRE(changed.size() == fields.size());
  for (std::size_t i = 0; i < changed.size(); ++i) {
    const auto f = gemm_policy_fields(changed[i]);
    REQUIRE(f.size() == fields.size());
    for (std::size_t j = 0; j < f.size(); ++j) {
      INFO("changed " << fields[i].first << ", field " << f[j].first << " = " << f[j].second);
      CHECK(f[j].first == fields[j].first);
      CHECK((f[j].second != fields[j].second) == (i == j));
    }
  }
  CHECK(gemm_policy_fields(changed[0])[0].second == "64,64,32,32,32,1,2");
  CHECK(gemm_policy_fields(changed[6])[6].second == "32,32,8,4,4");
}

GPU_TEST("a context takes its GEMM policy from the environment once, at creation", "[gemm_policy][context]") {
  const NoPolicyVariables none;
  const vkt::ScopedEnv splits("VKBLR_GEMM_SPLITK", "3");
  Context from_env(vkt::shared_options());
  splits.set("5");  // too late for from_env
  CHECK(from_env.gemm_policy().k_splits == 3u);
  const GemmTile tile = gemm_tile_for(from_env, 64, 64, 4096);
  CHECK(gemm_splits_for(from_env, tile, 64, 64, 4096) == 3);
  vkt::check_validation(from_env);
}

GPU_TEST("ContextOptions::gemm_policy is taken whole over the environment; bad values refused",
         "[gemm_policy][context][errors]") {
  const NoPolicyVariables none;
  const vkt::ScopedEnv splits("VKBLR_GEMM_SPLITK", "3"), bits("VKBLR_MM_BITS", "banana");
  ContextOptions options = vkt::shared_options();
  CHECK_THROWS_WITH(Context(options), ContainsSubstring("VKBLR_MM_BITS=banana: expected 0 or 1"));
  GemmPolicy chosen;
  chosen.word_groups = false;
  options.gemm_policy = chosen;
  {
    Context explicit_ctx(options);  // the environment is not read
    CHECK(explicit_ctx.gemm_policy() == chosen);  // k_splits unset: no field of the environment merged in
    vkt::check_validation(explicit_ctx);
  }
  for (const std::uint32_t s : {0u, 65u}) {
    options.gemm_policy->k_splits = s;
    CHECK_THROWS_WITH(Context(options), ContainsSubstring(std::format("gemm policy: k_splits = {} (1..64", s)));
  }
}
