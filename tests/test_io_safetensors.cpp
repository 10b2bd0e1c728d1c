// vkblr-fit's safetensors reader and writer: round trips of every dtype it
// writes, a hand-made file as the format describes it, and a clear
// vkblr::Error naming the file for each kind of bad input.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cstring>
#include <filesystem>
#include <format>

#include "support/fit_files.hpp"
#include "support/host.hpp"
#include "vkblr/io/safetensors.hpp"
#include "vkblr/half.hpp"

using namespace vkblr::io;
using Catch::Matchers::ContainsSubstring;
using Catch::Matchers::EndsWith;
using Catch::Matchers::StartsWith;

namespace {

// A file of: u64 header length, the header text as given, the data.
std::string safetensors_bytes(const std::string& header, const std::string& data) {
  return vkt::le_bytes<std::uint64_t>(header.size()) + header + data;
}

std::string floats_bytes(std::initializer_list<float> values) {
  std::string s(values.size() * 4, '\0');
  std::memcpy(s.data(), std::data(values), s.size());
  return s;
}

}  // namespace

TEST_CASE("safetensors: tensors and metadata round-trip", "[fit]") {
  vkt::TempDir dir;
  const std::string path = dir.file("t.safetensors");
  const std::vector<float> w = {1.5f, -2.25f, 3.0f, 0.1f, -0.0f, 1e-8f};
  const std::vector<float> halves = {1.0f, 0.333f, 65504.0f, -7.0f};
  const std::vector<std::uint32_t> bits = {0u, 1u, 0x80000000u, 0xffffffffu};
  const std::vector<std::uint16_t> raw16 = {0x3f80, 0xc000, 0x7fc0};
  const std::vector<double> wide = {0.1, -1e300};
  SafetensorsWriter writer;
  writer.add_f32("w", {2, 3}, w);
  writer.add_f16("half", {4}, halves);
  writer.add_u32("bits", {2, 2}, bits);
  writer.add_u16("raw16", {3}, raw16);
  writer.add_bytes("bf", Dtype::BF16, {3}, std::as_bytes(std::span(raw16)));
  writer.add_bytes("wide", Dtype::F64, {2}, std::as_bytes(std::span(wide)));
  writer.add_bytes("scalar", Dtype::F32, {}, std::as_bytes(std::span(w).first(1)));
  writer.set_metadata("format", "test");
  writer.set_metadata("note", "ünïcode \"quoted\"");
  writer.write(path);

  const std::string file = vkt::read_raw_file(path);
  std::uint64_t header_bytes = 0;
  std::memcpy(&header_bytes, file.data(), 8);
  CHECK(header_bytes % 8 == 0);  // the data starts 8-byte aligned

  SafetensorsReader reader(path);
  REQUIRE(reader.tensors().size() == 7);
  CHECK(reader.metadata() == std::map<std::string, std::string>{{"format", "test"}, {"note", "ünïcode \"quoted\""}});
  const TensorInfo& tw = reader.tensor("w");
  CHECK(tw.dtype == Dtype::F32);
  CHECK(tw.shape == std::vector<std::uint64_t>{2, 3});
  CHECK(tw.describe() == "w F32 [2, 3]");
  const Matrix m = reader.read_matrix(tw);
  CHECK(m.rows == 2);
  CHECK(m.cols == 3);
  CHECK(vkt::count_bit_diffs(m.values, w) == 0);

  const auto got_halves = reader.read_f32(reader.tensor("half"));
  for (std::size_t i = 0; i < halves.size(); ++i) CHECK(got_halves[i] == vkblr::f16_to_f32(vkblr::f32_to_f16(halves[i])));
  CHECK(reader.read_u32(reader.tensor("bits")) == bits);
  CHECK(reader.read_u16(reader.tensor("raw16")) == raw16);
  const auto bf = reader.read_f32(reader.tensor("bf"));
  CHECK(bf[0] == 1.0f);
  CHECK(bf[1] == -2.0f);
  CHECK(std::isnan(bf[2]));
  const auto narrowed = reader.read_f32(reader.tensor("wide"));
  CHECK(narrowed[0] == 0.1f);
  CHECK(std::isinf(narrowed[1]));
  CHECK(reader.tensor("scalar").element_count() == 1);
  CHECK(reader.read_f32(reader.tensor("scalar")) == std::vector<float>{1.5f});
}

TEST_CASE("safetensors: a hand-made file as the format describes it", "[fit]") {
  vkt::TempDir dir;
  const std::string path = dir.file("hand.safetensors");
  // Padded with spaces, keys in any order, __metadata__ anywhere.
  const std::string header =
      R"({"b":{"dtype":"F16","shape":[2],"data_offsets":[8,12]},"__metadata__":{"k":"v"},)"
      R"("a":{"shape":[1,2],"dtype":"F32","data_offsets":[0,8]}}     )";
  const std::string data = floats_bytes({2.0f, -3.0f}) + vkt::le_bytes<std::uint16_t>(0x3c00) +
                           vkt::le_bytes<std::uint16_t>(0xc400);
  vkt::write_raw_file(path, safetensors_bytes(header, data));
  SafetensorsReader reader(path);
  CHECK(reader.tensors().size() == 2);
  CHECK(reader.tensors()[0].name == "a");  // listed by name
  CHECK(reader.metadata().at("k") == "v");
  CHECK(reader.read_f32(reader.tensor("a")) == std::vector<float>{2.0f, -3.0f});
  CHECK(reader.read_f32(reader.tensor("b")) == std::vector<float>{1.0f, -4.0f});
}

TEST_CASE("safetensors: choosing the tensor lists the file's tensors", "[fit]") {
  vkt::TempDir dir;
  const std::string two = dir.file("two.safetensors"), one = dir.file("one.safetensors");
  const std::vector<float> v = {1, 2, 3, 4};
  SafetensorsWriter writer;
  writer.add_f32("model.layers.0.q_proj.weight", {2, 2}, v);
  writer.add_f32("model.layers.0.k_proj.weight", {4}, v);
  writer.write(two);
  SafetensorsWriter single;
  single.add_f32("only", {2, 2}, v);
  single.write(one);

  SafetensorsReader reader(two);
  const std::string missing = vkt::error_of([&] { reader.tensor("q_proj"); });
  CHECK_THAT(missing, ContainsSubstring(two) && ContainsSubstring("no tensor 'q_proj'") &&
                          ContainsSubstring("model.layers.0.q_proj.weight F32 [2, 2]") &&
                          ContainsSubstring("model.layers.0.k_proj.weight F32 [4]"));
  const std::string unnamed = vkt::error_of([&] { reader.choose(""); });
  CHECK_THAT(unnamed, ContainsSubstring("holds 2 tensors") && ContainsSubstring("--tensor") &&
                          ContainsSubstring("model.layers.0.k_proj.weight"));
  CHECK(reader.choose("model.layers.0.k_proj.weight").name == "model.layers.0.k_proj.weight");
  CHECK_THAT(vkt::error_of([&] { reader.read_matrix(reader.tensor("model.layers.0.k_proj.weight")); }),
             ContainsSubstring("1-D") && ContainsSubstring("2-D"));
  SafetensorsReader single_reader(one);
  CHECK(single_reader.choose("").name == "only");
}

TEST_CASE("safetensors: bad files are refused with a message naming them", "[fit]") {
  vkt::TempDir dir;
  const std::string path = dir.file("bad.safetensors");
  const std::string good_header = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  const std::string good_data = floats_bytes({1.0f, 2.0f});
  const auto refusal = [&](const std::string& bytes) {
    vkt::write_raw_file(path, bytes);
    const std::string message = vkt::error_of([&] { SafetensorsReader reader(path); });
    CHECK_THAT(message, ContainsSubstring(path));
    return message;
  };

  SECTION("missing file") {
    CHECK_THAT(vkt::error_of([&] { SafetensorsReader reader(dir.file("absent.safetensors")); }),
               ContainsSubstring("cannot open") && ContainsSubstring("absent.safetensors") &&
                   ContainsSubstring("No such file"));
  }
  SECTION("a directory") {
    CHECK_THAT(vkt::error_of([&] { SafetensorsReader reader(dir.file("")); }), ContainsSubstring("directory"));
  }
  SECTION("shorter than the header length") {
    CHECK_THAT(refusal(std::string("\x10\x00\x00", 3)), ContainsSubstring("truncated"));
  }
  SECTION("header length past the end") {
    CHECK_THAT(refusal(vkt::le_bytes<std::uint64_t>(1000) + good_header), ContainsSubstring("header length 1000") &&
                                                                              ContainsSubstring("past the end"));
    CHECK_THAT(refusal(vkt::le_bytes<std::uint64_t>(~0ull) + good_header), ContainsSubstring("past the end"));
  }
  SECTION("absurd header length") {
    // A sparse file larger than the limit, whose header length claims it all.
    const std::uint64_t size = (100ull << 20) + 4096;
    vkt::write_raw_file(path, vkt::le_bytes<std::uint64_t>(size - 8));
    std::filesystem::resize_file(path, size);
    CHECK_THAT(vkt::error_of([&] { SafetensorsReader reader(path); }), ContainsSubstring("absurd"));
  }
  SECTION("not JSON") {
    CHECK_THAT(refusal(safetensors_bytes("not json", "")), ContainsSubstring("does not start with '{'"));
    CHECK_THAT(refusal(safetensors_bytes(R"({"a": {"dtype": "F32",)", "")), ContainsSubstring("header: bad JSON"));
    CHECK_THAT(refusal(safetensors_bytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}} x)", good_data)),
               ContainsSubstring("header: bad JSON"));
    CHECK_THAT(refusal(safetensors_bytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,1e400]}})", good_data)),
               ContainsSubstring("header: bad JSON: number overflow"));
  }
  SECTION("malformed entries") {
    CHECK_THAT(refusal(safetensors_bytes(R"({"a":{"dtype":"F32","shape":[2]}})", good_data)),
               ContainsSubstring("tensor 'a' lacks"));
    CHECK_THAT(refusal(safetensors_bytes(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", good_data)),
               ContainsSubstring("non-negative integers"));
    CHECK_THAT(refusal(safetensors_bytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0]}})", good_data)),
               ContainsSubstring("data_offsets [0]"));
    CHECK_THAT(refusal(safetensors_bytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", good_data)),
               ContainsSubstring("begin after end"));
    CHECK_THAT(refusal(safetensors_bytes(R"({"a":7})", good_data)), ContainsSubstring("not an object"));
    CHECK_THAT(refusal(safetensors_bytes(R"({"__metadata__":{"k":1}})", "")),
               ContainsSubstring("__metadata__ 'k' is 1, not a string"));
  }
  SECTION("nesting deeper than the format's three levels") {
    // Before, the message dumped the value recursively: a stack overflow.
    for (const std::size_t depth : {2, 100000}) {
      const std::string deep = std::string(depth, '[') + std::string(depth, ']');
      CHECK_THAT(refusal(safetensors_bytes(R"({"a":{"dtype":"F32","shape":)" + deep + R"(,"data_offsets":[0,8]}})",
                                           good_data)),
                 ContainsSubstring("header: JSON nested more than 3 levels deep"));
      CHECK_THAT(refusal(safetensors_bytes(R"({"__metadata__":{"k":)" + deep + "}}", "")),
                 ContainsSubstring("nested more than 3 levels"));
    }
    CHECK_THAT(
        refusal(safetensors_bytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":{"y":[]}}})", good_data)),
        ContainsSubstring("nested more than 3 levels"));
  }
  SECTION("a tensor name or __metadata__ twice (nlohmann kept the last)") {
    CHECK_THAT(refusal(safetensors_bytes(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                                         R"("a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                                         good_data)),
               ContainsSubstring("header: key 'a' appears twice in one object"));
    CHECK_THAT(refusal(safetensors_bytes(R"({"__metadata__":{"k":"v"},"__metadata__":{"k":"w"}})", "")),
               ContainsSubstring("key '__metadata__' appears twice"));
    CHECK_THAT(refusal(safetensors_bytes(R"({"a":{"dtype":"F32","dtype":"F32","shape":[2],"data_offsets":[0,8]}})",
                                         good_data)),
               ContainsSubstring("key 'dtype' appears twice"));
  }
  SECTION("messages quote a bad value's first bytes only") {
    const std::string big(1 << 20, '7');
    const auto short_refusal = [&](const std::string& bytes, const std::string& expected) {
      const std::string message = refusal(bytes);
      CHECK_THAT(message, ContainsSubstring(expected) && ContainsSubstring("…"));
      CHECK(message.size() < path.size() + 600);
    };
    short_refusal(safetensors_bytes(R"({"__metadata__":{"k":[")" + big + R"("]}})", ""),
                  R"(__metadata__ 'k' is ["777)");
    short_refusal(safetensors_bytes(R"({"__metadata__":{")" + big + R"(":1}})", ""), "__metadata__ '777");
    short_refusal(safetensors_bytes(R"({"a":{"dtype":")" + big + R"(","shape":[2],"data_offsets":[0,8]}})", good_data),
                  "unknown dtype '777");
    std::string shape = "[1";
    for (int i = 0; i < 100000; ++i) shape += ",-1";
    short_refusal(
        safetensors_bytes(R"({"a":{"dtype":"F32","shape":)" + shape + R"(],"data_offsets":[0,8]}})", good_data),
        "has shape [1, -1, -1");
    short_refusal(safetensors_bytes(R"({")" + big + R"(":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})",
                                    good_data.substr(0, 5)),
                  "tensor '777");
    short_refusal(safetensors_bytes(R"({")" + big +
                                        R"(":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                        R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                                    good_data),
                  "tensors '777");
    short_refusal(safetensors_bytes(R"({")" + big + R"(":3})", ""), "header entry '777");
  }
  SECTION("unknown dtype") {
    CHECK_THAT(refusal(safetensors_bytes(R"({"a":{"dtype":"F128","shape":[2],"data_offsets":[0,8]}})", good_data)),
               ContainsSubstring("unknown dtype 'F128'") && ContainsSubstring("BF16"));
  }
  SECTION("dtype and shape disagree with the byte count") {
    CHECK_THAT(refusal(safetensors_bytes(R"({"a":{"dtype":"F16","shape":[2],"data_offsets":[0,8]}})", good_data)),
               ContainsSubstring("4 bytes") && ContainsSubstring("hold 8 bytes"));
    CHECK_THAT(refusal(safetensors_bytes(R"({"a":{"dtype":"F4","shape":[3],"data_offsets":[0,2]}})", "xx")),
               ContainsSubstring("not a whole number of bytes"));
    CHECK_THAT(refusal(safetensors_bytes(
                   R"({"a":{"dtype":"F64","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", good_data)),
               ContainsSubstring("too large"));
  }
  SECTION("offsets past the end of the data (truncated data)") {
    CHECK_THAT(refusal(safetensors_bytes(good_header, good_data.substr(0, 5))),
               ContainsSubstring("past the end of the data (5 bytes)") && ContainsSubstring("truncated"));
  }
  SECTION("overlapping tensors") {
    CHECK_THAT(refusal(safetensors_bytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                         R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                                         good_data)),
               ContainsSubstring("'a' [0, 8] and 'b' [4, 8] overlap"));
  }
  SECTION("data not covered") {
    CHECK_THAT(refusal(safetensors_bytes(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", good_data)),
               ContainsSubstring("data bytes [0, 4) belong to no tensor"));
    CHECK_THAT(refusal(safetensors_bytes(good_header, good_data + "junk")),
               ContainsSubstring("bytes [8, 12) after the last tensor"));
  }
}

TEST_CASE("safetensors: messages listing a file's tensors stay short", "[fit][errors]") {
  vkt::TempDir dir;
  const std::string path = dir.file("many.safetensors");
  const std::vector<float> one = {1.0f};
  SafetensorsWriter writer;
  for (int i = 0; i < 1003; ++i) writer.add_f32(std::format("t{:04}", i), {1}, one);
  writer.add_f32("z", std::vector<std::uint64_t>(1000, 1), one);  // 1000 dimensions of 1
  writer.write(path);
  SafetensorsReader reader(path);
  const std::string message = vkt::error_of([&] { reader.tensor("absent"); });
  CHECK_THAT(message, ContainsSubstring("t0999 F32 [1]") && ContainsSubstring("... and 4 more"));
  CHECK(message.find("t1000") == std::string::npos);
  const std::string described = reader.tensor("z").describe();
  CHECK_THAT(described, StartsWith("z F32 [1, 1, 1") && EndsWith(", …]"));
  CHECK(described.size() < 300);
}

TEST_CASE("safetensors: reading a tensor as another type is refused", "[fit]") {
  vkt::TempDir dir;
  const std::string path = dir.file("ints.safetensors");
  const std::vector<std::uint32_t> values = {1, 2};
  SafetensorsWriter writer;
  writer.add_u32("u", {2}, values);
  writer.add_bytes("i", Dtype::I32, {2}, std::as_bytes(std::span(values)));
  writer.write(path);
  SafetensorsReader reader(path);
  CHECK_THAT(vkt::error_of([&] { reader.read_f32(reader.tensor("i")); }),
             ContainsSubstring(path) && ContainsSubstring("'i' is I32") && ContainsSubstring("F32, F16, BF16"));
  CHECK_THAT(vkt::error_of([&] { reader.read_u32(reader.tensor("i")); }), ContainsSubstring("not U32"));
  CHECK_THAT(vkt::error_of([&] { reader.read_u16(reader.tensor("u")); }), ContainsSubstring("not U16"));
}

TEST_CASE("safetensors: the writer refuses inconsistent tensors and writes atomically", "[fit]") {
  const std::vector<float> v = {1, 2, 3};
  SafetensorsWriter writer;
  writer.add_f32("a", {3}, v);
  CHECK_THAT(vkt::error_of([&] { writer.add_f32("a", {3}, v); }), ContainsSubstring("'a' added twice"));
  CHECK_THAT(vkt::error_of([&] { writer.add_f32("__metadata__", {3}, v); }), ContainsSubstring("reserved"));
  CHECK_THAT(vkt::error_of([&] { writer.add_f32("b", {2, 2}, v); }),
             ContainsSubstring("'b' is F32 [2, 2] but has 12 bytes"));

  vkt::TempDir dir;
  const std::string path = dir.file("out.safetensors");
  vkt::write_raw_file(path, "old contents");
  writer.write(path);
  CHECK(dir.entries() == std::vector<std::string>{"out.safetensors"});  // no temporary file left
  SafetensorsReader reader(path);
  CHECK(reader.read_f32(reader.tensor("a")) == v);
  CHECK_THAT(vkt::error_of([&] { writer.write(dir.file("no/such/dir/x.safetensors")); }),
             ContainsSubstring("cannot write") && ContainsSubstring("no/such/dir/x.safetensors"));
}
