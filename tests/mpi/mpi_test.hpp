// mpi_test.hpp — what the vkblr::mpi test programs share: a planted blr
// problem every rank builds alike, snapshot hashes, and checks that count
// failures per rank (each program is one process per rank under mpirun,
// not a Catch2 test).
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "support/blr_ref.hpp"
#include "support/trainer_snapshot.hpp"
#include "vkblr/mpi.hpp"

namespace vkt::mpi {

// Failures of this rank; finish() makes the exit status of every rank 1
// when any rank failed.
class Checks {
 public:
  explicit Checks(const vkblr::mpi::RankGroup& group) : group_(group) {}
  void expect(bool ok, const std::string& what) {
    if (ok) return;
    ++failures_;
    std::fprintf(stderr, "rank %d: FAILED: %s\n", group_.rank(), what.c_str());
  }
  int finish() {
    int all = 0;
    MPI_Allreduce(&failures_, &all, 1, MPI_INT, MPI_SUM, group_.comm());
    if (group_.rank() == 0) std::printf("%s: %d failure(s) over %d ranks\n", all ? "FAILED" : "passed", all, group_.size());
    return all ? 1 : 0;
  }

 private:
  const vkblr::mpi::RankGroup& group_;
  int failures_ = 0;
};

// A planted layer (the targets are its f64 outputs), a start with some of
// its signs flipped and its scales perturbed, and Gaussian inputs: the same
// on every rank for a seed.
struct Problem {
  std::uint32_t m, n, r, tokens;
  HostLayer planted, start;
  std::vector<std::vector<float>> x, target;  // per batch: [tokens][n], [tokens][m]
  double target_sq = 0;                       // ‖target‖² of batch 0
};

inline Problem make_problem(std::uint32_t m, std::uint32_t n, std::uint32_t r, std::uint32_t paths,
                            std::uint32_t tokens, int batches, std::uint64_t seed) {
  Problem p{m, n, r, tokens, random_layer(m, n, r, paths, seed), {}, {}, {}, 0};
  p.start = p.planted;
  Rng rng(seed + 1);
  for (HostPath& path : p.start.paths) {
    for (auto* signs : {&path.su, &path.sv}) {
      for (float& s : *signs) s = rng.uniform() < -0.9 ? -s : s;  // 5 % flipped
    }
    for (auto* scales : {&path.h, &path.l, &path.g}) {
      for (float& v : *scales) v *= static_cast<float>(1.0 + 0.1 * rng.uniform());
    }
  }
  for (int b = 0; b < batches; ++b) {
    std::vector<float> x(std::size_t{tokens} * n);
    for (float& v : x) v = static_cast<float>(rng.normal());
    const HostResult y = host_blr(p.planted, x, std::vector<float>(std::size_t{tokens} * m, 0.0f), tokens);
    p.target.emplace_back(y.y.begin(), y.y.end());
    p.x.push_back(std::move(x));
  }
  for (float v : p.target[0]) p.target_sq += double(v) * v;
  return p;
}

// Rows [first, first + count) of a row-major [rows][width] matrix.
inline std::vector<float> rows(const std::vector<float>& a, std::uint32_t width, std::uint32_t first,
                               std::uint32_t count) {
  return {a.begin() + std::ptrdiff_t{first} * width, a.begin() + std::ptrdiff_t{first + count} * width};
}

// A trainer configuration where signs flip within a few steps and the
// scales train too: relative squared error as the loss (the trainer brings
// the sign gradients back to the raw squared error).
inline vkblr::BlrTrainerConfig config(const Problem& p) {
  vkblr::BlrTrainerConfig c;
  c.sign_init.opt = vkblr::SignOpt::adam;
  c.loss_norm = static_cast<float>(p.target_sq);
  c.sign_step.eps = 1e-8f;
  c.sign_step.flip_budget = 0.02f;
  return c;
}


// FNV-1a of a snapshot.
inline std::uint64_t hash(const std::vector<std::uint32_t>& words) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (std::uint32_t w : words) {
    for (int b = 0; b < 4; ++b) {
      h ^= (w >> (8 * b)) & 0xffu;
      h *= 0x100000001b3ull;
    }
  }
  return h;
}

}  // namespace vkt::mpi
