// vkblr/kernel_stats.hpp — what the driver's compiler made of a kernel.
//
// For tuning: register counts decide how many workgroups share a
// multiprocessor, spills show a tile that does not fit. The statistics are
// the driver's own (VK_KHR_pipeline_executable_properties): their names,
// units and number differ between drivers (NVIDIA and lavapipe name a
// register count, for instance) and vkblr passes them on as they come.
#pragma once

#include <string>
#include <vector>

#include "vkblr/dispatch.hpp"

namespace vkblr {

// One statistic: the driver's name and description, and its value as text
// (integers in decimal, booleans "true"/"false", floats as printed by
// std::format).
struct KernelStatistic {
  std::string name;
  std::string description;
  std::string value;
};

// The statistics of one executable of a pipeline (a compute pipeline has
// one; `executable` is the driver's name for it, e.g. "compute shader").
struct KernelExecutableStatistics {
  std::string kernel;      // the embedded module's name, e.g. "gemm_coopmat"
  std::string executable;
  std::vector<KernelStatistic> values;
};

// The compiler statistics of the kernel that `d` runs. Throws vkblr::Error
// when `d` has no kernel, or when its context does not keep statistics
// (ContextOptions::kernel_statistics off, or the device lacks
// VK_KHR_pipeline_executable_properties: Caps::kernel_statistics is false).
std::vector<KernelExecutableStatistics> kernel_statistics(const Dispatch& d);

}  // namespace vkblr
