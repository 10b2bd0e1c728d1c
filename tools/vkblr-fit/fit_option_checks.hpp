// fit_option_checks.hpp — the checks of vkblr-fit's numeric options.
//
// vkblr-fit runs check_fit_options right after parsing its command line
// (a failure is bad usage, exit 2), and resolve_fit_defaults runs it again
// for callers of the library. On the command line a count flag given as 0
// (--steps, --batch, ...) is refused by the parser itself: in FitOptions 0
// means "the device's default", which the user did not ask for.
#pragma once

#include "vkblr-fit/fit_options.hpp"

namespace vkblr::fit {

// --gscale: a power of two in [kMinGscale, kMaxGscale]. Gradients are
// staged to f16 times gscale (vkblr/blr.hpp). The loss is normalised by the
// targets' squared norm over a batch, so the staged values shrink as a
// batch's element count (tokens × m) grows, and gscale makes up for it:
// 2^24 is the element count of 4096 tokens of a 4096-row layer. Far above
// what a batch needs the staged values overflow f16 and steps are skipped
// (which stops the run: skip_guard.hpp).
inline constexpr float kMinGscale = 1.0f;
inline constexpr float kMaxGscale = 16777216.0f;  // 2^24

// The largest synthetic W side (--synthetic-m, --synthetic-n).
inline constexpr std::uint32_t kMaxSyntheticSide = 65536;

// Throws vkblr::Error naming the flag and its value for a value no run
// could use: NaN or infinity anywhere, a negative learning rate, beta1 or
// beta2 outside [0, 1), a negative epsilon, tau, hysteresis or relative
// floor, a clamp that is not positive, a flip budget outside [0, 1], a
// --gscale that is not a power of two in the range above, a --bpw that is
// not positive, a synthetic side above kMaxSyntheticSide, --paths,
// --micro-batches or --refit-sweeps outside their ranges, or an
// --activation-decay outside [0, 4].
void check_fit_options(const FitOptions& options);

}  // namespace vkblr::fit
