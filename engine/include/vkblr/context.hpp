// vkblr/context.hpp — the Vulkan instance, device, allocator and kernel cache
// that everything else of vkblr runs on.
//
// A Context picks one physical device (ContextOptions::device, else the
// environment variable VKBLR_DEVICE — an index or a substring of the name —
// else the first discrete GPU, then integrated, virtual, CPU), enables what
// the kernels need (16-bit storage, shaderFloat16, subgroup size control
// with full subgroups, maintenance4, the Vulkan memory model, push
// descriptors, cooperative matrices when the device advertises them) and
// creates a VMA allocator and a pipeline cache persisted on disk. The GEMM
// policy (ContextOptions::gemm_policy, else the VKBLR_GEMM_* and VKBLR_MM_*
// environment variables) is fixed when the context is created.
//
// Threading: a Context and everything made from it are used by one thread
// at a time. Lifetime: buffers, graphs and recorders must not outlive the
// context that made them.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vkblr/buffer.hpp"
#include "vkblr/gemm_policy.hpp"

namespace vkblr {

namespace detail {
class ContextImpl;
struct ContextAccess;  // the engine's own way in (engine/src/context_impl.hpp)
}
class Profiler;

// One cooperative-matrix shape the device supports: A (m×k) · B (k×n) + C
// (m×n), with component types named as in the spec ("f16", "f32", "bf16",
// "i8", ...), subgroup scope only.
struct CoopMatShape {
  std::uint32_t m = 0, n = 0, k = 0;
  std::string a_type, b_type, c_type, result_type;
  bool saturating = false;
};

// What vkblr knows about its device; filled once at context creation.
struct Caps {
  std::string device_name;
  std::string device_type;  // "discrete", "integrated", "virtual", "cpu", "other"
  std::string driver_name;
  std::string driver_info;
  std::uint32_t vendor_id = 0, device_id = 0;
  std::uint32_t api_version = 0;     // VK_MAKE_API_VERSION encoding
  std::uint32_t driver_version = 0;  // vendor encoding
  std::string api_version_string;    // "1.4.312"
  std::uint32_t subgroup_size = 0;   // default subgroup size of compute shaders
  std::uint32_t min_subgroup_size = 0, max_subgroup_size = 0;
  bool subgroup_size_control = false;  // requiredSubgroupSize usable in compute
  std::uint32_t max_shared_memory = 0;  // bytes per workgroup
  std::uint32_t max_workgroup_invocations = 0;
  std::array<std::uint32_t, 3> max_workgroup_count{};
  std::uint32_t max_push_constants = 0;
  std::uint64_t max_storage_buffer_range = 0;
  std::uint64_t min_storage_buffer_offset_alignment = 0;
  std::uint64_t device_local_bytes = 0;
  bool coopmat = false;   // VK_KHR_cooperative_matrix enabled
  // VK_NV_cooperative_matrix2 enabled with what the workgroup-scope GEMM
  // needs (workgroup scope, flexible dimensions, tensor addressing, block
  // loads; bufferDeviceAddress for the decode callbacks), and its limits.
  bool coopmat2 = false;
  std::uint32_t coopmat2_max_workgroup_size = 0;     // invocations
  std::uint32_t coopmat2_max_dimension = 0;          // of one matrix
  std::uint32_t coopmat2_reserved_shared_memory = 0;  // bytes the driver keeps
  // f16 × f16 -> f32 workgroup-scope granularities (M, N, K), one entry per
  // workgroup size the device allows.
  struct FlexibleShape {
    std::uint32_t m = 0, n = 0, k = 0, invocations = 0;
  };
  std::vector<FlexibleShape> coopmat2_f16_shapes;
  // VK_NV_cooperative_matrix2's operations on subgroup-scope matrices
  // enabled: conversions (accumulator -> A), row reductions and per-element
  // functions (the coopmat2 attention kernels). Independent of `coopmat2`.
  bool coopmat2_subgroup_ops = false;
  std::vector<CoopMatShape> coopmat_shapes;
  // Kernels keep their compiler statistics (ContextOptions::kernel_statistics
  // asked for them and the device has VK_KHR_pipeline_executable_properties);
  // from list_devices(): the device could.
  bool kernel_statistics = false;
  // VK_EXT_external_memory_host enabled (Context::import_host_memory), for
  // pointers and sizes that are multiples of host_import_alignment bytes;
  // from list_devices(): the device could.
  bool host_memory_import = false;
  std::uint64_t host_import_alignment = 0;
  bool timestamps = false;          // compute queue writes timestamps
  double timestamp_period_ns = 0;   // nanoseconds per timestamp tick

  // The f16 × f16 -> f32 fragment the GEMM uses (largest square shape, else
  // the largest by m·n·k), or nothing without cooperative matrices.
  std::optional<CoopMatShape> f16_fragment() const;
};

struct ContextOptions {
  // Khronos validation layer with a debug messenger; every message is kept
  // (validation_messages()). Tests turn it on and fail on any message.
  bool validation = false;
  // Also enable synchronization validation (needs `validation`).
  bool synchronization_validation = false;
  // Device choice; empty = VKBLR_DEVICE, then the best device.
  std::string device;
  // GPU timestamps per dispatch (also VKBLR_PROFILE=1).
  bool profile = false;
  // Pipeline cache file directory; empty = $VKBLR_PIPELINE_CACHE_DIR, else
  // $XDG_CACHE_HOME/vkblr (or ~/.cache/vkblr); "-" = no file.
  // VKBLR_PIPELINE_CACHE=0 also disables it.
  std::string pipeline_cache_dir;
  // Keep the driver's compiler statistics of every kernel (registers,
  // spills, ... as the driver names them; kernel_statistics() in
  // vkblr/kernel_stats.hpp) through VK_KHR_pipeline_executable_properties,
  // where the device has it (Caps::kernel_statistics says). Also
  // VKBLR_KERNEL_STATS=1. Off by default: drivers may compile slower.
  bool kernel_statistics = false;
  // The GEMM kernel, tile and split-K switches of this context
  // (vkblr/gemm_policy.hpp). Set: this policy, whole, whatever the
  // environment says. Unset: gemm_policy_from_env(), read once at creation.
  // Context creation throws Error for a bad value of either.
  std::optional<GemmPolicy> gemm_policy;
};

class Context {
 public:
  explicit Context(const ContextOptions& options = {});
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  Context(Context&&) = delete;
  Context& operator=(Context&&) = delete;

  const Caps& caps() const noexcept;

  // A device-local storage buffer of `bytes` (> 0); contents undefined.
  Buffer buffer(std::uint64_t bytes, std::string_view label = {});
  // A host-visible, persistently mapped storage buffer (device-local where
  // the device offers such memory): per-replay scalars, small readbacks.
  Buffer host_buffer(std::uint64_t bytes, std::string_view label = {});
  // A host-visible storage buffer over `bytes` of the caller's memory at
  // `pointer` (VK_EXT_external_memory_host): mapped() is `pointer`, and
  // device writes land there (e.g. memory MPI ranks of one host share).
  // The caller keeps that memory allocated and mapped until the buffer is
  // gone. Host-coherent: invalidate/flush are no-ops. Throws Error without
  // Caps::host_memory_import, for a pointer or size that is not a multiple
  // of Caps::host_import_alignment, or when the driver takes no such memory
  // as host-coherent.
  Buffer import_host_memory(void* pointer, std::uint64_t bytes, std::string_view label = {});

  template <class T>
  Buffer upload(std::span<const T> values, std::string_view label = {}) {
    Buffer b = buffer(std::max<std::uint64_t>(values.size_bytes(), 4), label);
    if (!values.empty()) b.write(values.data(), values.size_bytes());
    return b;
  }
  template <class T>
  Buffer upload(const std::vector<T>& values, std::string_view label = {}) {
    return upload(std::span<const T>(values), label);
  }

  // Validation messages (warnings and errors) seen since creation or the
  // last clear; empty when validation is off.
  bool validation_enabled() const noexcept;
  std::vector<std::string> validation_messages() const;
  // The messages set aside instead: only WARNING-vkGetDeviceProcAddr-device
  // raised while vkCreateDevice runs. vkblr never calls vkGetDeviceProcAddr
  // for an instance-level function; the loader or a driver's layer does so
  // inside vkCreateDevice on some systems (NVIDIA 580: for
  // vkGetPhysicalDeviceVideoEncodeQualityLevelPropertiesKHR). Kept so they
  // can be shown (vkblr-info --check), never counted as vkblr's.
  std::vector<std::string> set_aside_validation_messages() const;
  std::size_t validation_message_count() const;
  void clear_validation_messages();

  Profiler& profiler() noexcept;

  // The GEMM policy in effect (ContextOptions::gemm_policy); fixed for the
  // context's life.
  const GemmPolicy& gemm_policy() const noexcept;

  // The pipeline cache file this context read and writes when destroyed
  // (empty: none, ContextOptions::pipeline_cache_dir). The file only saves
  // compile time: on a problem with it (not a regular file, unreadable, over
  // 256 MiB, the header of another device or driver, a failed write) the
  // context prints one warning on stderr naming the file and the reason,
  // and runs without it. pipeline_cache_warning() is that warning (without
  // "vkblr: warning: "), empty when there was none so far.
  const std::string& pipeline_cache_file() const noexcept;
  const std::string& pipeline_cache_warning() const noexcept;

  // Waits until the device is idle (e.g. before reading a profile).
  void wait_idle();

 private:
  friend struct detail::ContextAccess;
  std::unique_ptr<detail::ContextImpl> impl_;
};

// Every physical device the loader reports, with its capabilities (no
// logical device is created). For vkblr-info.
std::vector<Caps> list_devices();

// The vkblr version ("0.1.0") and the glslang version the embedded SPIR-V
// was compiled with.
std::string_view version() noexcept;
std::string_view shader_compiler() noexcept;

}  // namespace vkblr
