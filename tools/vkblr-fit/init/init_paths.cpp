#include "vkblr-fit/init/init_paths.hpp"

#include <array>

#include "vkblr-fit/init/dual_svid.hpp"
#include "vkblr-fit/init/gpu_dual_svid.hpp"
#include "vkblr-fit/refit/refit.hpp"
#include "vkblr/error.hpp"

namespace vkblr::fit {

std::string_view init_method_name(InitMethod method) {
  switch (method) {
    case InitMethod::dual_svid: return "dual-svid";
    case InitMethod::subspace: return "subspace";
    case InitMethod::best: return "best";
  }
  return "?";
}

InitMethod init_method_from_string(std::string_view name) {
  for (const InitMethod m : {InitMethod::dual_svid, InitMethod::subspace, InitMethod::best}) {
    if (name == init_method_name(m)) return m;
  }
  fail("init method '{}' is not one of dual-svid, subspace, best", name);
}

InitResult initial_paths(Context& ctx, const DeviceMatrix& w_device, const Matrix& w, const Matrix& x,
                         const LayerShape& shape, InitMethod method, std::uint64_t seed) {
  InitResult out;
  if (method == InitMethod::dual_svid) {
    out.paths = gpu_dual_svid_init(ctx, w_device, shape, {.seed = seed}, &out.magnitudes);
    return out;
  }
  std::vector<BlrPathInit> subspace = subspace_init(w, shape, {.seed = seed}, &out.subspace);
  if (method == InitMethod::subspace) {
    out.paths = std::move(subspace);
    out.used = InitMethod::subspace;
    return out;
  }
  std::vector<SignMagnitudes> magnitudes;
  std::vector<BlrPathInit> dual = gpu_dual_svid_init(ctx, w_device, shape, {.seed = seed}, &magnitudes);
  const std::array<std::vector<BlrPathInit>, 2> candidates{dual, subspace};
  const std::vector<double> errors = training_output_errors(w, x, shape, candidates);
  out.dual_svid_error = errors[0];
  out.subspace_error = errors[1];
  // ties go to Dual-SVID (the established init)
  out.used = errors[1] < errors[0] ? InitMethod::subspace : InitMethod::dual_svid;
  out.paths = out.used == InitMethod::subspace ? std::move(subspace) : std::move(dual);
  if (out.used == InitMethod::dual_svid) out.magnitudes = std::move(magnitudes);
  return out;
}

}  // namespace vkblr::fit
