#include "vk.hpp"

#include "vkblr/error.hpp"

namespace vkblr::detail {

const char* vk_result_name(VkResult r) noexcept {
  switch (r) {
#define VKBLR_CASE(x) \
  case x:             \
    return #x;
    VKBLR_CASE(VK_SUCCESS)
    VKBLR_CASE(VK_NOT_READY)
    VKBLR_CASE(VK_TIMEOUT)
    VKBLR_CASE(VK_EVENT_SET)
    VKBLR_CASE(VK_EVENT_RESET)
    VKBLR_CASE(VK_INCOMPLETE)
    VKBLR_CASE(VK_ERROR_OUT_OF_HOST_MEMORY)
    VKBLR_CASE(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    VKBLR_CASE(VK_ERROR_INITIALIZATION_FAILED)
    VKBLR_CASE(VK_ERROR_DEVICE_LOST)
    VKBLR_CASE(VK_ERROR_MEMORY_MAP_FAILED)
    VKBLR_CASE(VK_ERROR_LAYER_NOT_PRESENT)
    VKBLR_CASE(VK_ERROR_EXTENSION_NOT_PRESENT)
    VKBLR_CASE(VK_ERROR_FEATURE_NOT_PRESENT)
    VKBLR_CASE(VK_ERROR_INCOMPATIBLE_DRIVER)
    VKBLR_CASE(VK_ERROR_TOO_MANY_OBJECTS)
    VKBLR_CASE(VK_ERROR_FORMAT_NOT_SUPPORTED)
    VKBLR_CASE(VK_ERROR_FRAGMENTED_POOL)
    VKBLR_CASE(VK_ERROR_UNKNOWN)
    VKBLR_CASE(VK_ERROR_OUT_OF_POOL_MEMORY)
    VKBLR_CASE(VK_ERROR_INVALID_EXTERNAL_HANDLE)
    VKBLR_CASE(VK_ERROR_FRAGMENTATION)
    VKBLR_CASE(VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS)
    VKBLR_CASE(VK_PIPELINE_COMPILE_REQUIRED)
#undef VKBLR_CASE
    default:
      return "VK_RESULT_UNKNOWN";
  }
}

void vk_check(VkResult r, const char* call, const char* file, int line) {
  if (r == VK_SUCCESS) return;
  if (r == VK_ERROR_DEVICE_LOST) {
    fail("Vulkan device lost in {} ({}:{}): a kernel faulted or ran too long; the context is unusable", call, file,
         line);
  }
  fail("{} failed: {} ({}) at {}:{}", call, vk_result_name(r), static_cast<int>(r), file, line);
}

}  // namespace vkblr::detail
