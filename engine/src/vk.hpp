// vk.hpp — Vulkan through volk (no loader link; function pointers loaded at
// run time) and VMA, for the library's own sources. Every VkResult goes
// through VKBLR_VK, which throws vkblr::Error with the call, the result name,
// file and line.
//
// volk's function pointers are process-wide and every instance made
// (a Context, list_devices) loads them again with volkLoadInstance. Core and
// device-level commands are the loader's trampolines, the same for every
// instance, so any context may call them. A command of an instance
// extension is null for an instance that did not enable the extension: a
// context calls those through pointers it fetched from its own instance
// (ContextImpl::destroy_messenger), never through volk's.
#pragma once

#include <volk.h>
// VMA takes its Vulkan functions from volk at allocator creation.
#ifndef VMA_STATIC_VULKAN_FUNCTIONS
#define VMA_STATIC_VULKAN_FUNCTIONS 0
#endif
#ifndef VMA_DYNAMIC_VULKAN_FUNCTIONS
#define VMA_DYNAMIC_VULKAN_FUNCTIONS 1
#endif
#include <vk_mem_alloc.h>

#include <cstdint>
#include <string>

namespace vkblr::detail {

const char* vk_result_name(VkResult r) noexcept;

// Throws vkblr::Error for anything but VK_SUCCESS (VK_ERROR_DEVICE_LOST says
// so plainly: the device is unusable and the process should restart it).
void vk_check(VkResult r, const char* call, const char* file, int line);

template <class T>
T from_handle(std::uint64_t h) noexcept {
  return reinterpret_cast<T>(static_cast<std::uintptr_t>(h));
}
template <class T>
std::uint64_t to_handle(T h) noexcept {
  return static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(h));
}

}  // namespace vkblr::detail

#define VKBLR_VK(call) ::vkblr::detail::vk_check((call), #call, __FILE__, __LINE__)
