// device_data.hpp — the data of a vkblr-fit run on the device, uploaded
// once: W as f32 (the init's and refit's f32 GEMMs) and f16 (the targets'
// GEMM operand), the calibration tokens X as f16 (training tokens, then the
// held-out ones). Read from files through memory maps in chunks (converted
// by every core, staged to the device chunk by chunk: the host never holds
// a copy of a whole input) or generated on the device (gpu_synthetic.hpp;
// X a chunk of tokens at a time, so neither holds an f32 copy of X: with X
// in host memory, the device holds none of it).
//
// Where X lives: device memory when it fits; otherwise host memory the
// device reads over the bus (a host-visible buffer: every batch is read
// from there at each step, slower but no other difference — the same
// bits). DataSpec::x_memory chooses; `automatic` takes device memory when
// X's f16 tokens take at most half of the device's local memory.
#pragma once

#include <cstdint>
#include <string>

#include "vkblr-fit/init/device_matrix.hpp"
#include "vkblr/buffer.hpp"
#include "vkblr/context.hpp"

namespace vkblr::fit {

// Where W and X come from.
struct DataSpec {
  std::string weight_path, weight_tensor;            // empty path: synthetic
  std::string activations_path, activations_tensor;  // empty path: synthetic
  std::uint32_t train_tokens = 0, held_out_tokens = 0;
  // synthetic data (synthetic.hpp's specs; m, n and the token count are
  // filled from the fields here)
  enum class Family { standard, exponential, planted } family = Family::standard;
  std::uint32_t synthetic_m = 0, synthetic_n = 0;
  std::uint32_t family_rank = 0;  // exponential: σ_i = exp(−i/(rank/6)) + 0.05; planted: the planted rank
  double activation_decay = 1.0;
  std::uint64_t seed = 1;
  enum class XMemory { automatic, device, host } x_memory = XMemory::automatic;
  // Only what a held-out error needs (the rank curves of --model-bpw): W
  // f32, and of a file's X only the held-out rows [train_tokens,
  // train_tokens + held_out_tokens) (DeviceData::train_tokens is then 0,
  // the rows before them neither read, checked nor hashed); no f16 W.
  // Synthetic X is made whole, as for a fit.
  bool held_out_only = false;
};

struct DeviceData {
  std::uint32_t m = 0, n = 0;
  std::uint32_t train_tokens = 0, held_out_tokens = 0;
  DeviceMatrix w;  // f32 [m][n]
  Buffer w16;      // f16 [m][n] (none with DataSpec::held_out_only)
  Buffer x16;      // f16 [train_tokens + held_out_tokens][n]
  bool x_in_host_memory = false;  // x16 is host memory the device reads (DataSpec::x_memory)
  std::string weight_source, activation_source;
  // XXH3-64 of the stored bytes of W and of the rows of X used (files), or
  // of the source text, which names every parameter (synthetic data)
  std::uint64_t weight_hash = 0, activation_hash = 0;
  double weight_max_abs = 0, activation_max_abs = 0;  // of the values as read (f32)

  // A view of tokens [first, first + count) of x16 (row offsets are
  // multiples of the storage alignment: n is a multiple of 16).
  Buffer tokens(std::uint64_t first, std::uint64_t count) const;
};

// Reads or generates W and X. Throws vkblr::Error for a missing or bad
// file (the readers' errors), NaN/Inf values (naming the file and the
// element), values f16 cannot carry, a W/X shape mismatch, too few tokens.
DeviceData load_device_data(Context& ctx, const DataSpec& spec);

}  // namespace vkblr::fit
