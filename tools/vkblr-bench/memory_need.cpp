#include "memory_need.hpp"

#include <unistd.h>

#include <format>

namespace bench {
namespace {

double host_physical_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<double>(pages) * static_cast<double>(page) : 0;
}

}  // namespace

std::string format_bytes(double bytes) {
  return std::format("{:.3g} GiB ({:.0f} bytes)", bytes / double(1u << 30), bytes);
}

void require_fits(const vkblr::Caps& caps, const MemoryNeed& need, const std::string& what) {
  const double device = static_cast<double>(caps.device_local_bytes);
  vkblr::require(need.device_bytes <= kUsableShare * device,
                 "{} needs about {} of device memory, more than {:.0f} % of the device's {}: not run", what,
                 format_bytes(need.device_bytes), 100 * kUsableShare, format_bytes(device));
  vkblr::require(need.largest_buffer <= static_cast<double>(caps.max_storage_buffer_range),
                 "{} needs a buffer of {}, more than the device binds (maxStorageBufferRange {} bytes): not run",
                 what, format_bytes(need.largest_buffer), caps.max_storage_buffer_range);
  // a CPU device's memory is the host's (lavapipe)
  const double host = host_physical_bytes();
  const double host_need = need.host_bytes + (caps.device_type == "cpu" ? need.device_bytes : 0);
  vkblr::require(host == 0 || host_need <= kUsableShare * host,
                 "{} needs about {} of host memory, more than {:.0f} % of the host's {}: not run", what,
                 format_bytes(host_need), 100 * kUsableShare, format_bytes(host));
}

}  // namespace bench
