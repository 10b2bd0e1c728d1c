// vkblr-fit's file readers against a few thousand damaged files (fixed
// seed: the same cases on every run). The damage starts from valid files
// made by the writers: bit flips, byte overwrites, insertions and
// deletions, truncation at every offset of the headers, changed header
// lengths, and edits of the JSON: deep nesting, repeated keys, wrong types,
// huge and negative numbers, offsets past the end, overlapping ranges, odd
// names. The safetensors and .npy files are read both by the whole-matrix
// readers and through MatrixSource (a memory map, read in chunks of rows).
// Every case must end in success or a vkblr::Error whose message is short; any other exception fails the test, and the dev build's ASan and
// UBSan fail it on a crash or undefined behaviour.
#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch_test_macros.hpp>
#include <algorithm>
#include <cstring>
#include <exception>
#include <format>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <typeinfo>
#include <vector>

#include "support/fit_files.hpp"
#include "vkblr/io/blr_result.hpp"
#include "vkblr/io/checkpoint.hpp"
#include "vkblr/io/excerpt.hpp"
#include "vkblr-fit/io/matrix_source.hpp"
#include "vkblr/io/json_input.hpp"
#include "vkblr/io/npy.hpp"
#include "vkblr/io/safetensors.hpp"
#include "vkblr-fit/io_names.hpp"

using namespace vkblr::fit;
using Json = nlohmann::json;

namespace {

constexpr std::uint64_t kSeed = 22;
// Longer messages quote too much of the file (each quote is cut at
// kExcerptBytes; a message holds a few).
constexpr std::size_t kMaxMessageBytes = 2048;

using Rng = std::mt19937_64;

std::size_t below(Rng& rng, std::size_t n) { return static_cast<std::size_t>(rng() % n); }

template <class T>
const T& pick(Rng& rng, const std::vector<T>& values) {
  return values[below(rng, values.size())];
}

// Runs `f`; a vkblr::Error ends it as a refusal would, but one whose
// message is too long becomes a std::length_error. Other exceptions pass
// through to the case.
template <class F>
void tolerate_refusal(F&& f) {
  try {
    f();
  } catch (const vkblr::Error& e) {
    const std::size_t size = std::strlen(e.what());
    if (size > kMaxMessageBytes)
      throw std::length_error(std::format("a message of {} bytes: {}", size, excerpt(e.what())));
  }
}

// Opens `tensor` of the file (empty: its only one) as a MatrixSource, as
// vkblr-fit opens W and X, and reads all its rows in chunks of two (one
// read when the rows are empty: a matrix of no columns may have 2^64 - 1
// of them).
void read_matrix_source(const std::string& path, const std::string& tensor) {
  const MatrixSource source(path, tensor, "fuzzed");
  const std::uint64_t chunk = source.cols() == 0 ? source.rows() : 2;
  std::vector<float> values;
  for (std::uint64_t first = 0; first < source.rows(); first += chunk) {
    const std::uint64_t count = std::min(chunk, source.rows() - first);
    values.resize(count * source.cols());
    source.read_rows(first, count, values);
    (void)source.bytes(first, count);
  }
}

// Reads everything a safetensors file offers, each tensor with the reader
// of its dtype (one read with another is refused before any data is read;
// the tests of the reader cover those).
void read_safetensors(const std::string& path) {
  SafetensorsReader reader(path);
  for (const TensorInfo& t : reader.tensors()) {
    reader.read_bytes(t);
    if (t.dtype == Dtype::U32) {
      reader.read_u32(t);
    } else if (t.dtype == Dtype::U16) {
      reader.read_u16(t);
    } else if (t.shape.size() == 2) {
      tolerate_refusal([&] { reader.read_matrix(t); });
    } else {
      tolerate_refusal([&] { reader.read_f32(t); });
    }
  }
  tolerate_refusal([&] { reader.choose(""); });
  (void)reader.tensor_list();
}

// Every tensor of a safetensors file through MatrixSource: the file's only
// one, then each by name (a file the reader refuses is refused here too).
void read_safetensors_sources(const std::string& path) {
  tolerate_refusal([&] { read_matrix_source(path, ""); });
  const SafetensorsReader reader(path);
  for (const TensorInfo& t : reader.tensors()) tolerate_refusal([&] { read_matrix_source(path, t.name); });
}

// Runs every reader on the file, each whatever the others did; the first
// refusal is rethrown after all have run.
std::function<void(const std::string&)> each_of(std::vector<std::function<void(const std::string&)>> readers) {
  return [readers = std::move(readers)](const std::string& path) {
    std::exception_ptr refusal;
    for (const auto& read : readers) {
      try {
        read(path);
      } catch (const vkblr::Error&) {
        if (!refusal) refusal = std::current_exception();
      }
    }
    if (refusal) std::rethrow_exception(refusal);
  };
}

// Reads a checkpoint and the fields vkblr-fit's resume reads.
void read_checkpoint_fields(const std::string& path) {
  const Checkpoint ck = read_checkpoint(path);
  const JsonField md(ck.metadata, path + ": checkpoint metadata");
  tolerate_refusal([&] { md["next_step"].u32(); });
  tolerate_refusal([&] { md["applied"].u32(); });
  tolerate_refusal([&] {
    const JsonField curve = md["curve"];
    for (std::size_t i = 0; i < curve.size(); ++i) {
      curve[i][0].u64();
      curve[i][1].number();
    }
  });
  tolerate_refusal([&] {
    for (std::size_t i = 0; i < 3; ++i) md["init"][i].number();
  });
  // Copying, comparing and dumping recurse over the nesting, which the
  // reader bounds.
  const Json copy = ck.metadata;
  CHECK(copy == ck.metadata);
  (void)copy.dump();
}

struct Tally {
  std::size_t cases = 0, accepted = 0, refused = 0;
  std::vector<std::string> failures;  // the first 20

  void failure(std::string what) {
    if (failures.size() < 20) failures.push_back(std::move(what));
  }
};

// Replaces the contents of the file `path` with `bytes`: written over the
// old contents, then cut to size. (Truncating to zero first, as
// std::ofstream does, makes ext4 flush the file at close: milliseconds a
// case.)
void overwrite_file(const std::string& path, const std::string& bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  REQUIRE(fd >= 0);
  const bool written = ::pwrite(fd, bytes.data(), bytes.size(), 0) == static_cast<ssize_t>(bytes.size()) &&
                       ::ftruncate(fd, static_cast<off_t>(bytes.size())) == 0;
  ::close(fd);
  REQUIRE(written);
}

// One case: `bytes` as the file, read by `read`.
void run_case(const std::string& path, const std::string& bytes, const std::string& label,
              const std::function<void(const std::string&)>& read, Tally& tally) {
  overwrite_file(path, bytes);
  ++tally.cases;
  try {
    read(path);
    ++tally.accepted;
  } catch (const vkblr::Error& e) {
    ++tally.refused;
    const std::size_t size = std::strlen(e.what());
    if (size > kMaxMessageBytes)
      tally.failure(std::format("{}: a message of {} bytes: {}", label, size, excerpt(e.what())));
  } catch (const std::exception& e) {
    tally.failure(std::format("{}: {}: {}", label, typeid(e).name(), excerpt(e.what())));
  } catch (...) {
    tally.failure(label + ": an exception that is not a std::exception");
  }
}

// Damage at the byte level. `hot` bytes at the start (the headers) are hit
// more often than the rest.
std::vector<std::pair<std::string, std::string>> byte_mutations(const std::string& base, std::size_t hot, Rng& rng,
                                                                std::size_t count) {
  std::vector<std::pair<std::string, std::string>> out;
  const auto position = [&] {
    return below(rng, 4) != 0 ? below(rng, std::min(hot, base.size())) : below(rng, base.size());
  };
  const std::vector<char> interesting = {'\0', '\xff', '\x7f', '\x80', '{',  '}', '[', ']', '"', ',',  ':', '-',
                                         '0',  '9',    'e',    ' ',    '\\', 'n', 'L', '(', ')', '\'', '<', '>'};
  for (std::size_t i = 0; i < count; ++i) {
    std::string s = base;
    const std::size_t flips = 1 + below(rng, 4);
    for (std::size_t f = 0; f < flips; ++f) s[position()] ^= static_cast<char>(1u << below(rng, 8));
    out.emplace_back(std::format("bit flips #{}", i), std::move(s));
  }
  for (std::size_t i = 0; i < count; ++i) {
    std::string s = base;
    s[position()] = pick(rng, interesting);
    out.emplace_back(std::format("byte overwrite #{}", i), std::move(s));
  }
  for (std::size_t i = 0; i < count / 4; ++i) {
    std::string s = base;
    const std::size_t at = position();
    if (below(rng, 2) == 0) {
      s.erase(at, 1 + below(rng, 16));
    } else {
      std::string inserted(1 + below(rng, 16), '\0');
      for (char& c : inserted) c = pick(rng, interesting);
      s.insert(at, inserted);
    }
    out.emplace_back(std::format("splice #{}", i), std::move(s));
  }
  // Every cut through the magic and length fields and around the end of the
  // headers, a sample of the rest (all cuts inside a header fail alike).
  std::set<std::size_t> cuts;
  for (std::size_t cut = 0; cut < 24; ++cut) cuts.insert(cut);
  for (std::size_t cut = hot > 8 ? hot - 8 : 0; cut < hot + 8; ++cut) cuts.insert(cut);
  for (std::size_t cut = 0; cut < base.size(); cut += 1 + below(rng, 24)) cuts.insert(cut);
  for (const std::size_t cut : cuts) {
    if (cut < base.size()) out.emplace_back(std::format("truncated at {}", cut), base.substr(0, cut));
  }
  return out;
}

std::string nested_arrays(std::size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

// Values to put where the format wants something else. The long and deep
// ones are a few thousand bytes (far past every limit and excerpt): each
// case with one is parsed whole at -O0; the dedicated cases below nest
// 100000 deep.
std::vector<std::string> odd_json_values() {
  std::string nested_objects;
  for (int i = 0; i < 1000; ++i) nested_objects += R"({"a":)";
  nested_objects += "0" + std::string(1000, '}');
  std::vector<std::string> values = {"null", "true", "0", "-1", "1.5", "-0", "1e308", "1e400", "-1e400"};
  values.insert(values.end(), {"18446744073709551615", "18446744073709551616", "-9223372036854775809",
                               "123456789012345678901234567890"});
  values.insert(values.end(), {R"("")", R"("F32")", R"("U32")", R"("F4")", R"("x")", R"("\u0000")", "\"\xff\""});
  values.insert(values.end(), {"[]", "{}", "[0]", "[0,0]", "[1,2,3]", "[-1,8]", "[0,-8]", "[4294967296,4294967296]",
                               R"(["0","8"])", R"({"dtype":"F32"})", "[[0,8]]", "[[[["});
  values.insert(values.end(), {nested_arrays(4), nested_arrays(64), nested_arrays(3000), nested_objects,
                               "\"" + std::string(3000, 'v') + "\""});
  return values;
}

// The file of a safetensors header and data.
std::string assemble(const std::string& header, const std::string& data) {
  return vkt::le_bytes<std::uint64_t>(header.size()) + header + data;
}

struct Split {
  Json header;
  std::string data;
};

Split split(const std::string& file) {
  std::uint64_t length = 0;
  std::memcpy(&length, file.data(), 8);
  return {Json::parse(file.substr(8, length)), file.substr(8 + length)};
}

constexpr std::string_view kHole = "@@HOLE@@";

// `json` with the value at `pointer` replaced by the text `value`.
std::string with_value(Json json, const Json::json_pointer& pointer, const std::string& value) {
  json[pointer] = kHole;
  std::string text = json.dump();
  text.replace(text.find(std::format("\"{}\"", kHole)), kHole.size() + 2, value);
  return text;
}

// Damage to the JSON header of a safetensors file.
std::vector<std::pair<std::string, std::string>> header_mutations(const std::string& base, Rng& rng,
                                                                  std::size_t count) {
  std::vector<std::pair<std::string, std::string>> out;
  const Split parts = split(base);
  const Json& header = parts.header;
  const std::string& data = parts.data;
  std::vector<std::string> pointers;
  std::vector<std::string> names;
  for (const auto& [name, entry] : header.items()) {
    pointers.push_back("/" + name);
    if (name == "__metadata__") {
      for (const auto& [key, value] : entry.items()) pointers.push_back("/__metadata__/" + key);
      continue;
    }
    names.push_back(name);
    for (const char* field : {"/dtype", "/shape", "/shape/0", "/data_offsets", "/data_offsets/0", "/data_offsets/1"}) {
      if (std::string_view(field) != "/shape/0" || !entry.at("shape").empty()) pointers.push_back("/" + name + field);
    }
  }
  const std::vector<std::string> values = odd_json_values();
  for (std::size_t i = 0; i < count; ++i) {
    const std::string& pointer = pick(rng, pointers);
    const std::string& value = pick(rng, values);
    out.emplace_back(std::format("{} = {}", pointer, excerpt(value, 40)),
                     assemble(with_value(header, Json::json_pointer(pointer), value), data));
  }
  const std::uint64_t data_bytes = data.size();
  for (const std::string& name : names) {
    const Json& entry = header.at(name);
    const auto begin = entry.at("data_offsets").at(0).get<std::uint64_t>();
    const auto end = entry.at("data_offsets").at(1).get<std::uint64_t>();
    const auto offsets = [&](std::uint64_t b, std::uint64_t e, const std::string& what) {
      Json edited = header;
      edited[name]["data_offsets"] = {b, e};
      out.emplace_back(std::format("{} offsets {}", name, what), assemble(edited.dump(), data));
    };
    offsets(begin, end + 1, "one past");
    offsets(begin + 4, end + 4, "shifted");
    offsets(data_bytes, data_bytes + (end - begin), "past the end");
    offsets(~0ull - 3, ~0ull, "at 2^64");
    for (const std::string& other : names) {
      if (other == name) continue;
      const Json& theirs = header.at(other).at("data_offsets");
      offsets(theirs.at(0).get<std::uint64_t>(), theirs.at(1).get<std::uint64_t>(), "of " + other);
    }
    for (const std::string& new_name :
         {std::string(""), std::string("__metadata__"), std::string(3000, 'n'), std::string("a\nb\x1b[31m")}) {
      Json renamed = header;
      renamed.erase(name);
      renamed[new_name] = entry;
      out.emplace_back(std::format("{} renamed {}", name, excerpt(new_name, 20)), assemble(renamed.dump(), data));
    }
    for (const char* field : {"dtype", "shape", "data_offsets"}) {
      Json removed = header;
      removed[name].erase(field);
      out.emplace_back(std::format("{} without {}", name, field), assemble(removed.dump(), data));
    }
    // A key twice: the tensor, and a field of it.
    const std::string text = header.dump();
    out.emplace_back(std::format("{} twice", name),
                     assemble("{" + Json(name).dump() + ":" + entry.dump() + "," + text.substr(1), data));
    out.emplace_back(
        std::format("{} with dtype twice", name),
        assemble(with_value(header, Json::json_pointer("/" + name), R"({"dtype":"F32",)" + entry.dump().substr(1)),
                 data));
  }
  out.emplace_back(
      "a shape nested 100000 deep",
      assemble(with_value(header, Json::json_pointer("/" + names.front() + "/shape"), nested_arrays(100000)), data));
  const std::string text = header.dump();
  out.emplace_back("__metadata__ twice", assemble(R"({"__metadata__":{"k":"v"},)" + text.substr(1), data));
  out.emplace_back("not an object", assemble("[" + text + "]", data));
  out.emplace_back("padded", assemble(text + std::string(100, ' '), data));
  out.emplace_back("trailing text", assemble(text + " x", data));
  return out;
}

// Changed header-length fields: `width` bytes at `at`, whose value is `length`.
std::vector<std::pair<std::string, std::string>> length_mutations(const std::string& base, std::size_t at,
                                                                  std::size_t width, std::uint64_t length, Rng& rng) {
  std::vector<std::uint64_t> values = {0,
                                       1,
                                       2,
                                       7,
                                       8,
                                       length - 8,
                                       length - 1,
                                       length + 1,
                                       length + 8,
                                       base.size() - at - width,
                                       base.size(),
                                       10000,
                                       10001,
                                       1ull << 31,
                                       1ull << 32,
                                       100ull << 20,
                                       (100ull << 20) + 1,
                                       1ull << 63,
                                       ~0ull};
  for (int i = 0; i < 10; ++i) values.push_back(rng());
  std::vector<std::pair<std::string, std::string>> out;
  for (const std::uint64_t v : values) {
    std::string s = base;
    for (std::size_t i = 0; i < width; ++i) s[at + i] = static_cast<char>((v >> (8 * i)) & 0xff);
    out.emplace_back(std::format("header length {}", v & (width == 8 ? ~0ull : (1ull << (8 * width)) - 1)),
                     std::move(s));
  }
  return out;
}

std::uint64_t safetensors_header_length(const std::string& file) {
  std::uint64_t length = 0;
  std::memcpy(&length, file.data(), 8);
  return length;
}

// The file `base` with its metadata string `key` set to `value` (invalid
// UTF-8 in it written as U+FFFD).
std::string with_metadata(const std::string& base, const std::string& key, const std::string& value) {
  Split parts = split(base);
  parts.header["__metadata__"][key] = value;
  return assemble(parts.header.dump(-1, ' ', false, Json::error_handler_t::replace), parts.data);
}

// Damage to the JSON inside a checkpoint's "checkpoint" metadata string.
std::vector<std::pair<std::string, std::string>> checkpoint_json_mutations(const std::string& base, Rng& rng,
                                                                           std::size_t count) {
  const Json metadata = Json::parse(split(base).header["__metadata__"]["checkpoint"].get<std::string>());
  const std::vector<std::string> pointers = {"",           "/next_step", "/applied", "/skipped", "/curve", "/curve/0",
                                             "/curve/0/1", "/init",      "/init/2",  "/key",     "/key/m", "/train_s"};
  const std::vector<std::string> values = odd_json_values();
  std::vector<std::pair<std::string, std::string>> out;
  for (std::size_t i = 0; i < count; ++i) {
    const std::string& pointer = pick(rng, pointers);
    const std::string& value = pick(rng, values);
    out.emplace_back(std::format("checkpoint JSON {} = {}", pointer, excerpt(value, 40)),
                     with_metadata(base, "checkpoint", with_value(metadata, Json::json_pointer(pointer), value)));
  }
  const std::string text = metadata.dump();
  out.emplace_back("checkpoint JSON next_step twice",
                   with_metadata(base, "checkpoint", R"({"next_step":1,)" + text.substr(1)));
  out.emplace_back("checkpoint JSON cut", with_metadata(base, "checkpoint", text.substr(0, text.size() / 2)));
  out.emplace_back("checkpoint JSON nested 100000 deep",
                   with_metadata(base, "checkpoint", R"({"next_step":)" + nested_arrays(100000) + "}"));
  for (const char* key : {"format", "format_version"}) {
    for (const std::string& value : {std::string(""), std::string("2"), std::string(3000, 'f'), std::string("1 ")}) {
      out.emplace_back(std::format("{} = {}", key, excerpt(value, 20)), with_metadata(base, key, value));
    }
  }
  return out;
}

// Damage to a result file's metadata strings.
std::vector<std::pair<std::string, std::string>> result_metadata_mutations(const std::string& base) {
  const std::vector<std::string> values = {"",           "0",          "-1",
                                           "32 ",        " 32",        "0x20",
                                           "4294967295", "4294967296", "99999999999999999999",
                                           "1e3",        "F16",        "F32",
                                           "BF16",       "nan",        std::string(3000, '3')};
  const std::vector<std::string> command_lines = {"[]",
                                                  "[1]",
                                                  R"(["a", null])",
                                                  "{}",
                                                  "null",
                                                  "[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]",
                                                  nested_arrays(100000),
                                                  R"([")" + std::string(3000, 'c') + R"("])",
                                                  "[\"a\"",
                                                  "\"\xff\""};
  std::vector<std::pair<std::string, std::string>> out;
  for (const char* key :
       {"format", "format_version", "m", "n", "rank", "paths", "scale_dtype", "bpw", "tool_version"}) {
    for (const std::string& value : values) {
      out.emplace_back(std::format("{} = {}", key, excerpt(value, 20)), with_metadata(base, key, value));
    }
  }
  for (const std::string& value : command_lines) {
    out.emplace_back(std::format("command_line = {}", excerpt(value, 20)), with_metadata(base, "command_line", value));
  }
  return out;
}

std::string raw_floats(std::size_t count, float first) {
  std::vector<float> values(count);
  for (std::size_t i = 0; i < count; ++i) values[i] = first + static_cast<float>(i);
  std::string s(count * 4, '\0');
  std::memcpy(s.data(), values.data(), s.size());
  return s;
}

// Damage to a .npy header dict (data of six f4 values).
std::vector<std::pair<std::string, std::string>> npy_dict_mutations(int major) {
  const std::string data = raw_floats(6, 1.0f);
  const std::vector<std::string> descrs = {
      "'<f4'",          "'<i4'", "'>f4'",  "'|f4'", "''",    "'" + std::string(5000, 'd') + "'",
      "[('x', '<f4')]", "True",  "(1, 2)", "'<f2'", "'<f8'", "'=f4'"};
  const std::vector<std::string> fortrans = {"False", "True", "1", "'False'", "None"};
  const std::vector<std::string> shapes = {"()",
                                           "(6,)",
                                           "(2, 3)",
                                           "(3, 2)",
                                           "(2, 3, 1)",
                                           "(0, 3)",
                                           "(18446744073709551615, 2)",
                                           "(18446744073709551616, 1)",
                                           "(-1, 6)",
                                           "(2L, 3L)",
                                           "((2, 3),)",
                                           "(2,, 3)",
                                           "(" + std::string(5000, '9') + ", 1)",
                                           "(2, 3"};
  std::vector<std::pair<std::string, std::string>> out;
  const auto add = [&](const std::string& dict) {
    out.emplace_back(std::format("v{} dict {}", major, excerpt(dict, 60)), vkt::npy_bytes(major, dict, data));
  };
  for (const std::string& d : descrs) add("{'descr': " + d + ", 'fortran_order': False, 'shape': (2, 3), }");
  for (const std::string& f : fortrans) add("{'descr': '<f4', 'fortran_order': " + f + ", 'shape': (2, 3), }");
  for (const std::string& s : shapes) add("{'descr': '<f4', 'fortran_order': False, 'shape': " + s + ", }");
  for (const std::string& dict :
       {std::string("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'x': 1}"),
        std::string("{'descr': '<f4', 'descr': '<f8', 'fortran_order': False, 'shape': (2, 3)}"),
        std::string("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)"),
        std::string("{'descr': '<f4, 'fortran_order': False, 'shape': (2, 3)}"),
        std::string("{") + std::string(9000, ' '), std::string(""), std::string("}")}) {
    add(dict);
  }
  return out;
}

}  // namespace

TEST_CASE("fit readers: thousands of damaged files end in success or a vkblr::Error", "[fit][errors][fuzz]") {
  vkt::TempDir dir;
  Rng rng(kSeed);
  Tally tally;
  const auto feed = [&](const std::string& file_name, const std::vector<std::pair<std::string, std::string>>& cases,
                        const std::function<void(const std::string&)>& read) {
    const std::string path = dir.file(file_name);
    for (const auto& [label, bytes] : cases) run_case(path, bytes, file_name + ": " + label, read, tally);
  };

  // Valid files from the writers.
  const std::string tensors_path = dir.file("base.safetensors");
  {
    const std::vector<float> w = {1.5f, -2.25f, 3.0f, 0.1f, -0.0f, 1e-8f};
    const std::vector<std::uint32_t> bits = {0u, 1u, 0x80000000u, 0xffffffffu};
    const std::vector<std::uint16_t> raw16 = {0x3f80, 0xc000, 0x7fc0};
    const std::vector<double> wide = {0.1, -1e300};
    SafetensorsWriter writer;
    writer.add_f32("w", {2, 3}, w);
    writer.add_f16("half", {2, 2}, std::span(w).first(4));
    writer.add_u32("bits", {2, 2}, bits);
    writer.add_u16("raw16", {3}, raw16);
    writer.add_bytes("bf", Dtype::BF16, {3}, std::as_bytes(std::span(raw16)));
    writer.add_bytes("wide", Dtype::F64, {1, 2}, std::as_bytes(std::span(wide)));
    writer.set_metadata("format", "test");
    writer.write(tensors_path);
  }
  const std::string checkpoint_path = dir.file("base.ckpt");
  {
    Checkpoint ck;
    ck.metadata = Json::parse(R"({"key": {"m": 32, "n": 32, "rank": 32, "weight": "w.safetensors"},
        "next_step": 6, "applied": 6, "skipped": 0, "curve": [[0, 0.5], [4, 0.25]], "init": [0.5, 0.6, null],
        "train_s": 1.5})");
    ck.u32["path0.bits_u"] = {1, 2, 3, 4};
    ck.u32["layer.scales"] = {0x3f800000u, 0x40000000u};
    ck.f32["state.m"] = {0.5f, -0.5f, 0.25f};
    ck.u16["state.v"] = {0x3f80, 0x4000};
    write_checkpoint(checkpoint_path, ck);
  }
  const std::string result_path = dir.file("base.result.safetensors");
  {
    BlrResult result;
    result.shape = {32, 32, 32, 1};
    result.paths = {{std::vector<std::uint32_t>(32, 0x5a5a5a5au), std::vector<std::uint32_t>(32, 0xa5a5a5a5u),
                     std::vector<float>(32, 1.0f), std::vector<float>(32, 0.5f), std::vector<float>(32, 2.0f)}};
    result.tool_version = "vkblr-fit test";
    result.command_line = {"vkblr-fit", "--rank", "32"};
    write_blr_result(result_path, result);
  }
  const std::string tensors = vkt::read_raw_file(tensors_path);
  const std::string checkpoint = vkt::read_raw_file(checkpoint_path);
  const std::string result = vkt::read_raw_file(result_path);
  // The valid files are read.
  read_safetensors(tensors_path);
  read_checkpoint_fields(checkpoint_path);
  CHECK(read_blr_result(result_path).shape.rank == 32);

  for (const auto& [name, base, read] :
       {std::tuple{"t.safetensors", &tensors, each_of({read_safetensors, read_safetensors_sources})},
        std::tuple{"c.ckpt", &checkpoint, std::function<void(const std::string&)>(read_checkpoint_fields)},
        std::tuple{"r.safetensors", &result,
                   std::function<void(const std::string&)>([](const std::string& p) { read_blr_result(p); })}}) {
    const std::uint64_t length = safetensors_header_length(*base);
    feed(name, byte_mutations(*base, 8 + length, rng, 200), read);
    feed(name, length_mutations(*base, 0, 8, length, rng), read);
    feed(name, header_mutations(*base, rng, 250), read);
  }
  feed("c.ckpt", checkpoint_json_mutations(checkpoint, rng, 200), read_checkpoint_fields);
  feed("r.safetensors", result_metadata_mutations(result), [](const std::string& p) { read_blr_result(p); });

  const auto read_npy = each_of({[](const std::string& p) { read_npy_matrix(p); },
                                 [](const std::string& p) { read_matrix_source(p, ""); }});
  for (const int major : {1, 2, 3}) {
    const std::string npy =
        vkt::npy_bytes(major, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", raw_floats(6, 1.0f));
    const std::size_t length_at = 8, width = major == 1 ? 2 : 4;
    const std::uint64_t length = npy.size() - 24 - length_at - width;
    const std::string name = std::format("v{}.npy", major);
    vkt::write_raw_file(dir.file(name), npy);
    CHECK(read_npy_matrix(dir.file(name)).values.size() == 6);
    feed(name, byte_mutations(npy, length_at + width + length, rng, 120), read_npy);
    feed(name, length_mutations(npy, length_at, width, length, rng), read_npy);
    feed(name, npy_dict_mutations(major), read_npy);
  }

  INFO(tally.cases << " cases: " << tally.accepted << " read, " << tally.refused << " refused");
  std::string failures;
  for (const std::string& f : tally.failures) failures += "\n" + f;
  INFO("failures:" << failures);
  CHECK(tally.failures.empty());
  CHECK(tally.cases > 3000);
  CHECK(tally.refused > tally.cases / 2);  // the damage is seen
  CHECK(tally.accepted > 0);               // and not all of it refused (a flip in the data is harmless)
}
