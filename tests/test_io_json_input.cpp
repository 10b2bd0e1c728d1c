// Reading untrusted JSON and quoting file content in messages: nesting and
// repeated keys are refused before a value is built (a deep value would
// overflow the stack when built, dumped or destroyed), excerpts stay short,
// and typed reads name the file, the field and what was expected.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cmath>
#include <string>

#include "support/fit_files.hpp"
#include "vkblr/io/excerpt.hpp"
#include "vkblr/io/json_input.hpp"

using namespace vkblr::io;
using Catch::Matchers::ContainsSubstring;
using Catch::Matchers::EndsWith;
using Json = nlohmann::json;

namespace {

std::string nested_arrays(std::size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

}  // namespace

TEST_CASE("excerpt: short text kept, long text cut, control bytes escaped", "[fit][errors]") {
  CHECK(excerpt("F32") == "F32");
  CHECK(excerpt("a\nb\x1b[31m") == "a\\x0ab\\x1b[31m");
  const std::string long_text(100000, 'x');
  CHECK(excerpt(long_text) == std::string(kExcerptBytes, 'x') + "…");
  CHECK(excerpt(long_text, 5) == "xxxxx…");
  // never cut inside a UTF-8 sequence: "é" is 2 bytes, "€" 3
  CHECK(excerpt("aé€", 2) == "a…");
  CHECK(excerpt("aé€", 3) == "aé…");
  CHECK(excerpt("aé€", 5) == "aé…");
  CHECK(excerpt("aé€", 6) == "aé€");
}

TEST_CASE("parse_untrusted_json: nesting beyond the bound is refused before anything is built", "[fit][errors]") {
  CHECK(parse_untrusted_json(R"({"a":{"b":[1,2]}})", 3, "f") == Json::parse(R"({"a":{"b":[1,2]}})"));
  CHECK(parse_untrusted_json(nested_arrays(3), 3, "f") == Json::parse(nested_arrays(3)));
  CHECK_THAT(vkt::error_of([] { parse_untrusted_json(nested_arrays(4), 3, "f.safetensors: header"); }),
             ContainsSubstring("f.safetensors: header: JSON nested more than 3 levels deep"));
  CHECK_THAT(vkt::error_of([] { parse_untrusted_json(R"({"a":{"b":{"c":{}}}})", 3, "f"); }),
             ContainsSubstring("nested more than 3 levels"));
  // A million levels: the old parse built the value, then overflowed the stack.
  const std::string deep = nested_arrays(1000000);
  CHECK_THAT(vkt::error_of([&] { parse_untrusted_json(deep, kMaxMetadataJsonDepth, "f"); }),
             ContainsSubstring("nested more than 16 levels"));
  // unbalanced: refused on the nesting before the syntax error at the end
  CHECK_THAT(vkt::error_of([&] { parse_untrusted_json(std::string(1000000, '['), 16, "f"); }),
             ContainsSubstring("nested more than 16 levels"));
}

TEST_CASE("parse_untrusted_json: a key repeated in one object is refused", "[fit][errors]") {
  CHECK_THAT(vkt::error_of([] { parse_untrusted_json(R"({"a":1,"b":2,"a":3})", 3, "f: header"); }),
             ContainsSubstring("f: header: key 'a' appears twice in one object"));
  CHECK_THAT(vkt::error_of([] { parse_untrusted_json(R"({"x":{"k":1,"k":1}})", 3, "f"); }),
             ContainsSubstring("key 'k' appears twice"));
  // the same key in different objects is fine
  const Json j = parse_untrusted_json(R"({"x":{"k":1},"y":{"k":2},"z":[{"k":3},{"k":4}]})", 3, "f");
  CHECK(j["z"][1]["k"] == 4);
  const std::string long_key(5000, 'k');
  const std::string message =
      vkt::error_of([&] { parse_untrusted_json("{\"" + long_key + "\":1,\"" + long_key + "\":2}", 3, "f"); });
  CHECK(message.size() < 400);
}

TEST_CASE("parse_untrusted_json: syntax errors and overflowing numbers give short messages", "[fit][errors]") {
  CHECK_THAT(vkt::error_of([] { parse_untrusted_json("{\"a\": tru}", 3, "f"); }),
             ContainsSubstring("f: bad JSON: parse error at line 1, column"));
  // nlohmann reports these as out_of_range, not parse_error
  CHECK_THAT(vkt::error_of([] { parse_untrusted_json("[1e400]", 3, "f"); }),
             ContainsSubstring("f: bad JSON: number overflow"));
  // the parser quotes the whole bad token: an unterminated string of 1 MB
  const std::string message =
      vkt::error_of([] { parse_untrusted_json("{\"a\": \"" + std::string(1 << 20, 'x'), 3, "f"); });
  CHECK_THAT(message, ContainsSubstring("f: bad JSON") && EndsWith("…"));
  CHECK(message.size() < 300);
  CHECK_THAT(vkt::error_of([] { parse_untrusted_json("", 3, "f"); }), ContainsSubstring("f: bad JSON"));
  CHECK_THAT(vkt::error_of([] { parse_untrusted_json("{\"a\": \"\xff\"}", 3, "f"); }),
             ContainsSubstring("f: bad JSON"));
}

TEST_CASE("json_excerpt: short values whole, long ones cut", "[fit][errors]") {
  CHECK(json_excerpt(Json::parse(R"([0, 8])")) == "[0, 8]");
  CHECK(json_excerpt(Json::parse(R"({"k": "v", "n": null})")) == R"({"k": "v", "n": null})");
  CHECK(json_excerpt(Json(1.5)) == "1.5");
  Json big = Json::array();
  for (int i = 0; i < 100000; ++i) big.push_back(i);
  const std::string cut = json_excerpt(big);
  CHECK_THAT(cut, EndsWith("…"));
  CHECK(cut.size() <= kExcerptBytes + 3);
  CHECK(json_excerpt(Json(std::string(1 << 20, 'y'))).size() <= kExcerptBytes + 3);
  CHECK(json_excerpt(Json(std::string("\xc3\xa9", 2) + std::string(300, 'y'))).starts_with("\"é"));
  // deeper than the excerpt is long: stops descending once it is long enough
  Json deep = Json::array();
  for (int i = 0; i < 1000; ++i) deep = Json::array({deep});
  CHECK(json_excerpt(deep).size() <= kExcerptBytes + 3);
}

TEST_CASE("JsonField: typed reads name the file, the field and what was expected", "[fit][errors]") {
  const Json j = Json::parse(R"({"step": 7, "neg": -1, "big": 4294967296, "real": 2.5, "text": "x", "none": null,
                                 "curve": [[0, 0.5], [4, "0.25"]], "nested": {"k": true}})");
  const JsonField md(j, "ck.ckpt: checkpoint metadata");
  CHECK(md["step"].u32() == 7);
  CHECK(md["step"].u64() == 7);
  CHECK(md["big"].u64() == 4294967296ull);
  CHECK(md["real"].number() == 2.5);
  CHECK(md["step"].number() == 7.0);
  CHECK(std::isnan(md["none"].number()));  // how vkblr-fit writes NaN
  CHECK(md["text"].string() == "x");
  CHECK(md["curve"].size() == 2);
  CHECK(md["curve"][0][1].number() == 0.5);
  CHECK(md.contains("step"));
  CHECK_FALSE(md.contains("absent"));
  CHECK_FALSE(md["curve"].contains("step"));
  // signed integers made in code count when non-negative
  const Json made = {{"n", 5}};
  CHECK(JsonField(made, "x")["n"].u32() == 5);

  CHECK_THAT(
      vkt::error_of([&] { md["text"].u32(); }),
      ContainsSubstring("ck.ckpt: checkpoint metadata: 'text' is \"x\" (a string), want an integer in [0, 2^32)"));
  CHECK_THAT(vkt::error_of([&] { md["neg"].u32(); }), ContainsSubstring("'neg' is -1 (a number), want an integer"));
  CHECK_THAT(vkt::error_of([&] { md["big"].u32(); }), ContainsSubstring("'big' is 4294967296 (a number)"));
  CHECK_THAT(vkt::error_of([&] { md["real"].u64(); }), ContainsSubstring("'real' is 2.5 (a number), want an integer"));
  CHECK_THAT(vkt::error_of([&] { md["neg"].u64(); }), ContainsSubstring("in [0, 2^64)"));
  CHECK_THAT(vkt::error_of([&] { md["text"].number(); }),
             ContainsSubstring("'text' is \"x\" (a string), want a number"));
  CHECK_THAT(vkt::error_of([&] { md["step"].string(); }), ContainsSubstring("'step' is 7 (a number), want a string"));
  CHECK_THAT(vkt::error_of([&] { md["absent"].u32(); }),
             ContainsSubstring("ck.ckpt: checkpoint metadata: 'absent' is missing"));
  CHECK_THAT(vkt::error_of([&] { md["curve"][1][1].number(); }),
             ContainsSubstring("'curve[1][1]' is \"0.25\" (a string), want a number"));
  CHECK_THAT(vkt::error_of([&] { md["curve"][2]; }),
             ContainsSubstring("'curve[2]' is missing (the array has 2 elements)"));
  CHECK_THAT(vkt::error_of([&] { md["step"][0]; }), ContainsSubstring("'step' is 7 (a number), want an array"));
  CHECK_THAT(vkt::error_of([&] { md["curve"]["k"]; }), ContainsSubstring("'curve' is [[0, 0.5]"));
  CHECK_THAT(vkt::error_of([&] { md["nested"]["x"]; }), ContainsSubstring("'nested.x' is missing"));
  const Json array = Json::array({1});
  CHECK_THAT(vkt::error_of([&] { JsonField(array, "f: metadata").require_object(); }),
             ContainsSubstring("f: metadata is [1] (an array), want an object"));
}
