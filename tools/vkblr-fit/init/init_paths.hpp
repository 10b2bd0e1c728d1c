// init_paths.hpp — the initial paths of a vkblr-fit run: Dual-SVID
// (dual_svid.hpp), the subspace init (subspace_init.hpp), or both with the
// better one kept (vkblr-fit --init; docs/sign-optimizer.md, "Subspace init").
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "vkblr-fit/init/dual_svid.hpp"
#include "vkblr-fit/init/device_matrix.hpp"
#include "vkblr/io/layer_shape.hpp"
#include "vkblr/io/matrix.hpp"
#include "vkblr-fit/io_names.hpp"
#include "vkblr-fit/init/subspace_init.hpp"
#include "vkblr/blr.hpp"

namespace vkblr::fit {

enum class InitMethod {
  dual_svid,  // sign(U·Σ^½), scales from the magnitudes' top singular pairs
  subspace,   // binary vectors in the dominant subspaces, least-squares scales
  best,       // both; keeps the lower output error on the training tokens
};

std::string_view init_method_name(InitMethod method);  // "dual-svid", "subspace", "best"
// Throws vkblr::Error naming the accepted names for anything else.
InitMethod init_method_from_string(std::string_view name);

struct InitResult {
  std::vector<BlrPathInit> paths;
  InitMethod used = InitMethod::dual_svid;  // dual_svid or subspace: whose paths these are
  SubspaceStats subspace;                   // when the subspace init ran
  // `best` only: each candidate's ‖X(Ŵ − W)ᵀ‖/‖XWᵀ‖ on the training tokens
  double dual_svid_error = 0, subspace_error = 0;
  // Dual-SVID's sign magnitudes per path (dual_svid.hpp) when its paths
  // are used; empty for the subspace init
  std::vector<SignMagnitudes> magnitudes;
};

// The initial paths of a layer of `shape` for w [m][n] by `method`:
// Dual-SVID on the device (init/gpu_dual_svid.hpp, from w_device, the same
// W in f32 on the device), the subspace init on the host (from w); x [T][n]
// (the training tokens) is read by `best` only. Seeds: `seed` (Dual-SVID's
// randomized SVD, the subspace init's starts). Deterministic. Throws
// vkblr::Error as the inits do (bad shape, W that does not fit the shape,
// activations that do not fit W).
InitResult initial_paths(Context& ctx, const DeviceMatrix& w_device, const Matrix& w, const Matrix& x,
                         const LayerShape& shape, InitMethod method, std::uint64_t seed);

}  // namespace vkblr::fit
