// The .npy readers: the three header versions and three float dtypes as
// numpy writes them, token ids in every integer dtype, and a clear
// vkblr::Error naming the file for each kind of bad input.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "support/fit_files.hpp"
#include "vkblr/io/npy.hpp"
#include "vkblr/half.hpp"

using namespace vkblr::io;
using Catch::Matchers::ContainsSubstring;

namespace {

template <class T>
std::string raw(const std::vector<T>& values) {
  std::string s(values.size() * sizeof(T), '\0');
  std::memcpy(s.data(), values.data(), s.size());
  return s;
}

}  // namespace

TEST_CASE("npy: versions 1.0, 2.0, 3.0 with f4, f2, f8 data", "[fit]") {
  vkt::TempDir dir;
  const std::string path = dir.file("a.npy");
  const std::vector<float> expected = {1.0f, -2.5f, 0.125f, 3.0f, -0.0f, 6.0f};

  SECTION("v1.0 <f4") {
    vkt::write_raw_file(
        path, vkt::npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", raw(expected)));
  }
  SECTION("v2.0 <f2") {
    vkt::write_raw_file(path, vkt::npy_bytes(2, "{'descr': '<f2', 'fortran_order': False, 'shape': (2, 3), }",
                                             raw(vkblr::to_f16(expected))));
  }
  SECTION("v3.0 <f8, keys in another order, Python 2 longs") {
    const std::vector<double> wide(expected.begin(), expected.end());
    vkt::write_raw_file(path,
                        vkt::npy_bytes(3, "{\"shape\": (2L, 3L), 'fortran_order': False, 'descr': '<f8'}", raw(wide)));
  }
  const Matrix m = read_npy_matrix(path);
  CHECK(m.rows == 2);
  CHECK(m.cols == 3);
  CHECK(m.values == expected);
}

TEST_CASE("npy: bad files are refused with a message naming them", "[fit]") {
  vkt::TempDir dir;
  const std::string path = dir.file("bad.npy");
  const std::string data = raw(std::vector<float>(6, 1.0f));
  const auto dict = [](const std::string& descr, const std::string& fortran, const std::string& shape) {
    return "{'descr': '" + descr + "', 'fortran_order': " + fortran + ", 'shape': " + shape + ", }";
  };
  const auto refusal = [&](const std::string& bytes) {
    vkt::write_raw_file(path, bytes);
    const std::string message = vkt::error_of([&] { read_npy_matrix(path); });
    CHECK_THAT(message, ContainsSubstring(path));
    return message;
  };

  SECTION("missing file") {
    CHECK_THAT(vkt::error_of([&] { read_npy_matrix(dir.file("absent.npy")); }),
               ContainsSubstring("cannot open") && ContainsSubstring("absent.npy"));
  }
  SECTION("not .npy") {
    CHECK_THAT(refusal("PK\x03\x04 a zip file"), ContainsSubstring("not a .npy file"));
    CHECK_THAT(refusal("\x93NU"), ContainsSubstring("truncated"));
  }
  SECTION("unknown version") {
    std::string bytes = vkt::npy_bytes(1, dict("<f4", "False", "(2, 3)"), data);
    bytes[6] = 4;
    CHECK_THAT(refusal(bytes), ContainsSubstring("version 4.0 is not supported"));
  }
  SECTION("header past the end") {
    const std::string bytes = vkt::npy_bytes(2, dict("<f4", "False", "(2, 3)"), data);
    CHECK_THAT(refusal(bytes.substr(0, 40)), ContainsSubstring("past the end of the file"));
  }
  SECTION("absurd header length") {
    // 262 KB of file claimed as header: before, the message printed all of it.
    std::string bytes = "\x93NUMPY\x02";
    bytes += '\0';
    bytes += vkt::le_bytes<std::uint32_t>(262000) + "{'descr': '<f4', " + std::string(262000, 'z');
    const std::string message = refusal(bytes);
    CHECK_THAT(message, ContainsSubstring("header length 262000 is over numpy's limit of 10000 bytes"));
    CHECK(message.find("zzz") == std::string::npos);
    CHECK(message.size() < path.size() + 200);
    // a header of nearly 10000 bytes is read
    vkt::write_raw_file(path, vkt::npy_bytes(2, dict("<f4", "False", "(2, 3)") + std::string(9800, ' '), data));
    CHECK(read_npy_matrix(path).rows == 2);
  }
  SECTION("messages quote the header's first bytes only") {
    const std::string long_dict =
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'x" + std::string(9000, 'y');
    const std::string message = refusal(vkt::npy_bytes(2, long_dict, data));
    CHECK_THAT(message, ContainsSubstring("bad .npy header") && ContainsSubstring("…"));
    CHECK(message.size() < path.size() + 400);
    const std::string long_key =
        "{'" + std::string(5000, 'k') + "': 1, 'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}";
    CHECK(refusal(vkt::npy_bytes(2, long_key, data)).size() < path.size() + 400);
    const std::string long_descr =
        "{'descr': '" + std::string(5000, 'd') + "', 'fortran_order': False, 'shape': (2, 3)}";
    CHECK(refusal(vkt::npy_bytes(2, long_descr, data)).size() < path.size() + 400);
  }
  SECTION("malformed header") {
    CHECK_THAT(refusal(vkt::npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)", data)),
               ContainsSubstring("bad .npy header"));
    CHECK_THAT(refusal(vkt::npy_bytes(1, "{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2, 3)}", data)),
               ContainsSubstring("bad .npy header"));
    CHECK_THAT(refusal(vkt::npy_bytes(1, "{'descr': '<f4', 'shape': (2, 3)}", data)),
               ContainsSubstring("no 'fortran_order'"));
    CHECK_THAT(refusal(vkt::npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, -3)}", data)),
               ContainsSubstring("non-negative integer"));
    CHECK_THAT(refusal(vkt::npy_bytes(1, "{'descr': [('x', '<f4')], 'fortran_order': False, 'shape': (2, 3)}", data)),
               ContainsSubstring("bad .npy header"));
  }
  SECTION("unsupported dtypes") {
    CHECK_THAT(refusal(vkt::npy_bytes(1, dict(">f4", "False", "(2, 3)"), data)), ContainsSubstring("big-endian"));
    CHECK_THAT(refusal(vkt::npy_bytes(1, dict("<i4", "False", "(2, 3)"), data)),
               ContainsSubstring("dtype '<i4' is not supported"));
  }
  SECTION("Fortran order") {
    CHECK_THAT(refusal(vkt::npy_bytes(1, dict("<f4", "True", "(2, 3)"), data)), ContainsSubstring("Fortran order"));
  }
  SECTION("not 2-D") {
    CHECK_THAT(refusal(vkt::npy_bytes(1, dict("<f4", "False", "(6,)"), data)), ContainsSubstring("1-D"));
    CHECK_THAT(refusal(vkt::npy_bytes(1, dict("<f4", "False", "(1, 2, 3)"), data)), ContainsSubstring("3-D"));
  }
  SECTION("truncated or trailing data") {
    CHECK_THAT(refusal(vkt::npy_bytes(1, dict("<f4", "False", "(2, 3)"), data.substr(0, 20))),
               ContainsSubstring("truncated") && ContainsSubstring("needs 24 data bytes, the file has 20"));
    CHECK_THAT(refusal(vkt::npy_bytes(1, dict("<f4", "False", "(2, 3)"), data + "xxxx")),
               ContainsSubstring("4 bytes follow the array's data"));
  }
}

TEST_CASE("npy token ids: every integer dtype numpy and PyTorch users save, ids checked against the vocabulary",
          "[fit][model]") {
  vkt::TempDir dir;
  const std::string path = dir.file("tokens.npy");
  const std::vector<std::uint32_t> expected = {0, 271, 5, 256, 17, 100};
  const auto dict = [](const std::string& descr, std::size_t n) {
    return "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (" + std::to_string(n) + ",), }";
  };
  const auto as = [&]<class T>(T) { return raw(std::vector<T>(expected.begin(), expected.end())); };
  SECTION("<u2") { vkt::write_raw_file(path, vkt::npy_bytes(1, dict("<u2", 6), as(std::uint16_t{}))); }
  SECTION("<u4") { vkt::write_raw_file(path, vkt::npy_bytes(1, dict("<u4", 6), as(std::uint32_t{}))); }
  SECTION("<i4") { vkt::write_raw_file(path, vkt::npy_bytes(2, dict("<i4", 6), as(std::int32_t{}))); }
  SECTION("<i8") { vkt::write_raw_file(path, vkt::npy_bytes(3, dict("<i8", 6), as(std::int64_t{}))); }
  SECTION("<u8") { vkt::write_raw_file(path, vkt::npy_bytes(1, dict("<u8", 6), as(std::uint64_t{}))); }
  CHECK(read_npy_token_ids(path, 272) == expected);
  // the same file with a smaller vocabulary: the first id past it, by position
  CHECK_THAT(vkt::error_of([&] { read_npy_token_ids(path, 256); }),
             ContainsSubstring(path + ": token 1 is 271, outside the vocabulary of 256 (0 to 255)"));
}

TEST_CASE("npy token ids: negative, huge, float, 2-D, empty and truncated files are refused", "[fit][model][errors]") {
  vkt::TempDir dir;
  const std::string path = dir.file("tokens.npy");
  const auto dict = [](const std::string& descr, const std::string& shape) {
    return "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  };
  const auto refusal = [&](const std::string& bytes) {
    vkt::write_raw_file(path, bytes);
    return vkt::error_of([&] { read_npy_token_ids(path, 1000); });
  };
  CHECK_THAT(refusal(vkt::npy_bytes(1, dict("<i8", "(3,)"), raw(std::vector<std::int64_t>{4, -1, 2}))),
             ContainsSubstring("token 1 is -1, outside the vocabulary of 1000"));
  CHECK_THAT(refusal(vkt::npy_bytes(1, dict("<u8", "(2,)"), raw(std::vector<std::uint64_t>{4, ~0ull}))),
             ContainsSubstring("token 1 is 18446744073709551615, outside"));
  CHECK_THAT(refusal(vkt::npy_bytes(1, dict("<i4", "(2,)"), raw(std::vector<std::int32_t>{999, 1000}))),
             ContainsSubstring("token 1 is 1000, outside the vocabulary of 1000 (0 to 999)"));
  CHECK_THAT(refusal(vkt::npy_bytes(1, dict("<f4", "(2,)"), raw(std::vector<float>{1, 2}))),
             ContainsSubstring("dtype '<f4' is not supported (want '<u2', '<u4', '<u8', '<i4' or '<i8')"));
  CHECK_THAT(refusal(vkt::npy_bytes(1, dict(">u4", "(2,)"), raw(std::vector<std::uint32_t>{1, 2}))),
             ContainsSubstring("big-endian"));
  CHECK_THAT(refusal(vkt::npy_bytes(1, dict("<u4", "(1, 2)"), raw(std::vector<std::uint32_t>{1, 2}))),
             ContainsSubstring("the array is 2-D; token ids must be 1-D"));
  CHECK_THAT(refusal(vkt::npy_bytes(1, dict("<u4", "(0,)"), "")), ContainsSubstring("no token ids"));
  CHECK_THAT(refusal(vkt::npy_bytes(1, dict("<u4", "(3,)"), raw(std::vector<std::uint32_t>{1, 2}))),
             ContainsSubstring("truncated: shape (3,) of '<u4' needs 12 data bytes, the file has 8"));
  CHECK_THAT(refusal(vkt::npy_bytes(1, dict("<u2", "(1,)"), raw(std::vector<std::uint16_t>{1, 2}))),
             ContainsSubstring("2 bytes follow the array's data"));
}

TEST_CASE("npy token arrays: a 1-D stream or 2-D rows, a bad id named by its row and column",
          "[fit][model][errors]") {
  vkt::TempDir dir;
  const std::string path = dir.file("windows.npy");
  const auto dict = [](const std::string& descr, const std::string& shape) {
    return "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  };
  const std::vector<std::int64_t> ids = {1, 2, 3, 4, 5, 6};
  vkt::write_raw_file(path, vkt::npy_bytes(1, dict("<i8", "(2, 3)"), raw(ids)));
  const TokenArray rows = read_npy_token_array(path, 7);
  CHECK(rows.shape == std::vector<std::uint64_t>{2, 3});
  CHECK(rows.ids == std::vector<std::uint32_t>{1, 2, 3, 4, 5, 6});
  CHECK_THAT(vkt::error_of([&] { read_npy_token_array(path, 5); }),
             ContainsSubstring(path + ": token 4 (row 1, column 1) is 5, outside the vocabulary of 5 (0 to 4)"));
  CHECK_THAT(vkt::error_of([&] { read_npy_token_ids(path, 7); }),
             ContainsSubstring("the array is 2-D; token ids must be 1-D"));
  vkt::write_raw_file(path, vkt::npy_bytes(1, dict("<u2", "(3,)"), raw(std::vector<std::uint16_t>{6, 0, 6})));
  const TokenArray stream = read_npy_token_array(path, 7);
  CHECK(stream.shape == std::vector<std::uint64_t>{3});
  CHECK(stream.ids == std::vector<std::uint32_t>{6, 0, 6});
  vkt::write_raw_file(path, vkt::npy_bytes(1, dict("<u2", "(2, 0)"), ""));
  CHECK_THAT(vkt::error_of([&] { read_npy_token_array(path, 7); }), ContainsSubstring("no token ids (shape (2, 0))"));
  vkt::write_raw_file(path, vkt::npy_bytes(1, dict("<u2", "(1, 1, 1)"), raw(std::vector<std::uint16_t>{1})));
  CHECK_THAT(vkt::error_of([&] { read_npy_token_array(path, 7); }),
             ContainsSubstring("the array is 3-D; token ids must be 1-D (a stream) or 2-D (rows of tokens)"));
}
