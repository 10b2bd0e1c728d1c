// vkblr/error.hpp — the one error type of the library.
//
// Every failure surfaces as vkblr::Error: a bad argument to an op builder
// (the message names the op and the offending value), a failed Vulkan call
// (the call, its VkResult, file and line), a device loss, a bad file.
#pragma once

#include <format>
#include <stdexcept>
#include <string>
#include <utility>

namespace vkblr {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws Error with a formatted message.
template <class... Args>
[[noreturn]] void fail(std::format_string<Args...> fmt, Args&&... args) {
  throw Error(std::format(fmt, std::forward<Args>(args)...));
}

// Throws Error with a formatted message unless `ok`.
template <class... Args>
void require(bool ok, std::format_string<Args...> fmt, Args&&... args) {
  if (!ok) throw Error(std::format(fmt, std::forward<Args>(args)...));
}

}  // namespace vkblr
