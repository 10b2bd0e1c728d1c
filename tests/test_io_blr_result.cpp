// The result file of vkblr-fit: round trips (F16 and F32 scales, bits
// exact, metadata, input checksums), the file as the format describes it,
// and a clear refusal of each kind of bad file, changed bytes included.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>

#include "support/blr_ref.hpp"
#include "support/fit_files.hpp"
#include "vkblr/io/blr_result.hpp"
#include "vkblr/io/bpw.hpp"
#include "vkblr/io/file_checksums.hpp"
#include "vkblr/io/safetensors.hpp"
#include "vkblr/half.hpp"

using namespace vkblr::io;
using Catch::Matchers::ContainsSubstring;

namespace {

BlrResult sample_result(ScaleDtype dtype) {
  const LayerShape shape{48, 80, 64, 2};
  BlrResult r;
  r.shape = shape;
  r.scale_dtype = dtype;
  r.paths = vkt::random_layer(shape.m, shape.n, shape.rank, shape.paths, 7).init();
  r.tool_version = "vkblr-fit 0.1.0";
  r.command_line = {"vkblr-fit", "--bpw", "1.0", "--out", "a file with spaces.safetensors", "--note=\"quoted\""};
  r.inputs = {0x0123456789abcdefull, 0xfedcba9876543210ull};
  return r;
}

struct StoredTensor {
  TensorInfo info;
  std::vector<std::byte> bytes;
};

using Tensors = std::vector<StoredTensor>;
using Metadata = std::map<std::string, std::string>;

// Copies the safetensors file `from` to `to`, with `edit` applied to its
// tensors and metadata first. Its checksums are made anew (so that the
// reader's other checks are reached), or with `keep_checksums` copied as
// they were.
void rewrite(const std::string& from, const std::string& to, const std::function<void(Tensors&, Metadata&)>& edit,
             bool keep_checksums = false) {
  SafetensorsReader reader(from);
  Tensors tensors;
  for (const TensorInfo& t : reader.tensors()) tensors.push_back({t, reader.read_bytes(t)});
  Metadata metadata = reader.metadata();
  edit(tensors, metadata);
  if (keep_checksums) {
    SafetensorsWriter writer;
    for (const auto& t : tensors) writer.add_bytes(t.info.name, t.info.dtype, t.info.shape, t.bytes);
    for (const auto& [k, v] : metadata) writer.set_metadata(k, v);
    writer.write(to);
    return;
  }
  ChecksummedWriter writer;
  for (const auto& t : tensors) writer.add_bytes(t.info.name, t.info.dtype, t.info.shape, t.bytes);
  for (const auto& [k, v] : metadata) {
    if (!k.starts_with("xxh3:")) writer.set_metadata(k, v);
  }
  vkt::write_raw_file(to, writer.serialize());
}

}  // namespace

TEST_CASE("blr result: round trip with F16 and F32 scales", "[fit]") {
  vkt::TempDir dir;
  for (const ScaleDtype dtype : {ScaleDtype::f16, ScaleDtype::f32}) {
    INFO(scale_dtype_name(dtype));
    const std::string path = dir.file("layer.safetensors");
    const BlrResult written = sample_result(dtype);
    write_blr_result(path, written);
    const BlrResult read = read_blr_result(path);
    CHECK(read.shape == written.shape);
    CHECK(read.scale_dtype == dtype);
    CHECK(read.tool_version == written.tool_version);
    CHECK(read.command_line == written.command_line);
    CHECK(read.inputs == written.inputs);
    REQUIRE(read.paths.size() == 2);
    for (std::size_t p = 0; p < 2; ++p) {
      CHECK(read.paths[p].bits_u == written.paths[p].bits_u);
      CHECK(read.paths[p].bits_v == written.paths[p].bits_v);
      const auto stored = [&](const std::vector<float>& v) {
        if (dtype == ScaleDtype::f32) return v;
        return vkblr::from_f16(vkblr::to_f16(v));
      };
      CHECK(read.paths[p].h == stored(written.paths[p].h));
      CHECK(read.paths[p].l == stored(written.paths[p].l));
      CHECK(read.paths[p].g == stored(written.paths[p].g));
    }
  }
}

TEST_CASE("blr result: the file holds what the format describes", "[fit]") {
  vkt::TempDir dir;
  const std::string path = dir.file("layer.safetensors");
  const BlrResult written = sample_result(ScaleDtype::f16);
  write_blr_result(path, written);
  SafetensorsReader reader(path);
  CHECK(reader.tensors().size() == 10);
  CHECK(reader.tensor("path1.bits_u").describe() == "path1.bits_u U32 [48, 2]");
  CHECK(reader.tensor("path1.bits_v").describe() == "path1.bits_v U32 [80, 2]");
  CHECK(reader.tensor("path0.h").describe() == "path0.h F16 [48]");
  CHECK(reader.tensor("path0.l").describe() == "path0.l F16 [64]");
  CHECK(reader.tensor("path0.g").describe() == "path0.g F16 [80]");
  CHECK(reader.read_u32(reader.tensor("path1.bits_u")) == written.paths[1].bits_u);
  const auto& md = reader.metadata();
  CHECK(md.at("format") == "vkblr-blr");
  CHECK(md.at("format_version") == "2");
  CHECK(md.at("m") == "48");
  CHECK(md.at("n") == "80");
  CHECK(md.at("rank") == "64");
  CHECK(md.at("paths") == "2");
  CHECK(md.at("scale_dtype") == "F16");
  CHECK(std::stod(md.at("bpw")) == bits_per_weight(written.shape, ScaleDtype::f16).total);
  CHECK(md.at("tool_version") == "vkblr-fit 0.1.0");
  CHECK_THAT(md.at("command_line"), ContainsSubstring(R"("a file with spaces.safetensors")"));
  CHECK(md.at("weight_xxh3") == "0123456789abcdef");
  CHECK(md.at("activations_xxh3") == "fedcba9876543210");
  for (const TensorInfo& t : reader.tensors()) CHECK(md.at("xxh3:" + t.name).size() == 16);
  CHECK(md.at("xxh3:__metadata__").size() == 16);
}

TEST_CASE("blr result: layers that cannot be stored are refused", "[fit]") {
  vkt::TempDir dir;
  const std::string path = dir.file("layer.safetensors");
  BlrResult r = sample_result(ScaleDtype::f16);
  r.paths[1].g[3] = 1e6f;
  CHECK_THAT(vkt::error_of([&] { write_blr_result(path, r); }),
             ContainsSubstring("scale g[3] of path 1 = 1e+06 overflows f16") && ContainsSubstring("F32"));
  r.scale_dtype = ScaleDtype::f32;
  write_blr_result(path, r);  // fine in F32
  r.paths[0].l[5] = std::numeric_limits<float>::quiet_NaN();
  CHECK_THAT(vkt::error_of([&] { write_blr_result(path, r); }),
             ContainsSubstring("scale l[5] of path 0 is nan") && ContainsSubstring(path));
  r = sample_result(ScaleDtype::f16);
  r.paths[0].bits_v.pop_back();
  CHECK_THAT(vkt::error_of([&] { write_blr_result(path, r); }), ContainsSubstring("path 0 bits_v has 159 values"));
  r = sample_result(ScaleDtype::f16);
  r.shape.rank = 40;
  CHECK_THAT(vkt::error_of([&] { write_blr_result(path, r); }), ContainsSubstring("rank 40"));
  CHECK(dir.entries() == std::vector<std::string>{"layer.safetensors"});
}

TEST_CASE("blr result: bad files are refused with a message naming them", "[fit]") {
  vkt::TempDir dir;
  const std::string good = dir.file("good.safetensors"), bad = dir.file("bad.safetensors");
  write_blr_result(good, sample_result(ScaleDtype::f16));
  const auto refusal = [&](const std::function<void(Tensors&, Metadata&)>& edit) {
    rewrite(good, bad, edit);
    const std::string message = vkt::error_of([&] { read_blr_result(bad); });
    CHECK_THAT(message, ContainsSubstring(bad));
    return message;
  };

  CHECK_THAT(vkt::error_of([&] { read_blr_result(dir.file("absent.safetensors")); }), ContainsSubstring("cannot open"));
  CHECK_THAT(refusal([](Tensors&, Metadata& md) { md.erase("format"); }), ContainsSubstring("metadata 'format' is missing"));
  CHECK_THAT(refusal([](Tensors&, Metadata& md) { md["format"] = "other"; }),
             ContainsSubstring("not a vkblr-fit result"));
  CHECK_THAT(refusal([](Tensors&, Metadata& md) { md["format_version"] = "1"; }),
             ContainsSubstring("format version '1'; this build reads version 2"));
  CHECK_THAT(refusal([](Tensors&, Metadata& md) { md["m"] = "48x"; }), ContainsSubstring("'m' = '48x' is not a u32"));
  CHECK_THAT(refusal([](Tensors&, Metadata& md) { md["rank"] = "48"; }), ContainsSubstring("rank 48"));
  CHECK_THAT(refusal([](Tensors&, Metadata& md) { md["scale_dtype"] = "BF16"; }),
             ContainsSubstring("'scale_dtype' = 'BF16'"));
  CHECK_THAT(refusal([](Tensors&, Metadata& md) { md["bpw"] = "0.5"; }), ContainsSubstring("metadata 'bpw' = '0.5'"));
  CHECK_THAT(refusal([](Tensors&, Metadata& md) { md["command_line"] = "vkblr-fit --bpw 1"; }),
             ContainsSubstring("metadata 'command_line': bad JSON"));
  // Before, nlohmann's "[json.exception.type_error.302] type must be string, but is number".
  CHECK_THAT(refusal([](Tensors&, Metadata& md) { md["command_line"] = R"(["vkblr-fit", 1])"; }),
             ContainsSubstring("metadata 'command_line': '[1]' is 1 (a number), want a string"));
  CHECK_THAT(refusal([](Tensors&, Metadata& md) { md["command_line"] = R"({"a": "b"})"; }),
             ContainsSubstring(R"(metadata 'command_line' is {"a": "b"} (an object), want an array)"));
  CHECK_THAT(refusal([](Tensors&, Metadata& md) {
               md["command_line"] = std::string(1000000, '[') + std::string(1000000, ']');
             }),
             ContainsSubstring("metadata 'command_line': JSON nested more than 16 levels deep"));
  CHECK_THAT(refusal([](Tensors&, Metadata& md) { md["m"] = std::string(100000, '4'); }),
             ContainsSubstring("'m' = '444") && ContainsSubstring("…' is not a u32"));
  CHECK_THAT(refusal([](Tensors&, Metadata& md) { md["weight_xxh3"] = "0123"; }),
             ContainsSubstring("'weight_xxh3' is not a checksum"));
  CHECK_THAT(refusal([](Tensors& t, Metadata&) { std::erase_if(t, [](auto& x) { return x.info.name == "path1.g"; }); }),
             ContainsSubstring("no tensor 'path1.g'") && ContainsSubstring("path1.l F16 [64]"));
  CHECK_THAT(refusal([](Tensors& t, Metadata&) {
               t.push_back({{"path2.h", Dtype::F16, {48}, 0, 0}, std::vector<std::byte>(96)});
             }),
             ContainsSubstring("unexpected tensor 'path2.h'"));
  CHECK_THAT(refusal([](Tensors& t, Metadata&) {
               for (auto& x : t) {
                 if (x.info.name == "path0.h") x.info.dtype = Dtype::BF16;
               }
             }),
             ContainsSubstring("tensor path0.h BF16 [48], want path0.h F16 [48]"));
  CHECK_THAT(refusal([](Tensors& t, Metadata&) {
               for (auto& x : t) {
                 if (x.info.name == "path0.bits_u") x.info.shape = {96, 1};
               }
             }),
             ContainsSubstring("tensor path0.bits_u U32 [96, 1], want path0.bits_u U32 [48, 2]"));
  CHECK_THAT(refusal([](Tensors& t, Metadata&) {
               for (auto& x : t) {
                 if (x.info.name == "path1.l") {
                   const std::uint16_t inf = 0x7c00;
                   std::memcpy(x.bytes.data() + 6, &inf, 2);
                 }
               }
             }),
             ContainsSubstring("scale l[3] of path 1 is inf"));
}

TEST_CASE("blr result: a changed or damaged file does not match its checksums", "[fit]") {
  vkt::TempDir dir;
  const std::string good = dir.file("good.safetensors"), bad = dir.file("bad.safetensors");
  write_blr_result(good, sample_result(ScaleDtype::f16));
  const auto refusal = [&](const std::function<void(Tensors&, Metadata&)>& edit) {
    rewrite(good, bad, edit, true);
    return vkt::error_of([&] { read_blr_result(bad); });
  };
  // one flipped bit in a tensor's data
  std::string bytes = vkt::read_raw_file(good);
  bytes[bytes.size() - 3] = static_cast<char>(bytes[bytes.size() - 3] ^ 0x10);
  vkt::write_raw_file(bad, bytes);
  CHECK_THAT(vkt::error_of([&] { read_blr_result(bad); }),
             ContainsSubstring(bad) && ContainsSubstring("tensor 'path1.g' does not match its checksum"));
  // a sign bit of S_U, and a scale, changed (the file otherwise valid)
  CHECK_THAT(refusal([](Tensors& t, Metadata&) { t[0].bytes[0] ^= std::byte{1}; }),
             ContainsSubstring("tensor 'path0.bits_u' does not match its checksum"));
  CHECK_THAT(refusal([](Tensors& t, Metadata&) {
               for (auto& x : t) {
                 if (x.info.name == "path0.l") x.bytes[1] ^= std::byte{0x04};
               }
             }),
             ContainsSubstring("tensor 'path0.l' does not match its checksum"));
  // metadata changed: the layer's numbers, the inputs it was fitted to
  CHECK_THAT(refusal([](Tensors&, Metadata& md) { md["tool_version"] = "vkblr-fit 9"; }),
             ContainsSubstring("the metadata does not match its checksum"));
  CHECK_THAT(refusal([](Tensors&, Metadata& md) { md["weight_xxh3"] = "0000000000000000"; }),
             ContainsSubstring("the metadata does not match its checksum"));
  // checksums missing, or of a tensor the file does not hold
  CHECK_THAT(refusal([](Tensors&, Metadata& md) { md.erase("xxh3:path1.h"); }),
             ContainsSubstring("tensor 'path1.h' has no checksum"));
  CHECK_THAT(refusal([](Tensors&, Metadata& md) { md.erase("xxh3:__metadata__"); }),
             ContainsSubstring("metadata 'xxh3:__metadata__' is missing"));
  CHECK_THAT(refusal([](Tensors&, Metadata& md) { md["xxh3:path7.h"] = "0000000000000000"; }),
             ContainsSubstring("'xxh3:path7.h' is the checksum of a tensor the file does not hold"));
  // copied as it was: read as written
  rewrite(good, bad, [](Tensors&, Metadata&) {}, true);
  CHECK(read_blr_result(bad).inputs == sample_result(ScaleDtype::f16).inputs);
}
