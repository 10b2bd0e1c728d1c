// vkblr/file_io.hpp: a set of files written together (all new, or, when
// one cannot be written, all as they were, and no temporary left), and the
// removal of stale temporaries of exactly write_file_atomic's names.
#include <algorithm>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <filesystem>
#include <span>
#include <string_view>

#include "support/fit_files.hpp"
#include "vkblr/error.hpp"
#include "vkblr/file_io.hpp"

using Catch::Matchers::ContainsSubstring;

TEST_CASE("write_files_atomic: a set of files is written together", "[file_io]") {
  vkt::TempDir dir;
  const std::string a = dir.file("out.safetensors"), b = dir.file("out.json"), c = dir.file("out.svg");
  for (const std::string& p : {a, b, c}) vkt::write_raw_file(p, "old " + p);
  const vkblr::FileToWrite files[] = {{a, "layer"}, {b, "report"}, {c, "chart"}};
  vkblr::write_files_atomic(files);
  CHECK(vkt::read_raw_file(a) == "layer");
  CHECK(vkt::read_raw_file(b) == "report");
  CHECK(vkt::read_raw_file(c) == "chart");
  CHECK(dir.entries().size() == 3);  // no temporary left
}

TEST_CASE("write_files_atomic: when one file cannot be written, no file is touched", "[file_io]") {
  vkt::TempDir dir;
  const std::string a = dir.file("out.safetensors"), b = dir.file("out.json");
  vkt::write_raw_file(a, "old layer");
  vkt::write_raw_file(b, "old report");
  const auto entries_before = dir.entries().size();

  // the last file's directory is missing: its temporary cannot be made
  const std::string missing = dir.file("no-such-dir/out.svg");
  const vkblr::FileToWrite missing_dir[] = {{a, "layer"}, {b, "report"}, {missing, "chart"}};
  CHECK_THAT(vkt::error_of([&] { vkblr::write_files_atomic(missing_dir); }),
             ContainsSubstring("cannot write " + missing));
  // a name too long for the filesystem
  const std::string long_name = dir.file(std::string(300, 'n') + ".svg");
  const vkblr::FileToWrite too_long[] = {{a, "layer"}, {b, "report"}, {long_name, "chart"}};
  CHECK_THAT(vkt::error_of([&] { vkblr::write_files_atomic(too_long); }), ContainsSubstring("cannot write"));
  // a directory where the last file goes: refused before any rename
  const std::string in_the_way = dir.file("out.svg");
  std::filesystem::create_directory(in_the_way);
  const vkblr::FileToWrite directory[] = {{a, "layer"}, {b, "report"}, {in_the_way, "chart"}};
  CHECK_THAT(vkt::error_of([&] { vkblr::write_files_atomic(directory); }), ContainsSubstring("it is a directory"));

  CHECK(vkt::read_raw_file(a) == "old layer");
  CHECK(vkt::read_raw_file(b) == "old report");
  CHECK(dir.entries().size() == entries_before + 1);  // the directory made above; no temporary
}

TEST_CASE("write_files_atomic: a produced file is its pieces; a producer that throws leaves every file as it was",
          "[file_io]") {
  vkt::TempDir dir;
  const std::string a = dir.file("model.safetensors"), b = dir.file("model.json");
  vkt::write_raw_file(a, "old model");
  vkt::write_raw_file(b, "old report");
  const auto pieces = [](const vkblr::AppendBytes& append) {
    for (const std::string_view piece : {"first ", "", "second ", "third"}) append(std::as_bytes(std::span(piece)));
  };
  vkblr::FileToWrite produced{.path = a, .bytes = "ignored", .produce = pieces};
  const vkblr::FileToWrite set[] = {produced, {b, "report"}};
  vkblr::write_files_atomic(set);
  CHECK(vkt::read_raw_file(a) == "first second third");
  CHECK(vkt::read_raw_file(b) == "report");

  produced.produce = [](const vkblr::AppendBytes& append) {
    append(std::as_bytes(std::span(std::string_view("half a model"))));
    vkblr::fail("layer 3 cannot be read");
  };
  const vkblr::FileToWrite failing[] = {{b, "new report"}, produced};
  CHECK_THAT(vkt::error_of([&] { vkblr::write_files_atomic(failing); }), ContainsSubstring("layer 3 cannot be read"));
  CHECK(vkt::read_raw_file(a) == "first second third");
  CHECK(vkt::read_raw_file(b) == "report");
  CHECK(dir.entries().size() == 2);  // no temporary left
}

TEST_CASE("remove_stale_temporaries removes only write_file_atomic's leftovers", "[file_io]") {
  vkt::TempDir dir;
  const std::string target = dir.file("run.json");
  vkt::write_raw_file(target, "the report");
  vkt::write_raw_file(dir.file(".run.json.Ab3xYz"), "left by a killed write");
  vkt::write_raw_file(dir.file(".run.json.q9Q9q9"), "another");
  // not of the pattern: kept
  for (const char* name : {".run.json.Ab3xY", ".run.json.Ab3xYz7", ".run.json.Ab3_Yz", "run.json.Ab3xYz",
                           ".run.jsonXAb3xYz", ".other.json.Ab3xYz", ".run.json.Ab3xYz.bak"}) {
    vkt::write_raw_file(dir.file(name), "keep");
  }
  // a directory and a link of the pattern: kept (and the link's target too)
  std::filesystem::create_directory(dir.file(".run.json.DIR123"));
  vkt::write_raw_file(dir.file("precious"), "keep");
  std::filesystem::create_symlink(dir.file("precious"), dir.file(".run.json.LNK123"));

  CHECK(vkblr::remove_stale_temporaries(target) == 2);
  const std::vector<std::string> left = dir.entries();
  CHECK(left.size() == 1 + 7 + 3);
  CHECK(std::ranges::find(left, ".run.json.Ab3xYz") == left.end());
  CHECK(std::ranges::find(left, ".run.json.q9Q9q9") == left.end());
  CHECK(vkt::read_raw_file(target) == "the report");
  CHECK(vkt::read_raw_file(dir.file("precious")) == "keep");
  CHECK(vkblr::remove_stale_temporaries(target) == 0);
  CHECK(vkblr::remove_stale_temporaries(dir.file("no-such-dir/run.json")) == 0);
}
