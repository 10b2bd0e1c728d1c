// synthetic.hpp — LLM-like stand-ins for a weight and its calibration
// activations, so vkblr-fit runs without input files; and the held-out
// split of activations.
//
// Every generator is deterministic for its seed (vkblr::fit::Rng).
#pragma once

#include <cstdint>

#include <vector>

#include "vkblr/io/matrix.hpp"
#include "vkblr-fit/io_names.hpp"
#include "vkblr-fit/random.hpp"

namespace vkblr::fit {

// W = U·diag(σ)·Vᵀ with U [m][k], V [n][k] random orthonormal (k = min(m, n))
// and σ_i ∝ (i+1)^-spectrum_decay (trained projection matrices show such a
// power-law spectrum) or σ_i = exp(−i/spectrum_scale) + spectrum_floor
// (exponential); then `heavy_columns` distinct random input columns
// multiplied by `heavy_column_scale` (the outlier input features of LLM
// layers); then all scaled so the root-mean-square entry is `rms`.
enum class WeightSpectrum { power_law, exponential };
struct SyntheticWeightSpec {
  std::uint32_t m = 0, n = 0;
  WeightSpectrum spectrum = WeightSpectrum::power_law;
  double spectrum_decay = 0.6;   // power_law
  double spectrum_scale = 64;    // exponential
  double spectrum_floor = 0.05;  // exponential
  std::uint32_t heavy_columns = 4;
  double heavy_column_scale = 4.0;
  double rms = 0.02;
  std::uint64_t seed = 1;
};
// Throws vkblr::Error for an empty shape, heavy_columns > n or a
// non-positive scale.
Matrix synthetic_weight(const SyntheticWeightSpec& spec);


// X [tokens][n]: Gaussian tokens whose covariance has eigenvalues
// λ_i ∝ (i+1)^-spectrum_decay in a random orthonormal basis, normalised to
// mean 1 (LLM activations are strongly correlated across channels: their
// covariance spectrum decays like a power law; 0 gives independent channels
// of variance 1); then `outlier_channels` distinct random channels scaled by
// `outlier_scale` (the few high-variance channels of LLM activations).
// vkblr-fit uses spectrum_decay = 1 by default (FitOptions::activation_decay):
// the output error then weighs W's directions as LLM inputs do, a few
// dozen effective dimensions instead of all n.
struct SyntheticActivationSpec {
  std::uint32_t tokens = 0, n = 0;
  double spectrum_decay = 0.0;
  std::uint32_t outlier_channels = 4;
  double outlier_scale = 10.0;
  std::uint64_t seed = 2;
};
// Throws vkblr::Error for an empty shape, outlier_channels > n or a
// negative decay.
Matrix synthetic_activations(const SyntheticActivationSpec& spec);

// Checks a spec as the generators do (vkblr::Error naming the value), and
// the spectra they draw: a weight's singular values σ [min(m, n)] before
// the heavy columns and the scaling; the activations' covariance
// eigenvalues λ [n] (mean 1; all 1 without decay).
void check_weight_spec(const SyntheticWeightSpec& spec);
std::vector<double> spectrum_of(const SyntheticWeightSpec& spec);
void check_activation_spec(const SyntheticActivationSpec& spec);
std::vector<double> covariance_spectrum_of(const SyntheticActivationSpec& spec);

// `count` distinct indices in [0, n), by a partial Fisher–Yates shuffle.
std::vector<std::size_t> distinct_indices(std::size_t n, std::size_t count, Rng& rng);

// Calibration tokens split into training and held-out rows: the last
// `held_out_tokens` rows are held out (a contiguous tail, so neighbouring
// tokens of a real sequence do not straddle the split).
struct TokenSplit {
  Matrix train, held_out;
};
// Throws vkblr::Error unless 1 <= held_out_tokens < x.rows.
TokenSplit split_tokens(const Matrix& x, std::size_t held_out_tokens);

}  // namespace vkblr::fit
