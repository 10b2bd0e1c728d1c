#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <format>
#include <iterator>

#include "context_impl.hpp"
#include "pipeline_cache_file.hpp"
#include "vkblr/context.hpp"
#include "vkblr/error.hpp"

namespace vkblr {
namespace detail {
namespace {

// One extension's properties struct (sType `type`), read through
// vkGetPhysicalDeviceProperties2.
template <class Properties>
Properties extension_properties(VkPhysicalDevice physical, VkStructureType type) {
  Properties props{};
  props.sType = type;
  VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  p2.pNext = &props;
  vkGetPhysicalDeviceProperties2(physical, &p2);
  return props;
}

constexpr const char* kValidationLayer = "VK_LAYER_KHRONOS_validation";

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

void load_vulkan() {
  static const VkResult loaded = volkInitialize();
  if (loaded != VK_SUCCESS) {
    fail("no Vulkan loader found (libvulkan.so.1): install the Vulkan loader (Debian: libvulkan1) or put it on "
         "LD_LIBRARY_PATH");
  }
  require(volkGetInstanceVersion() >= VK_API_VERSION_1_3, "the Vulkan loader supports only {}.{}; vkblr needs 1.3",
          VK_API_VERSION_MAJOR(volkGetInstanceVersion()), VK_API_VERSION_MINOR(volkGetInstanceVersion()));
}

bool has_layer(const char* name) {
  std::uint32_t n = 0;
  VKBLR_VK(vkEnumerateInstanceLayerProperties(&n, nullptr));
  std::vector<VkLayerProperties> layers(n);
  VKBLR_VK(vkEnumerateInstanceLayerProperties(&n, layers.data()));
  return std::any_of(layers.begin(), layers.end(),
                     [&](const VkLayerProperties& l) { return std::strcmp(l.layerName, name) == 0; });
}

bool has_instance_extension(const char* layer, const char* name) {
  std::uint32_t n = 0;
  VKBLR_VK(vkEnumerateInstanceExtensionProperties(layer, &n, nullptr));
  std::vector<VkExtensionProperties> exts(n);
  VKBLR_VK(vkEnumerateInstanceExtensionProperties(layer, &n, exts.data()));
  return std::any_of(exts.begin(), exts.end(),
                     [&](const VkExtensionProperties& e) { return std::strcmp(e.extensionName, name) == 0; });
}

VKAPI_ATTR VkBool32 VKAPI_CALL on_debug_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                VkDebugUtilsMessageTypeFlagsEXT,
                                                const VkDebugUtilsMessengerCallbackDataEXT* data, void* user) {
  const char* level = severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT ? "error" : "warning";
  auto* ctx = static_cast<ContextImpl*>(user);
  std::string text = std::format("validation {}: {}", level, data && data->pMessage ? data->pMessage : "(no text)");
  // set aside: a lookup made by the loader or a driver layer inside
  // vkCreateDevice, not by vkblr (Context::set_aside_validation_messages)
  const bool foreign_lookup = ctx->creating_device && data && data->pMessageIdName &&
                              std::strcmp(data->pMessageIdName, "WARNING-vkGetDeviceProcAddr-device") == 0;
  if (foreign_lookup) {
    ctx->set_aside_validation_message(std::move(text));
  } else {
    ctx->add_validation_message(std::move(text));
  }
  return VK_FALSE;
}

VkDebugUtilsMessengerCreateInfoEXT messenger_info(ContextImpl* ctx) {
  VkDebugUtilsMessengerCreateInfoEXT info{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
  info.messageSeverity =
      VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  info.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                     VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
  info.pfnUserCallback = on_debug_message;
  info.pUserData = ctx;
  return info;
}

std::string version_string(std::uint32_t v) {
  return std::format("{}.{}.{}", VK_API_VERSION_MAJOR(v), VK_API_VERSION_MINOR(v), VK_API_VERSION_PATCH(v));
}

const char* component_name(VkComponentTypeKHR t) {
  switch (t) {
    case VK_COMPONENT_TYPE_FLOAT16_KHR:
      return "f16";
    case VK_COMPONENT_TYPE_FLOAT32_KHR:
      return "f32";
    case VK_COMPONENT_TYPE_FLOAT64_KHR:
      return "f64";
    case VK_COMPONENT_TYPE_SINT8_KHR:
      return "i8";
    case VK_COMPONENT_TYPE_SINT16_KHR:
      return "i16";
    case VK_COMPONENT_TYPE_SINT32_KHR:
      return "i32";
    case VK_COMPONENT_TYPE_SINT64_KHR:
      return "i64";
    case VK_COMPONENT_TYPE_UINT8_KHR:
      return "u8";
    case VK_COMPONENT_TYPE_UINT16_KHR:
      return "u16";
    case VK_COMPONENT_TYPE_UINT32_KHR:
      return "u32";
    case VK_COMPONENT_TYPE_UINT64_KHR:
      return "u64";
    default:
      // bf16 and the float8 types came with later extensions
      if (static_cast<int>(t) == 1000141000) return "bf16";
      return "other";
  }
}

const char* device_type_name(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
      return "discrete";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
      return "integrated";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
      return "virtual";
    case VK_PHYSICAL_DEVICE_TYPE_CPU:
      return "cpu";
    default:
      return "other";
  }
}

int device_rank(const std::string& type) {
  if (type == "discrete") return 0;
  if (type == "integrated") return 1;
  if (type == "virtual") return 2;
  if (type == "cpu") return 3;
  return 4;
}

std::vector<VkPhysicalDevice> physical_devices(VkInstance instance) {
  std::uint32_t n = 0;
  VKBLR_VK(vkEnumeratePhysicalDevices(instance, &n, nullptr));
  std::vector<VkPhysicalDevice> out(n);
  VKBLR_VK(vkEnumeratePhysicalDevices(instance, &n, out.data()));
  return out;
}

std::uint32_t compute_queue_family(VkPhysicalDevice physical) {
  std::uint32_t n = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(physical, &n, nullptr);
  std::vector<VkQueueFamilyProperties> families(n);
  vkGetPhysicalDeviceQueueFamilyProperties(physical, &n, families.data());
  // prefer a family with graphics too (the "universal" queue: fastest
  // timestamps and no cross-family ownership), else any with compute
  for (int pass = 0; pass < 2; ++pass) {
    for (std::uint32_t i = 0; i < n; ++i) {
      const VkQueueFlags f = families[i].queueFlags;
      if ((f & VK_QUEUE_COMPUTE_BIT) && (pass == 1 || (f & VK_QUEUE_GRAPHICS_BIT))) return i;
    }
  }
  fail("Vulkan device has no compute queue");
}

}  // namespace

bool has_device_extension(VkPhysicalDevice physical, const char* name) {
  std::uint32_t n = 0;
  VKBLR_VK(vkEnumerateDeviceExtensionProperties(physical, nullptr, &n, nullptr));
  std::vector<VkExtensionProperties> exts(n);
  VKBLR_VK(vkEnumerateDeviceExtensionProperties(physical, nullptr, &n, exts.data()));
  return std::any_of(exts.begin(), exts.end(),
                     [&](const VkExtensionProperties& e) { return std::strcmp(e.extensionName, name) == 0; });
}

// VK_NV_cooperative_matrix2, one feature query for both uses: into `c`,
// coopmat2_subgroup_ops (conversions, reductions and per-element
// operations: the coopmat2 attention kernels) and coopmat2 (every feature
// the workgroup-scope GEMM needs and f16 workgroup-scope shapes exist),
// with the GEMM's limits and shapes.
static void query_coopmat2(VkPhysicalDevice physical, Caps& c) {
  if (!has_device_extension(physical, VK_NV_COOPERATIVE_MATRIX_2_EXTENSION_NAME)) return;
  VkPhysicalDeviceCooperativeMatrix2FeaturesNV f{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_FEATURES_NV};
  VkPhysicalDeviceVulkan12Features v12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  f.pNext = &v12;
  VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  f2.pNext = &f;
  vkGetPhysicalDeviceFeatures2(physical, &f2);
  c.coopmat2_subgroup_ops =
      f.cooperativeMatrixConversions && f.cooperativeMatrixReductions && f.cooperativeMatrixPerElementOperations;
  if (!vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV || !f.cooperativeMatrixWorkgroupScope ||
      !f.cooperativeMatrixFlexibleDimensions || !f.cooperativeMatrixTensorAddressing ||
      !f.cooperativeMatrixBlockLoads || !v12.bufferDeviceAddress) {
    return;
  }
  const auto props = extension_properties<VkPhysicalDeviceCooperativeMatrix2PropertiesNV>(
      physical, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_PROPERTIES_NV);
  c.coopmat2_max_workgroup_size = props.cooperativeMatrixWorkgroupScopeMaxWorkgroupSize;
  c.coopmat2_max_dimension = props.cooperativeMatrixFlexibleDimensionsMaxDimension;
  c.coopmat2_reserved_shared_memory = props.cooperativeMatrixWorkgroupScopeReservedSharedMemory;
  std::uint32_t n = 0;
  VKBLR_VK(vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV(physical, &n, nullptr));
  std::vector<VkCooperativeMatrixFlexibleDimensionsPropertiesNV> shapes(
      n, {VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_FLEXIBLE_DIMENSIONS_PROPERTIES_NV});
  VKBLR_VK(vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV(physical, &n, shapes.data()));
  for (const auto& s : shapes) {
    if (s.scope != VK_SCOPE_WORKGROUP_KHR || s.saturatingAccumulation) continue;
    if (s.AType != VK_COMPONENT_TYPE_FLOAT16_KHR || s.BType != VK_COMPONENT_TYPE_FLOAT16_KHR ||
        s.CType != VK_COMPONENT_TYPE_FLOAT32_KHR || s.ResultType != VK_COMPONENT_TYPE_FLOAT32_KHR) {
      continue;
    }
    c.coopmat2_f16_shapes.push_back({s.MGranularity, s.NGranularity, s.KGranularity, s.workgroupInvocations});
  }
  c.coopmat2 = !c.coopmat2_f16_shapes.empty();
}

Caps query_caps(VkPhysicalDevice physical) {
  Caps c;
  VkPhysicalDeviceSubgroupProperties subgroup{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceVulkan13Properties v13{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_PROPERTIES};
  VkPhysicalDeviceDriverProperties driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
  VkPhysicalDeviceProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  props.pNext = &subgroup;
  subgroup.pNext = &v13;
  v13.pNext = &driver;
  vkGetPhysicalDeviceProperties2(physical, &props);
  const VkPhysicalDeviceProperties& p = props.properties;
  c.device_name = p.deviceName;
  c.device_type = device_type_name(p.deviceType);
  c.driver_name = driver.driverName;
  c.driver_info = driver.driverInfo;
  c.vendor_id = p.vendorID;
  c.device_id = p.deviceID;
  c.api_version = p.apiVersion;
  c.api_version_string = version_string(p.apiVersion);
  c.driver_version = p.driverVersion;
  c.subgroup_size = subgroup.subgroupSize;
  c.min_subgroup_size = v13.minSubgroupSize;
  c.max_subgroup_size = v13.maxSubgroupSize;
  c.subgroup_size_control = (v13.requiredSubgroupSizeStages & VK_SHADER_STAGE_COMPUTE_BIT) != 0;
  c.max_shared_memory = p.limits.maxComputeSharedMemorySize;
  c.max_workgroup_invocations = p.limits.maxComputeWorkGroupInvocations;
  for (int i = 0; i < 3; ++i) c.max_workgroup_count[i] = p.limits.maxComputeWorkGroupCount[i];
  c.max_push_constants = p.limits.maxPushConstantsSize;
  c.max_storage_buffer_range = p.limits.maxStorageBufferRange;
  c.min_storage_buffer_offset_alignment = p.limits.minStorageBufferOffsetAlignment;
  c.timestamp_period_ns = p.limits.timestampPeriod;

  VkPhysicalDeviceMemoryProperties mem;
  vkGetPhysicalDeviceMemoryProperties(physical, &mem);
  for (std::uint32_t i = 0; i < mem.memoryHeapCount; ++i) {
    if (mem.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) c.device_local_bytes += mem.memoryHeaps[i].size;
  }

  std::uint32_t nq = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(physical, &nq, nullptr);
  std::vector<VkQueueFamilyProperties> families(nq);
  vkGetPhysicalDeviceQueueFamilyProperties(physical, &nq, families.data());
  c.timestamps = families[compute_queue_family(physical)].timestampValidBits > 0 && p.limits.timestampPeriod > 0;

  query_coopmat2(physical, c);
  c.kernel_statistics = has_device_extension(physical, VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
  c.host_memory_import = has_device_extension(physical, VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME);
  if (c.host_memory_import) {
    c.host_import_alignment = extension_properties<VkPhysicalDeviceExternalMemoryHostPropertiesEXT>(
                                  physical, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_MEMORY_HOST_PROPERTIES_EXT)
                                  .minImportedHostPointerAlignment;
    c.host_memory_import = c.host_import_alignment > 0;
  }
  // The loader hands out a non-null trampoline for this query even when the
  // driver lacks the extension, and calling it then crashes: check first.
  if (has_device_extension(physical, VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME) &&
      vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR) {
    VkPhysicalDeviceCooperativeMatrixFeaturesKHR coop{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR};
    VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    f2.pNext = &coop;
    vkGetPhysicalDeviceFeatures2(physical, &f2);
    std::uint32_t n = 0;
    VKBLR_VK(vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR(physical, &n, nullptr));
    std::vector<VkCooperativeMatrixPropertiesKHR> shapes(n, {VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR});
    VKBLR_VK(vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR(physical, &n, shapes.data()));
    for (const auto& s : shapes) {
      if (s.scope != VK_SCOPE_SUBGROUP_KHR) continue;
      c.coopmat_shapes.push_back({s.MSize, s.NSize, s.KSize, component_name(s.AType), component_name(s.BType),
                                  component_name(s.CType), component_name(s.ResultType),
                                  s.saturatingAccumulation == VK_TRUE});
    }
    c.coopmat = coop.cooperativeMatrix == VK_TRUE && !c.coopmat_shapes.empty();
  }
  return c;
}

ContextImpl::ContextImpl(const ContextOptions& options) {
  load_vulkan();
  validation = options.validation;
  barriers_all = env("VKBLR_BARRIERS") == "all";
  gemm_policy = options.gemm_policy ? *options.gemm_policy : gemm_policy_from_env();
  check_gemm_policy(gemm_policy);
  profiler.enable(options.profile || env("VKBLR_PROFILE") == "1");
  try {
    create_instance(options);
    pick_device(options);
    create_device(options.kernel_statistics || env("VKBLR_KERNEL_STATS") == "1");
    load_pipeline_cache(options);
    VkCommandPoolCreateInfo pool{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    pool.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    pool.queueFamilyIndex = queue_family;
    VKBLR_VK(vkCreateCommandPool(device, &pool, nullptr, &command_pool));
    transfer_cb_ = allocate_command_buffer();
    transfer_fence_ = create_fence();
    dummy_ = make_buffer(4096, false, "vkblr.dummy");
  } catch (...) {
    release();
    throw;
  }
}

namespace {
// Batches whose objects are kept for reuse: more than a program keeps
// finished at once (graphs hold theirs while they live).
constexpr std::size_t kSpareBatches = 16;

void destroy_batch_objects(VkDevice device, VkCommandPool pool, const ContextImpl::BatchObjects& o) noexcept {
  if (o.span_pool != VK_NULL_HANDLE) vkDestroyQueryPool(device, o.span_pool, nullptr);
  if (o.fence != VK_NULL_HANDLE) vkDestroyFence(device, o.fence, nullptr);
  if (o.cb != VK_NULL_HANDLE) vkFreeCommandBuffers(device, pool, 1, &o.cb);
}
}  // namespace

ContextImpl::~ContextImpl() { release(); }

void ContextImpl::release() noexcept {
  if (device) vkDeviceWaitIdle(device);
  kernels_.clear();
  staging_ = Buffer();
  dummy_ = Buffer();
  if (transfer_fence_) vkDestroyFence(device, transfer_fence_, nullptr);
  transfer_fence_ = VK_NULL_HANDLE;
  for (const BatchObjects& o : spare_batches_) destroy_batch_objects(device, command_pool, o);
  spare_batches_.clear();
  if (command_pool) vkDestroyCommandPool(device, command_pool, nullptr);
  command_pool = VK_NULL_HANDLE;
  if (pipeline_cache) {
    save_pipeline_cache();
    vkDestroyPipelineCache(device, pipeline_cache, nullptr);
    pipeline_cache = VK_NULL_HANDLE;
  }
  if (allocator) vmaDestroyAllocator(allocator);
  allocator = VK_NULL_HANDLE;
  if (device) vkDestroyDevice(device, nullptr);
  device = VK_NULL_HANDLE;
  if (messenger) destroy_messenger(instance, messenger, nullptr);
  messenger = VK_NULL_HANDLE;
  destroy_messenger = nullptr;
  if (instance) vkDestroyInstance(instance, nullptr);
  instance = VK_NULL_HANDLE;
}

void ContextImpl::create_instance(const ContextOptions& options) {
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "vkblr";
  app.pEngineName = "vkblr";
  app.apiVersion = VK_API_VERSION_1_3;
  std::vector<const char*> layers, extensions;
  VkDebugUtilsMessengerCreateInfoEXT dbg = messenger_info(this);
  VkValidationFeatureEnableEXT sync_feature = VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT;
  VkValidationFeaturesEXT features{VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT};
  VkInstanceCreateInfo info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  info.pApplicationInfo = &app;
  if (options.validation) {
    require(has_layer(kValidationLayer),
            "validation requested but {} is not installed (Debian: vulkan-validationlayers; or set VK_LAYER_PATH)",
            kValidationLayer);
    layers.push_back(kValidationLayer);
    extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
    info.pNext = &dbg;
    if (options.synchronization_validation &&
        has_instance_extension(kValidationLayer, VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME)) {
      extensions.push_back(VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME);
      features.enabledValidationFeatureCount = 1;
      features.pEnabledValidationFeatures = &sync_feature;
      dbg.pNext = &features;
    }
  }
  info.enabledLayerCount = static_cast<std::uint32_t>(layers.size());
  info.ppEnabledLayerNames = layers.data();
  info.enabledExtensionCount = static_cast<std::uint32_t>(extensions.size());
  info.ppEnabledExtensionNames = extensions.data();
  VKBLR_VK(vkCreateInstance(&info, nullptr, &instance));
  volkLoadInstance(instance);
  if (options.validation) {
    // this instance's own debug-utils commands (vk.hpp: volk's follow the
    // last instance loaded, which may lack the extension by release())
    const auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance, "vkCreateDebugUtilsMessengerEXT"));
    destroy_messenger = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance, "vkDestroyDebugUtilsMessengerEXT"));
    require(create && destroy_messenger, "the Vulkan loader offers no {} commands on an instance that enabled it",
            VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
    VkDebugUtilsMessengerCreateInfoEXT m = messenger_info(this);
    VKBLR_VK(create(instance, &m, nullptr, &messenger));
  }
}

void ContextImpl::pick_device(const ContextOptions& options) {
  const std::vector<VkPhysicalDevice> all = physical_devices(instance);
  require(!all.empty(), "no Vulkan device found (no driver installed, or none supports this system)");
  std::vector<Caps> caps_all;
  for (VkPhysicalDevice p : all) caps_all.push_back(query_caps(p));
  auto describe = [&] {
    std::string s;
    for (std::size_t i = 0; i < all.size(); ++i) s += std::format("\n  {}: {} ({})", i, caps_all[i].device_name, caps_all[i].device_type);
    return s;
  };
  const std::string want = !options.device.empty() ? options.device : env("VKBLR_DEVICE");
  std::size_t chosen = all.size();
  if (!want.empty()) {
    const bool numeric = std::all_of(want.begin(), want.end(), [](unsigned char ch) { return std::isdigit(ch); });
    if (numeric) {
      const std::size_t index = std::stoul(want);
      require(index < all.size(), "VKBLR_DEVICE={}: no device with that index; devices:{}", want, describe());
      chosen = index;
    } else {
      for (std::size_t i = 0; i < all.size() && chosen == all.size(); ++i) {
        if (lower(caps_all[i].device_name).find(lower(want)) != std::string::npos) chosen = i;
      }
      require(chosen < all.size(), "VKBLR_DEVICE={}: no device name contains it; devices:{}", want, describe());
    }
  } else {
    chosen = 0;
    for (std::size_t i = 1; i < all.size(); ++i) {
      if (device_rank(caps_all[i].device_type) < device_rank(caps_all[chosen].device_type)) chosen = i;
    }
  }
  physical = all[chosen];
  caps = caps_all[chosen];
  require(caps.api_version >= VK_API_VERSION_1_3, "device {} supports Vulkan {}; vkblr needs 1.3", caps.device_name,
          caps.api_version_string);
  queue_family = compute_queue_family(physical);
}

void ContextImpl::create_device(bool want_kernel_statistics) {
  // What the device offers.
  VkPhysicalDeviceCooperativeMatrixFeaturesKHR coop_have{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR};
  VkPhysicalDeviceVulkan13Features v13_have{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES};
  VkPhysicalDeviceVulkan12Features v12_have{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  VkPhysicalDeviceVulkan11Features v11_have{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  VkPhysicalDeviceFeatures2 have{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  have.pNext = &v11_have;
  v11_have.pNext = &v12_have;
  v12_have.pNext = &v13_have;
  const bool coop_ext = has_device_extension(physical, VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME);
  if (coop_ext) v13_have.pNext = &coop_have;
  VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR stats_have{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR};
  const bool stats_ext = want_kernel_statistics && caps.kernel_statistics;  // query_caps: the extension is there
  if (stats_ext) {
    stats_have.pNext = have.pNext;
    have.pNext = &stats_have;
  }
  vkGetPhysicalDeviceFeatures2(physical, &have);

  auto need = [&](bool ok, const char* what) {
    require(ok, "device {} lacks {}, which vkblr needs", caps.device_name, what);
  };
  need(v11_have.storageBuffer16BitAccess, "storageBuffer16BitAccess (16-bit storage)");
  need(v12_have.shaderFloat16, "shaderFloat16");
  need(v12_have.vulkanMemoryModel, "vulkanMemoryModel");
  need(v12_have.hostQueryReset, "hostQueryReset");
  need(v13_have.synchronization2, "synchronization2");
  need(v13_have.maintenance4, "maintenance4 (LocalSizeId)");
  need(v13_have.subgroupSizeControl && v13_have.computeFullSubgroups, "subgroup size control with full subgroups");
  need(has_device_extension(physical, VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME), "VK_KHR_push_descriptor");

  // What vkblr enables.
  VkPhysicalDeviceCooperativeMatrixFeaturesKHR coop{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR};
  coop.cooperativeMatrix = VK_TRUE;
  VkPhysicalDeviceVulkan13Features v13{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES};
  v13.synchronization2 = VK_TRUE;
  v13.maintenance4 = VK_TRUE;
  v13.subgroupSizeControl = VK_TRUE;
  v13.computeFullSubgroups = VK_TRUE;
  VkPhysicalDeviceVulkan12Features v12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  v12.shaderFloat16 = VK_TRUE;
  v12.shaderInt8 = v12_have.shaderInt8;
  v12.storageBuffer8BitAccess = v12_have.storageBuffer8BitAccess;
  v12.vulkanMemoryModel = VK_TRUE;
  v12.vulkanMemoryModelDeviceScope = v12_have.vulkanMemoryModelDeviceScope;
  v12.hostQueryReset = VK_TRUE;
  v12.shaderSubgroupExtendedTypes = v12_have.shaderSubgroupExtendedTypes;
  VkPhysicalDeviceVulkan11Features v11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  v11.storageBuffer16BitAccess = VK_TRUE;
  v11.uniformAndStorageBuffer16BitAccess = v11_have.uniformAndStorageBuffer16BitAccess;
  VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  features.features.shaderInt16 = have.features.shaderInt16;
  features.features.shaderInt64 = have.features.shaderInt64;
  features.pNext = &v11;
  v11.pNext = &v12;
  v12.pNext = &v13;

  std::vector<const char*> extensions{VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME};
  const bool use_coop = coop_ext && coop_have.cooperativeMatrix && caps.coopmat;
  if (use_coop) {
    extensions.push_back(VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME);
    v13.pNext = &coop;
  }
  caps.coopmat = use_coop;
  if (!use_coop) caps.coopmat_shapes.clear();
  // The workgroup-scope GEMM (glsl/gemm_coopmat2.comp) builds on the KHR
  // extension; its decode callbacks are buffer references.
  VkPhysicalDeviceCooperativeMatrix2FeaturesNV coop2{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_FEATURES_NV};
  const bool use_coop2 = use_coop && caps.coopmat2;
  const bool use_coop2_ops = use_coop && caps.coopmat2_subgroup_ops;
  if (use_coop2 || use_coop2_ops) {
    extensions.push_back(VK_NV_COOPERATIVE_MATRIX_2_EXTENSION_NAME);
    coop.pNext = &coop2;
  }
  if (use_coop2) {
    coop2.cooperativeMatrixWorkgroupScope = VK_TRUE;
    coop2.cooperativeMatrixFlexibleDimensions = VK_TRUE;
    coop2.cooperativeMatrixTensorAddressing = VK_TRUE;
    coop2.cooperativeMatrixBlockLoads = VK_TRUE;
    v12.bufferDeviceAddress = VK_TRUE;
  }
  // The coopmat2 attention kernels (glsl/attention_coopmat.comp, CM2).
  if (use_coop2_ops) {
    coop2.cooperativeMatrixConversions = VK_TRUE;
    coop2.cooperativeMatrixReductions = VK_TRUE;
    coop2.cooperativeMatrixPerElementOperations = VK_TRUE;
  }
  caps.coopmat2 = use_coop2;
  caps.coopmat2_subgroup_ops = use_coop2_ops;
  if (!use_coop2) caps.coopmat2_f16_shapes.clear();
  // Compiler statistics (vkblr/kernel_stats.hpp), only when asked for.
  VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR stats{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR};
  caps.kernel_statistics = stats_ext && stats_have.pipelineExecutableInfo;
  if (caps.kernel_statistics) {
    extensions.push_back(VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
    stats.pipelineExecutableInfo = VK_TRUE;
    stats.pNext = features.pNext;
    features.pNext = &stats;
  }

  // Host memory as buffers (import_host_memory); no feature to enable.
  if (caps.host_memory_import) extensions.push_back(VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME);

  const float priority = 1.0f;
  VkDeviceQueueCreateInfo queue_info{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  queue_info.queueFamilyIndex = queue_family;
  queue_info.queueCount = 1;
  queue_info.pQueuePriorities = &priority;
  VkDeviceCreateInfo info{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  info.pNext = &features;
  info.queueCreateInfoCount = 1;
  info.pQueueCreateInfos = &queue_info;
  info.enabledExtensionCount = static_cast<std::uint32_t>(extensions.size());
  info.ppEnabledExtensionNames = extensions.data();
  creating_device = true;
  const VkResult created = vkCreateDevice(physical, &info, nullptr, &device);
  creating_device = false;
  VKBLR_VK(created);
  vkGetDeviceQueue(device, queue_family, 0, &queue);
  if (caps.host_memory_import) {
    get_host_pointer_properties = reinterpret_cast<PFN_vkGetMemoryHostPointerPropertiesEXT>(
        vkGetDeviceProcAddr(device, "vkGetMemoryHostPointerPropertiesEXT"));
    caps.host_memory_import = get_host_pointer_properties != nullptr;
  }

  VmaVulkanFunctions fns{};
  fns.vkGetInstanceProcAddr = vkGetInstanceProcAddr;
  fns.vkGetDeviceProcAddr = vkGetDeviceProcAddr;
  VmaAllocatorCreateInfo alloc{};
  alloc.vulkanApiVersion = VK_API_VERSION_1_3;
  alloc.physicalDevice = physical;
  alloc.device = device;
  alloc.instance = instance;
  alloc.pVulkanFunctions = &fns;
  VKBLR_VK(vmaCreateAllocator(&alloc, &allocator));
}

void ContextImpl::load_pipeline_cache(const ContextOptions& options) {
  std::string dir = options.pipeline_cache_dir;
  if (dir.empty()) dir = env("VKBLR_PIPELINE_CACHE_DIR");
  if (env("VKBLR_PIPELINE_CACHE") == "0") dir = "-";
  if (dir.empty()) {
    const std::string xdg = env("XDG_CACHE_HOME");
    const std::string home = env("HOME");
    if (!xdg.empty()) {
      dir = xdg + "/vkblr";
    } else if (!home.empty()) {
      dir = home + "/.cache/vkblr";
    } else {
      dir = "-";
    }
  }
  std::vector<char> data;
  if (dir != "-") {
    VkPhysicalDeviceProperties p;
    vkGetPhysicalDeviceProperties(physical, &p);
    PipelineCacheIdentity identity{p.vendorID, p.deviceID, {}};
    std::copy(std::begin(p.pipelineCacheUUID), std::end(p.pipelineCacheUUID), identity.uuid.begin());
    std::string uuid;
    for (std::uint8_t b : p.pipelineCacheUUID) uuid += std::format("{:02x}", b);
    pipeline_cache_file = std::format("{}/pipelines-{:04x}-{:04x}-{}.bin", dir, p.vendorID, p.deviceID, uuid);
    PipelineCacheRead read = read_pipeline_cache(pipeline_cache_file, identity);
    if (!read.problem.empty()) warn_pipeline_cache("", read.problem, "; running without it");
    data = std::move(read.data);
  }
  VkPipelineCacheCreateInfo info{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
  info.initialDataSize = data.size();
  info.pInitialData = data.empty() ? nullptr : data.data();
  const VkResult r = vkCreatePipelineCache(device, &info, nullptr, &pipeline_cache);
  if (r != VK_SUCCESS && !data.empty()) {
    warn_pipeline_cache("was refused by the driver (", vk_result_name(r), "); running without it");
    info.initialDataSize = 0;
    info.pInitialData = nullptr;
    VKBLR_VK(vkCreatePipelineCache(device, &info, nullptr, &pipeline_cache));
  } else {
    VKBLR_VK(r);
  }
}

void ContextImpl::save_pipeline_cache() noexcept {
  if (pipeline_cache_file.empty()) return;
  try {
    std::size_t size = 0;
    VkResult r = vkGetPipelineCacheData(device, pipeline_cache, &size, nullptr);
    std::vector<char> data(r == VK_SUCCESS ? size : 0);
    if (r == VK_SUCCESS && size > 0) r = vkGetPipelineCacheData(device, pipeline_cache, &size, data.data());
    if (r != VK_SUCCESS) {
      warn_pipeline_cache("not saved: the driver returned ", vk_result_name(r), " for its data");
      return;
    }
    data.resize(size);
    if (data.empty()) return;
    const std::string problem = write_pipeline_cache(pipeline_cache_file, data);
    if (!problem.empty()) warn_pipeline_cache("not saved: ", problem, "");
  } catch (const std::exception& e) {  // no memory for the data
    warn_pipeline_cache("not saved: ", e.what(), "");
  }
}

void ContextImpl::warn_pipeline_cache(std::string_view before, std::string_view problem,
                                      std::string_view after) noexcept {
  if (pipeline_cache_warned_) return;  // one warning per context
  pipeline_cache_warned_ = true;
  // printed without allocating: the save runs in the destructor
  std::fprintf(stderr, "vkblr: warning: pipeline cache %s %.*s%.*s%.*s\n", pipeline_cache_file.c_str(),
               static_cast<int>(before.size()), before.data(), static_cast<int>(problem.size()), problem.data(),
               static_cast<int>(after.size()), after.data());
  try {
    pipeline_cache_warning = std::format("pipeline cache {} {}{}{}", pipeline_cache_file, before, problem, after);
  } catch (...) {
    // (stderr has it)
  }
}

Buffer ContextImpl::make_buffer(std::uint64_t bytes, bool host_visible, std::string_view label) {
  require(bytes > 0, "buffer{}{}: size 0", label.empty() ? "" : " ", label);
  VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  info.size = bytes;
  info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  VmaAllocationCreateInfo alloc{};
  alloc.usage = VMA_MEMORY_USAGE_AUTO;
  if (host_visible) {
    alloc.flags = VMA_ALLOCATION_CREATE_HOST_ACCESS_RANDOM_BIT | VMA_ALLOCATION_CREATE_MAPPED_BIT;
  } else {
    alloc.usage = VMA_MEMORY_USAGE_AUTO_PREFER_DEVICE;
  }
  VkBuffer buffer = VK_NULL_HANDLE;
  VmaAllocation allocation = VK_NULL_HANDLE;
  VmaAllocationInfo ainfo{};
  const VkResult r = vmaCreateBuffer(allocator, &info, &alloc, &buffer, &allocation, &ainfo);
  if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY) {
    fail("buffer{}{}: out of memory allocating {} bytes", label.empty() ? "" : " ", label, bytes);
  }
  VKBLR_VK(r);
  if (!label.empty()) vmaSetAllocationName(allocator, allocation, std::string(label).c_str());
  return Buffer(this, to_handle(buffer), allocation, host_visible ? ainfo.pMappedData : nullptr, bytes,
                next_buffer_id_++);
}

Buffer ContextImpl::import_host_memory(void* pointer, std::uint64_t bytes, std::string_view label) {
  const std::string name = label.empty() ? std::string() : std::format(" {}", label);
  require(caps.host_memory_import, "import_host_memory{}: {} has no VK_EXT_external_memory_host", name,
          caps.device_name);
  const std::uint64_t align = caps.host_import_alignment;
  const auto address = reinterpret_cast<std::uintptr_t>(pointer);
  require(pointer != nullptr && address % align == 0 && bytes > 0 && bytes % align == 0,
          "import_host_memory{}: pointer {} and size {} must be nonzero multiples of {} bytes", name, pointer, bytes,
          align);
  VkMemoryHostPointerPropertiesEXT host{VK_STRUCTURE_TYPE_MEMORY_HOST_POINTER_PROPERTIES_EXT};
  const VkResult got = get_host_pointer_properties(device, VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT,
                                                   pointer, &host);
  require(got == VK_SUCCESS, "import_host_memory{}: the driver refuses the memory at {} ({})", name, pointer,
          vk_result_name(got));

  VkExternalMemoryBufferCreateInfo external{VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO};
  external.handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT;
  VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  info.pNext = &external;
  info.size = bytes;
  info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  VkBuffer buffer = VK_NULL_HANDLE;
  VKBLR_VK(vkCreateBuffer(device, &info, nullptr, &buffer));
  VkMemoryRequirements needs;
  vkGetBufferMemoryRequirements(device, buffer, &needs);
  VkPhysicalDeviceMemoryProperties mem;
  vkGetPhysicalDeviceMemoryProperties(physical, &mem);
  const VkMemoryPropertyFlags want = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  std::uint32_t type = UINT32_MAX;
  for (std::uint32_t i = 0; i < mem.memoryTypeCount && type == UINT32_MAX; ++i) {
    if ((host.memoryTypeBits & needs.memoryTypeBits & (1u << i)) && (mem.memoryTypes[i].propertyFlags & want) == want) {
      type = i;
    }
  }
  if (type == UINT32_MAX || needs.size > bytes) {
    vkDestroyBuffer(device, buffer, nullptr);
    fail("import_host_memory{}: no host-coherent memory type takes {} bytes at {} (types {:#x} of the pointer, {:#x} "
         "of the buffer, which needs {} bytes)",
         name, bytes, pointer, host.memoryTypeBits, needs.memoryTypeBits, needs.size);
  }
  VkImportMemoryHostPointerInfoEXT import{VK_STRUCTURE_TYPE_IMPORT_MEMORY_HOST_POINTER_INFO_EXT};
  import.handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT;
  import.pHostPointer = pointer;
  VkMemoryAllocateInfo alloc{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  alloc.pNext = &import;
  alloc.allocationSize = bytes;
  alloc.memoryTypeIndex = type;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  const VkResult allocated = vkAllocateMemory(device, &alloc, nullptr, &memory);
  if (allocated != VK_SUCCESS) {
    vkDestroyBuffer(device, buffer, nullptr);
    fail("import_host_memory{}: importing {} bytes at {} failed ({})", name, bytes, pointer,
         vk_result_name(allocated));
  }
  VKBLR_VK(vkBindBufferMemory(device, buffer, memory, 0));
  imported_memory_[to_handle(buffer)] = memory;
  return Buffer(this, to_handle(buffer), nullptr, pointer, bytes, next_buffer_id_++);
}

void ContextImpl::destroy_buffer(std::uint64_t handle, void* allocation) noexcept {
  if (const auto it = imported_memory_.find(handle); it != imported_memory_.end()) {
    vkDestroyBuffer(device, from_handle<VkBuffer>(handle), nullptr);
    vkFreeMemory(device, it->second, nullptr);
    imported_memory_.erase(it);
    return;
  }
  vmaDestroyBuffer(allocator, from_handle<VkBuffer>(handle), static_cast<VmaAllocation>(allocation));
}

void ContextImpl::ensure_staging(std::uint64_t bytes) {
  if (staging_ && staging_.size() >= bytes) return;
  staging_ = Buffer();
  staging_ = make_buffer(std::max<std::uint64_t>(bytes, 1u << 20), true, "vkblr.staging");
}

template <class Fn>
void ContextImpl::transfer(Fn&& fn) {
  VKBLR_VK(vkResetCommandBuffer(transfer_cb_, 0));
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  VKBLR_VK(vkBeginCommandBuffer(transfer_cb_, &begin));
  // order after all earlier device work, and make the transfer's writes
  // visible to later compute, transfer and host reads
  VkMemoryBarrier2 mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER_2};
  mb.srcStageMask = VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT;
  mb.srcAccessMask = VK_ACCESS_2_MEMORY_WRITE_BIT;
  mb.dstStageMask = VK_PIPELINE_STAGE_2_ALL_TRANSFER_BIT;
  mb.dstAccessMask = VK_ACCESS_2_MEMORY_READ_BIT | VK_ACCESS_2_MEMORY_WRITE_BIT;
  VkDependencyInfo dep{VK_STRUCTURE_TYPE_DEPENDENCY_INFO};
  dep.memoryBarrierCount = 1;
  dep.pMemoryBarriers = &mb;
  vkCmdPipelineBarrier2(transfer_cb_, &dep);
  fn(transfer_cb_);
  mb.srcStageMask = VK_PIPELINE_STAGE_2_ALL_TRANSFER_BIT;
  mb.srcAccessMask = VK_ACCESS_2_TRANSFER_WRITE_BIT;
  mb.dstStageMask = VK_PIPELINE_STAGE_2_HOST_BIT | VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT;
  mb.dstAccessMask = VK_ACCESS_2_HOST_READ_BIT | VK_ACCESS_2_MEMORY_READ_BIT | VK_ACCESS_2_MEMORY_WRITE_BIT;
  vkCmdPipelineBarrier2(transfer_cb_, &dep);
  VKBLR_VK(vkEndCommandBuffer(transfer_cb_));
  submit(transfer_cb_, transfer_fence_);
  wait(transfer_fence_);
}

namespace {
void check_range(const Buffer& b, std::uint64_t bytes, std::uint64_t offset, const char* what) {
  require(offset <= b.size() && bytes <= b.size() - offset, "{}: {} bytes at offset {} outside a buffer of {} bytes",
          what, bytes, offset, b.size());
}
constexpr std::uint64_t kStagingChunk = 64ull << 20;
}  // namespace

void ContextImpl::write(const Buffer& dst, const void* data, std::uint64_t bytes, std::uint64_t offset) {
  check_range(dst, bytes, offset, "Buffer::write");
  profiler.counters().bytes_uploaded += bytes;
  if (dst.mapped()) {
    std::memcpy(static_cast<char*>(dst.mapped()) + offset, data, bytes);
    dst.flush(offset, bytes);
    return;
  }
  const auto* src = static_cast<const char*>(data);
  for (std::uint64_t done = 0; done < bytes;) {
    const std::uint64_t n = std::min(bytes - done, kStagingChunk);
    ensure_staging(n);
    std::memcpy(staging_.mapped(), src + done, n);
    VKBLR_VK(vmaFlushAllocation(allocator, static_cast<VmaAllocation>(staging_.vma_allocation()), 0, n));
    transfer([&](VkCommandBuffer cb) {
      VkBufferCopy region{0, dst.offset() + offset + done, n};
      vkCmdCopyBuffer(cb, from_handle<VkBuffer>(staging_.vk_handle()), from_handle<VkBuffer>(dst.vk_handle()), 1,
                      &region);
    });
    done += n;
  }
}

void ContextImpl::read(const Buffer& src, void* data, std::uint64_t bytes, std::uint64_t offset) {
  check_range(src, bytes, offset, "Buffer::read");
  profiler.counters().bytes_downloaded += bytes;
  if (src.mapped()) {
    src.invalidate(offset, bytes);
    std::memcpy(data, static_cast<const char*>(src.mapped()) + offset, bytes);
    return;
  }
  auto* out = static_cast<char*>(data);
  for (std::uint64_t done = 0; done < bytes;) {
    const std::uint64_t n = std::min(bytes - done, kStagingChunk);
    ensure_staging(n);
    transfer([&](VkCommandBuffer cb) {
      VkBufferCopy region{src.offset() + offset + done, 0, n};
      vkCmdCopyBuffer(cb, from_handle<VkBuffer>(src.vk_handle()), from_handle<VkBuffer>(staging_.vk_handle()), 1,
                      &region);
    });
    VKBLR_VK(vmaInvalidateAllocation(allocator, static_cast<VmaAllocation>(staging_.vma_allocation()), 0, n));
    std::memcpy(out + done, staging_.mapped(), n);
    done += n;
  }
}

void ContextImpl::fill(const Buffer& dst, std::uint32_t word, std::uint64_t offset, std::uint64_t bytes) {
  if (bytes == kWholeBuffer) bytes = dst.size() - std::min(offset, dst.size());
  check_range(dst, bytes, offset, "Buffer::fill");
  require(offset % 4 == 0 && bytes % 4 == 0, "Buffer::fill: offset {} and size {} must be multiples of 4", offset,
          bytes);
  if (bytes == 0) return;
  transfer([&](VkCommandBuffer cb) {
    vkCmdFillBuffer(cb, from_handle<VkBuffer>(dst.vk_handle()), dst.offset() + offset, bytes, word);
  });
}

const Kernel& ContextImpl::kernel(KernelId id, std::span<const std::uint32_t> spec_by_id,
                                  const KernelOptions& options) {
  std::vector<SpecConstant> spec;
  for (std::uint32_t i = 0; i < spec_by_id.size(); ++i) spec.push_back({i, spec_by_id[i]});
  return kernel(id, std::span<const SpecConstant>(spec), options);
}

const Kernel& ContextImpl::kernel(KernelId id, std::span<const SpecConstant> spec, const KernelOptions& options) {
  std::vector<std::uint32_t> key{static_cast<std::uint32_t>(id), options.subgroup_size, options.full_subgroups ? 1u : 0u};
  for (const SpecConstant& c : spec) {
    key.push_back(c.id);
    key.push_back(c.value);
  }
  auto it = kernels_.find(key);
  if (it == kernels_.end()) {
    KernelOptions with = options;
    with.capture_statistics = caps.kernel_statistics;
    it = kernels_.emplace(std::move(key), std::make_unique<Kernel>(device, pipeline_cache, id, spec, with)).first;
  }
  return *it->second;
}

VkCommandBuffer ContextImpl::allocate_command_buffer() {
  VkCommandBufferAllocateInfo info{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  info.commandPool = command_pool;
  info.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  info.commandBufferCount = 1;
  VkCommandBuffer cb = VK_NULL_HANDLE;
  VKBLR_VK(vkAllocateCommandBuffers(device, &info, &cb));
  return cb;
}

void ContextImpl::free_command_buffer(VkCommandBuffer cb) noexcept {
  if (cb) vkFreeCommandBuffers(device, command_pool, 1, &cb);
}

VkFence ContextImpl::create_fence() {
  VkFenceCreateInfo info{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  VkFence f = VK_NULL_HANDLE;
  VKBLR_VK(vkCreateFence(device, &info, nullptr, &f));
  return f;
}

ContextImpl::BatchObjects ContextImpl::take_batch_objects() {
  if (!spare_batches_.empty()) {
    const BatchObjects o = spare_batches_.back();
    spare_batches_.pop_back();
    return o;
  }
  BatchObjects o;
  o.cb = allocate_command_buffer();
  try {
    o.fence = create_fence();
  } catch (...) {
    free_command_buffer(o.cb);
    throw;
  }
  return o;
}

void ContextImpl::give_back_batch_objects(const BatchObjects& o) noexcept {
  const bool reusable = spare_batches_.size() < kSpareBatches && vkResetCommandBuffer(o.cb, 0) == VK_SUCCESS &&
                        vkResetFences(device, 1, &o.fence) == VK_SUCCESS;
  if (!reusable) {
    destroy_batch_objects(device, command_pool, o);
    return;
  }
  try {
    spare_batches_.push_back(o);
  } catch (...) {
    destroy_batch_objects(device, command_pool, o);
  }
}

void ContextImpl::submit(VkCommandBuffer cb, VkFence fence) {
  VkSubmitInfo info{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  info.commandBufferCount = 1;
  info.pCommandBuffers = &cb;
  VKBLR_VK(vkQueueSubmit(queue, 1, &info, fence));
  ++profiler.counters().submits;
}

void ContextImpl::wait(VkFence fence) {
  VKBLR_VK(vkWaitForFences(device, 1, &fence, VK_TRUE, UINT64_MAX));
  VKBLR_VK(vkResetFences(device, 1, &fence));
}

void ContextImpl::add_validation_message(std::string text) {
  std::lock_guard lock(messages_mutex_);
  messages_.push_back(std::move(text));
}

void ContextImpl::set_aside_validation_message(std::string text) {
  std::lock_guard lock(messages_mutex_);
  set_aside_.push_back(std::move(text));
}

std::vector<std::string> ContextImpl::set_aside_validation_messages() const {
  std::lock_guard lock(messages_mutex_);
  return set_aside_;
}

std::vector<std::string> ContextImpl::validation_messages() const {
  std::lock_guard lock(messages_mutex_);
  return messages_;
}

std::size_t ContextImpl::validation_message_count() const {
  std::lock_guard lock(messages_mutex_);
  return messages_.size();
}

void ContextImpl::clear_validation_messages() {
  std::lock_guard lock(messages_mutex_);
  messages_.clear();
}

}  // namespace detail

// ---- public Context --------------------------------------------------------

Context::Context(const ContextOptions& options) : impl_(std::make_unique<detail::ContextImpl>(options)) {}
Context::~Context() = default;

const Caps& Context::caps() const noexcept { return impl_->caps; }

Buffer Context::buffer(std::uint64_t bytes, std::string_view label) { return impl_->make_buffer(bytes, false, label); }
Buffer Context::host_buffer(std::uint64_t bytes, std::string_view label) {
  return impl_->make_buffer(bytes, true, label);
}
Buffer Context::import_host_memory(void* pointer, std::uint64_t bytes, std::string_view label) {
  return impl_->import_host_memory(pointer, bytes, label);
}

bool Context::validation_enabled() const noexcept { return impl_->validation; }
std::vector<std::string> Context::validation_messages() const { return impl_->validation_messages(); }
std::vector<std::string> Context::set_aside_validation_messages() const {
  return impl_->set_aside_validation_messages();
}
std::size_t Context::validation_message_count() const { return impl_->validation_message_count(); }
void Context::clear_validation_messages() { impl_->clear_validation_messages(); }
Profiler& Context::profiler() noexcept { return impl_->profiler; }
const GemmPolicy& Context::gemm_policy() const noexcept { return impl_->gemm_policy; }
const std::string& Context::pipeline_cache_file() const noexcept { return impl_->pipeline_cache_file; }
const std::string& Context::pipeline_cache_warning() const noexcept { return impl_->pipeline_cache_warning; }
void Context::wait_idle() { VKBLR_VK(vkDeviceWaitIdle(impl_->device)); }

std::optional<CoopMatShape> Caps::f16_fragment() const {
  std::optional<CoopMatShape> best;
  for (const CoopMatShape& s : coopmat_shapes) {
    if (s.a_type != "f16" || s.b_type != "f16" || s.c_type != "f32" || s.result_type != "f32" || s.saturating) continue;
    auto score = [](const CoopMatShape& x) {
      return std::make_pair(x.m == x.n && x.n == x.k, std::uint64_t{x.m} * x.n * x.k);
    };
    if (!best || score(s) > score(*best)) best = s;
  }
  return best;
}

std::vector<Caps> list_devices() {
  detail::load_vulkan();
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.apiVersion = VK_API_VERSION_1_3;
  VkInstanceCreateInfo info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  info.pApplicationInfo = &app;
  VkInstance instance = VK_NULL_HANDLE;
  VKBLR_VK(vkCreateInstance(&info, nullptr, &instance));
  volkLoadInstance(instance);
  std::vector<Caps> out;
  try {
    for (VkPhysicalDevice p : detail::physical_devices(instance)) out.push_back(detail::query_caps(p));
  } catch (...) {
    vkDestroyInstance(instance, nullptr);
    throw;
  }
  vkDestroyInstance(instance, nullptr);
  return out;
}

std::string_view version() noexcept { return VKBLR_VERSION; }
std::string_view shader_compiler() noexcept { return detail::kShaderCompiler; }

}  // namespace vkblr
