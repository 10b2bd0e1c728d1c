// kernel.hpp — a compute pipeline made from one embedded SPIR-V module and a
// set of specialization constants, with the interface the module declares.
//
// Kernels are created on first use and cached by the context for its
// lifetime (ContextImpl::kernel); a Dispatch points at one.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "spirv_reflect.hpp"
#include "vkblr/kernel_stats.hpp"
#include "vk.hpp"
#include "vkblr_generated/kernel_ids.hpp"

namespace vkblr {
struct Dispatch;
}

namespace vkblr::detail {

// One specialization constant: the shader's constant_id and its 32-bit
// value (floats as their bits).
struct SpecConstant {
  std::uint32_t id;
  std::uint32_t value;
};

// Pipeline options beyond the specialization constants.
struct KernelOptions {
  // Required subgroup size (0: the driver's choice). Cooperative-matrix
  // kernels ask for the device's subgroup size and full subgroups.
  std::uint32_t subgroup_size = 0;
  bool full_subgroups = false;
  // Create the pipeline with VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR
  // (the context sets this when it enabled VK_KHR_pipeline_executable_properties).
  bool capture_statistics = false;
};

class Kernel {
 public:
  // Throws vkblr::Error when a constant's id is not declared by the shader.
  Kernel(VkDevice device, VkPipelineCache cache, KernelId id, std::span<const SpecConstant> spec,
         const KernelOptions& options);
  ~Kernel();
  Kernel(const Kernel&) = delete;
  Kernel& operator=(const Kernel&) = delete;

  KernelId id() const noexcept { return id_; }
  const std::string& name() const noexcept { return name_; }
  VkPipeline pipeline() const noexcept { return pipeline_; }
  VkPipelineLayout layout() const noexcept { return layout_; }
  const ReflectedModule& interface() const noexcept { return iface_; }

  // The driver's compiler statistics, per executable; throws vkblr::Error
  // when the pipeline was created without capture_statistics.
  std::vector<KernelExecutableStatistics> statistics() const;

  // Throws vkblr::Error when `d` does not fit this kernel: push-constant size,
  // a slot the shader lacks, a write-capable slot declared read-only.
  void check(const Dispatch& d) const;

 private:
  void destroy() noexcept;

  VkDevice device_;
  KernelId id_;
  std::string name_;
  ReflectedModule iface_;
  VkDescriptorSetLayout set_layout_ = VK_NULL_HANDLE;
  VkPipelineLayout layout_ = VK_NULL_HANDLE;
  VkPipeline pipeline_ = VK_NULL_HANDLE;
  bool statistics_captured_ = false;
};

}  // namespace vkblr::detail
