#include "kernel.hpp"

#include <algorithm>
#include <format>

#include "vkblr/dispatch.hpp"
#include "vkblr/error.hpp"

namespace vkblr::detail {

Kernel::Kernel(VkDevice device, VkPipelineCache cache, KernelId id, std::span<const SpecConstant> spec,
               const KernelOptions& options)
    : device_(device), id_(id) {
  const EmbeddedModule& mod = kEmbeddedModules[static_cast<std::size_t>(id)];
  name_ = mod.name;
  iface_ = reflect_spirv({mod.words, mod.word_count}, name_);
  for (const SpecConstant& c : spec) {
    require(std::binary_search(iface_.spec_ids.begin(), iface_.spec_ids.end(), c.id),
            "kernel {}: specialization constant {} given but the shader declares none with that id", name_, c.id);
  }

  std::vector<VkDescriptorSetLayoutBinding> slots;
  for (const ReflectedBinding& b : iface_.bindings) {
    slots.push_back({b.slot, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr});
  }
  VkDescriptorSetLayoutCreateInfo set_info{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  set_info.flags = VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR;
  set_info.bindingCount = static_cast<std::uint32_t>(slots.size());
  set_info.pBindings = slots.data();

  VkShaderModule module = VK_NULL_HANDLE;
  try {
    VKBLR_VK(vkCreateDescriptorSetLayout(device_, &set_info, nullptr, &set_layout_));
    VkPushConstantRange push{VK_SHADER_STAGE_COMPUTE_BIT, 0, iface_.push_size};
    VkPipelineLayoutCreateInfo layout_info{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    layout_info.setLayoutCount = 1;
    layout_info.pSetLayouts = &set_layout_;
    layout_info.pushConstantRangeCount = iface_.push_size > 0 ? 1 : 0;
    layout_info.pPushConstantRanges = &push;
    VKBLR_VK(vkCreatePipelineLayout(device_, &layout_info, nullptr, &layout_));

    VkShaderModuleCreateInfo module_info{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
    module_info.codeSize = mod.word_count * sizeof(std::uint32_t);
    module_info.pCode = mod.words;
    VKBLR_VK(vkCreateShaderModule(device_, &module_info, nullptr, &module));

    std::vector<SpecConstant> sorted(spec.begin(), spec.end());
    std::sort(sorted.begin(), sorted.end(), [](const SpecConstant& a, const SpecConstant& b) { return a.id < b.id; });
    std::vector<VkSpecializationMapEntry> entries;
    std::vector<std::uint32_t> values;
    for (const SpecConstant& c : sorted) {
      entries.push_back({c.id, static_cast<std::uint32_t>(values.size() * sizeof(std::uint32_t)), sizeof(std::uint32_t)});
      values.push_back(c.value);
    }
    VkSpecializationInfo spec_info{static_cast<std::uint32_t>(entries.size()), entries.data(),
                                   values.size() * sizeof(std::uint32_t), values.data()};
    VkPipelineShaderStageRequiredSubgroupSizeCreateInfo subgroup{
        VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO};
    subgroup.requiredSubgroupSize = options.subgroup_size;

    VkComputePipelineCreateInfo info{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
    info.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
    info.stage.pNext = options.subgroup_size ? &subgroup : nullptr;
    info.stage.flags = options.full_subgroups ? VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT : 0;
    info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    info.stage.module = module;
    info.stage.pName = "main";
    info.stage.pSpecializationInfo = entries.empty() ? nullptr : &spec_info;
    info.layout = layout_;
    if (options.capture_statistics) info.flags |= VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR;
    statistics_captured_ = options.capture_statistics;
    VKBLR_VK(vkCreateComputePipelines(device_, cache, 1, &info, nullptr, &pipeline_));
  } catch (...) {
    if (module) vkDestroyShaderModule(device_, module, nullptr);
    destroy();
    throw;
  }
  vkDestroyShaderModule(device_, module, nullptr);
}

Kernel::~Kernel() { destroy(); }

void Kernel::destroy() noexcept {
  if (pipeline_) vkDestroyPipeline(device_, pipeline_, nullptr);
  if (layout_) vkDestroyPipelineLayout(device_, layout_, nullptr);
  if (set_layout_) vkDestroyDescriptorSetLayout(device_, set_layout_, nullptr);
  pipeline_ = VK_NULL_HANDLE;
  layout_ = VK_NULL_HANDLE;
  set_layout_ = VK_NULL_HANDLE;
}

namespace {

std::string statistic_text(const VkPipelineExecutableStatisticKHR& s) {
  switch (s.format) {
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR:
      return s.value.b32 ? "true" : "false";
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR:
      return std::format("{}", s.value.i64);
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR:
      return std::format("{}", s.value.u64);
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_FLOAT64_KHR:
      return std::format("{}", s.value.f64);
    default:
      return std::format("(format {})", static_cast<int>(s.format));
  }
}

}  // namespace

std::vector<KernelExecutableStatistics> Kernel::statistics() const {
  require(statistics_captured_,
          "kernel_statistics: kernel {} was built without statistics (set ContextOptions::kernel_statistics or "
          "VKBLR_KERNEL_STATS=1; Caps::kernel_statistics says whether the device keeps them)",
          name_);
  VkPipelineInfoKHR pipeline{VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR};
  pipeline.pipeline = pipeline_;
  std::uint32_t n = 0;
  VKBLR_VK(vkGetPipelineExecutablePropertiesKHR(device_, &pipeline, &n, nullptr));
  std::vector<VkPipelineExecutablePropertiesKHR> props(n, {VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_PROPERTIES_KHR});
  VKBLR_VK(vkGetPipelineExecutablePropertiesKHR(device_, &pipeline, &n, props.data()));
  std::vector<KernelExecutableStatistics> out;
  for (std::uint32_t e = 0; e < n; ++e) {
    VkPipelineExecutableInfoKHR exe{VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR};
    exe.pipeline = pipeline_;
    exe.executableIndex = e;
    std::uint32_t count = 0;
    VKBLR_VK(vkGetPipelineExecutableStatisticsKHR(device_, &exe, &count, nullptr));
    std::vector<VkPipelineExecutableStatisticKHR> stats(count, {VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR});
    VKBLR_VK(vkGetPipelineExecutableStatisticsKHR(device_, &exe, &count, stats.data()));
    KernelExecutableStatistics k{name_, props[e].name, {}};
    for (std::uint32_t i = 0; i < count; ++i) {
      k.values.push_back({stats[i].name, stats[i].description, statistic_text(stats[i])});
    }
    out.push_back(std::move(k));
  }
  return out;
}

void Kernel::check(const Dispatch& d) const {
  require(d.push_size == iface_.push_size, "{}: push constants of {} bytes, kernel {} declares {}", d.name,
          d.push_size, name_, iface_.push_size);
  for (std::uint32_t i = 0; i < d.binding_count; ++i) {
    const Binding& b = d.bindings[i];
    const auto it = std::find_if(iface_.bindings.begin(), iface_.bindings.end(),
                                 [&](const ReflectedBinding& r) { return r.slot == b.slot; });
    require(it != iface_.bindings.end(), "{}: binding {} does not exist in kernel {}", d.name, b.slot, name_);
    require(!it->writable || writes(b.access),
            "{}: binding {} declared read-only but kernel {} may write it (the barrier would be missed)", d.name,
            b.slot, name_);
    require(it->writable || !writes(b.access), "{}: binding {} declared written but kernel {} only reads it", d.name,
            b.slot, name_);
    for (std::uint32_t j = 0; j < i; ++j) {
      require(d.bindings[j].slot != b.slot, "{}: binding {} bound twice", d.name, b.slot);
    }
  }
}

}  // namespace vkblr::detail

namespace vkblr {

std::vector<KernelExecutableStatistics> kernel_statistics(const Dispatch& d) {
  require(d.kernel != nullptr, "kernel_statistics: dispatch '{}' has no kernel", d.name);
  return d.kernel->statistics();
}

}  // namespace vkblr
