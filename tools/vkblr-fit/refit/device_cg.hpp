// device_cg.hpp — conjugate gradients on the device for a symmetric
// positive semi-definite f32 system G·x = b (the GPU refit's g step:
// G = (FᵀF) ⊙ C, n up to the layer's input width, never solved on the host).
//
// Jacobi-preconditioned, warm-started from the x given, a fixed number of
// iterations (vkblr/ops/refit.hpp's refit_cg_begin / refit_cg_step, the
// matrix-vector products by refit_matvec). From its start CG
// lowers the quadratic ½xᵀGx − bᵀx at every iteration (in exact
// arithmetic); an iteration that would divide by a non-positive or
// non-finite value changes nothing. Everything stays on the device: the
// iterations are recorded into one batch, no host round trip.
#pragma once

#include <cstdint>

#include "vkblr-fit/init/device_matrix.hpp"
#include "vkblr/buffer.hpp"
#include "vkblr/context.hpp"
#include "vkblr/recorder.hpp"

namespace vkblr::fit {

// The solver's vectors for systems of n unknowns.
struct CgWork {
  DeviceMatrix p, q;  // [n][1]
  Buffer state;       // ops::refit_cg_state_floats(n)

  CgWork() = default;
  CgWork(Context& ctx, std::uint32_t n);
};

// Records `iterations` CG iterations for gram·x = rhs (gram [n][n], rhs and
// x [n][1]; x holds the start and receives the result). Throws
// vkblr::Error for shapes that do not match (naming "conjugate gradients").
void record_cg(Context& ctx, Recorder& rec, const DeviceMatrix& gram, const DeviceMatrix& rhs, const DeviceMatrix& x,
               CgWork& work, std::uint32_t iterations);

}  // namespace vkblr::fit
