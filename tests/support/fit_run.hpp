// fit_run.hpp — a tiny vkblr-fit run for the device tests of vkblr-fit
// (seconds on lavapipe), and a matrix file to feed it.
#pragma once

#include <catch2/catch_test_macros.hpp>
#include <string>

#include "vkblr/io/blr_result.hpp"
#include "vkblr-fit/fit_options.hpp"
#include "vkblr/io/matrix.hpp"
#include "vkblr/io/safetensors.hpp"
#include "vkblr-fit/io_names.hpp"

namespace vkt {

// A synthetic 128×96 layer, 2 paths of rank 32, batches of 64 tokens (4
// training batches, 1 held out), 12 steps with the held-out error every 4,
// quiet, writing <out>.safetensors, .json, .svg.
inline vkblr::fit::FitOptions small_fit_run(const std::string& out) {
  vkblr::fit::FitOptions o;
  o.synthetic_m = 128;
  o.synthetic_n = 96;
  o.rank = 32;
  o.paths = 2;
  o.batch = 64;
  o.tokens = 256;
  o.held_out = 64;
  o.steps = 12;
  o.eval_every = 4;
  o.flip_budget = 0.01f;
  o.quiet = true;
  o.out = out;
  return o;
}

// `m` as the only tensor, "w" F32, of a safetensors file.
inline void write_matrix_file(const std::string& path, const vkblr::fit::Matrix& m) {
  vkblr::fit::SafetensorsWriter w;
  w.add_f32("w", {m.rows, m.cols}, m.values);
  w.write(path);
}

// Checks that two results hold the same layer, bit for bit.
inline void check_same_layer(const vkblr::fit::BlrResult& a, const vkblr::fit::BlrResult& b) {
  REQUIRE(a.paths.size() == b.paths.size());
  for (std::size_t p = 0; p < a.paths.size(); ++p) {
    INFO("path " << p);
    CHECK(a.paths[p].bits_u == b.paths[p].bits_u);
    CHECK(a.paths[p].bits_v == b.paths[p].bits_v);
    CHECK(a.paths[p].h == b.paths[p].h);
    CHECK(a.paths[p].l == b.paths[p].l);
    CHECK(a.paths[p].g == b.paths[p].g);
  }
}

}  // namespace vkt
