// tool_exit.hpp — how vkblr-fit and vkblr-train end a run: the Khronos
// validation's messages and every exception become one message through the
// ranks' fail() (the failing rank's message, exit status 1), so that no
// failure leaves a tool as a crash or an unexplained status.
#pragma once

#include <cstdio>
#include <exception>
#include <filesystem>
#include <new>
#include <string>
#include <vector>

#include "vkblr/error.hpp"

namespace vkblr::fit {

// "PATH: what went wrong" (and the second path, where the call had one).
inline std::string filesystem_message(const std::filesystem::filesystem_error& e) {
  std::string message = e.path1().string() + ": " + e.code().message();
  if (!e.path2().empty()) message += " (with " + e.path2().string() + ")";
  return message;
}

// Runs `body` (which makes the Context, runs and returns the context's
// validation messages) and returns the exit status: 0, or ranks.fail(...)
// for validation messages or an exception. `too_large` ends the message of
// running out of host memory ("out of host memory: " + too_large).
template <class Ranks, class Body>
int run_to_exit_status(Ranks& ranks, const char* too_large, Body&& body) {
  try {
    const std::vector<std::string> messages = body();
    if (messages.empty()) return 0;
    for (const std::string& m : messages) std::fprintf(stderr, "validation: %s\n", m.c_str());
    return ranks.fail(std::to_string(messages.size()) + " validation message(s)");
  } catch (const vkblr::Error& e) {
    return ranks.fail(e.what());
  } catch (const std::filesystem::filesystem_error& e) {
    return ranks.fail(filesystem_message(e));
  } catch (const std::bad_alloc&) {
    return ranks.fail(std::string("out of host memory: ") + too_large);
  } catch (const std::exception& e) {
    return ranks.fail(std::string("unexpected error: ") + e.what());
  }
}

}  // namespace vkblr::fit
