// vkblr-fit's outputs: refused before any work when one would replace an
// input (by filesystem identity: the same path, a symbolic or a hard link)
// or cannot be created (missing directory, over-long name, a directory in
// the way), a prefix without a file name refused, stale temporaries of the
// outputs removed at the start, and the three results written as one set.
#include <algorithm>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <filesystem>

#include "support/fit_files.hpp"
#include "support/fit_run.hpp"
#include "support/gpu.hpp"
#include "vkblr-fit/fit_job.hpp"
#include "vkblr-fit/fit_outputs.hpp"

using namespace vkblr;
using Catch::Matchers::ContainsSubstring;

namespace {

// prepare_fit_outputs' message for these options.
std::string refusal(const fit::FitOptions& o) {
  return vkt::error_of([&] { fit::prepare_fit_outputs(fit::fit_output_paths(o), o); });
}

}  // namespace

TEST_CASE("vkblr-fit: --out needs a file name", "[fit]") {
  vkt::TempDir dir;
  for (const std::string& out : {std::string(""), dir.file("sub/"), std::string("."), dir.file("..")}) {
    INFO("--out '" << out << "'");
    CHECK_THAT(vkt::error_of([&] { fit::fit_output_paths(vkt::small_fit_run(out)); }),
               ContainsSubstring("needs a file name"));
  }
  const fit::FitOutputPaths p = fit::fit_output_paths(vkt::small_fit_run(dir.file("run")));
  CHECK(p.safetensors == dir.file("run.safetensors"));
  CHECK(p.json == dir.file("run.json"));
  CHECK(p.svg == dir.file("run.svg"));
  CHECK(p.checkpoint == dir.file("run.ckpt"));
}

TEST_CASE("vkblr-fit: an output that is an input is refused", "[fit]") {
  vkt::TempDir dir;
  vkt::write_raw_file(dir.file("w.safetensors"), "the user's weight");
  vkt::write_raw_file(dir.file("x.safetensors"), "the user's activations");
  fit::FitOptions o = vkt::small_fit_run(dir.file("w"));
  o.weight_path = dir.file("w.safetensors");
  CHECK_THAT(refusal(o), ContainsSubstring("is the input --weight " + o.weight_path));
  // the same file under another name: a relative path, a symbolic link, a
  // hard link
  o.out = dir.file("sub/../w");
  std::filesystem::create_directory(dir.file("sub"));
  CHECK_THAT(refusal(o), ContainsSubstring("--weight"));
  std::filesystem::create_symlink(dir.file("w.safetensors"), dir.file("link.safetensors"));
  o.out = dir.file("link");
  CHECK_THAT(refusal(o), ContainsSubstring("--weight"));
  std::filesystem::create_hard_link(dir.file("w.safetensors"), dir.file("hard.safetensors"));
  o.out = dir.file("hard");
  CHECK_THAT(refusal(o), ContainsSubstring("--weight"));

  o = vkt::small_fit_run(dir.file("x"));
  o.activations_path = dir.file("x.safetensors");
  CHECK_THAT(refusal(o), ContainsSubstring("is the input --activations"));
  o = vkt::small_fit_run(dir.file("w"));
  o.eval = dir.file("w.safetensors");
  CHECK_THAT(refusal(o), ContainsSubstring("is the input --eval"));
  // a checkpoint as --weight, written over by --checkpoint-every
  o = vkt::small_fit_run(dir.file("w"));
  o.weight_path = dir.file("w.ckpt");
  vkt::write_raw_file(o.weight_path, "odd, but the user's");
  o.checkpoint_every = 2;
  CHECK_THAT(refusal(o), ContainsSubstring("w.ckpt is the input --weight"));
  // a result resumed as a checkpoint is refused; the run's own checkpoint
  // may be resumed (and is replaced by later ones)
  o = vkt::small_fit_run(dir.file("w"));
  o.resume = dir.file("w.safetensors");
  CHECK_THAT(refusal(o), ContainsSubstring("is the input --resume"));
  o.resume = dir.file("w.ckpt");
  o.checkpoint_every = 2;
  CHECK(fit::prepare_fit_outputs(fit::fit_output_paths(o), o) == 0);

  CHECK(vkt::read_raw_file(dir.file("w.safetensors")) == "the user's weight");
  CHECK(vkt::read_raw_file(dir.file("x.safetensors")) == "the user's activations");
}

TEST_CASE("vkblr-fit: outputs that cannot be created are refused", "[fit]") {
  vkt::TempDir dir;
  fit::FitOptions o = vkt::small_fit_run(dir.file("missing/run"));
  CHECK_THAT(refusal(o), ContainsSubstring("directory " + dir.file("missing") + " does not exist"));
  vkt::write_raw_file(dir.file("file"), "");
  o.out = dir.file("file/run");
  CHECK_THAT(refusal(o), ContainsSubstring("is not a directory"));
  o.out = dir.file(std::string(250, 'n'));  // with ".safetensors" and the temporary's suffix: over NAME_MAX
  CHECK_THAT(refusal(o), ContainsSubstring("cannot create") && ContainsSubstring("File name too long"));
  std::filesystem::create_directory(dir.file("run.svg"));
  o.out = dir.file("run");
  CHECK_THAT(refusal(o), ContainsSubstring(dir.file("run.svg") + ": it is a directory"));
  // the checkpoint only when one is written
  std::filesystem::remove(dir.file("run.svg"));
  std::filesystem::create_directory(dir.file("run.ckpt"));
  CHECK(fit::prepare_fit_outputs(fit::fit_output_paths(o), o) == 0);
  o.checkpoint_every = 2;
  CHECK_THAT(refusal(o), ContainsSubstring(dir.file("run.ckpt") + ": it is a directory"));
  CHECK(dir.entries().size() == 2);  // file and run.ckpt/: no probe left
}

TEST_CASE("vkblr-fit: stale temporaries of the outputs are removed at the start", "[fit]") {
  vkt::TempDir dir;
  for (const char* name : {".run.safetensors.a1B2c3", ".run.json.ZZZZZZ", ".run.svg.000000", ".run.ckpt.XyZ123"}) {
    vkt::write_raw_file(dir.file(name), "left by a killed run");
  }
  for (const char* name : {".run.ckpt.XyZ12", ".rum.json.ZZZZZZ", "run.json"}) vkt::write_raw_file(dir.file(name), "");
  const fit::FitOptions o = vkt::small_fit_run(dir.file("run"));
  CHECK(fit::prepare_fit_outputs(fit::fit_output_paths(o), o) == 4);
  CHECK(dir.entries().size() == 3);
}

GPU_TEST("vkblr-fit: outputs are checked before the inputs are read, and written as one set", "[fit][gpu]") {
  vkt::TempDir dir;
  // --weight w.safetensors --out w: refused, the weight untouched
  fit::FitOptions o = vkt::small_fit_run(dir.file("w"));
  vkt::write_raw_file(dir.file("w.safetensors"), "the user's weight");
  o.weight_path = dir.file("w.safetensors");
  CHECK_THAT(vkt::error_of([&] { fit::run_fit(ctx, o); }), ContainsSubstring("is the input --weight"));
  CHECK(vkt::read_raw_file(dir.file("w.safetensors")) == "the user's weight");
  // an output directory that does not exist is found before the inputs
  // (here a missing weight) are read
  o = vkt::small_fit_run(dir.file("missing/run"));
  o.weight_path = dir.file("absent.safetensors");
  CHECK_THAT(vkt::error_of([&] { fit::run_fit(ctx, o); }),
             ContainsSubstring("directory " + dir.file("missing") + " does not exist"));

  // a run writes its three files, and no temporary is left
  vkt::write_raw_file(dir.file(".run.json.AAAAAA"), "stale");
  fit::run_fit(ctx, vkt::small_fit_run(dir.file("run")));
  std::vector<std::string> entries = dir.entries();
  std::ranges::sort(entries);
  CHECK(entries == std::vector<std::string>{"run.json", "run.safetensors", "run.svg", "w.safetensors"});
}
