// gpu.hpp — the conformance suite's shared device and the GPU_TEST macro.
//
// Every GPU test runs on one process-wide Context with the Khronos
// validation layer on; the test fails when any validation message appears
// during it, or since the last GPU test's end (so the first test also fails
// on messages from making the context). Without any Vulkan device the test is skipped (SKIP) — that is
// the only skip; a missing validation layer is a failure.
#pragma once

#include <catch2/catch_test_macros.hpp>
#include <string>

#include "vkblr/context.hpp"

namespace vkt {

// The shared validation-enabled context (created on first use).
vkblr::Context& context();

// Fails the running test if validation reported anything; clears the log.
void check_validation(vkblr::Context& ctx);

// The options the shared context is made with (its GEMM policy from the
// environment).
vkblr::ContextOptions shared_options();

// fn(c) on a second context `c`, made as the shared one but under `policy`
// (its own buffers and kernels; the same device), then check_validation(c);
// fn's result. For tests that compare GEMM policies.
template <class Fn>
auto with_gemm_policy(const vkblr::GemmPolicy& policy, Fn&& fn) {
  vkblr::ContextOptions options = shared_options();
  options.gemm_policy = policy;
  vkblr::Context c(options);
  struct Check {
    vkblr::Context& c;
    ~Check() { check_validation(c); }
  } check{c};
  return fn(c);
}

}  // namespace vkt

#define VKT_CAT2(a, b) a##b
#define VKT_CAT(a, b) VKT_CAT2(a, b)
#define VKT_GPU_TEST_IMPL(fn, name, tags)                         \
  static void fn(vkblr::Context& ctx);                            \
  TEST_CASE(name, tags) {                                         \
    vkblr::Context& ctx_ = vkt::context();                        \
    fn(ctx_);                                                     \
    vkt::check_validation(ctx_);                                  \
  }                                                               \
  static void fn([[maybe_unused]] vkblr::Context& ctx)

// GPU_TEST("name", "[tags]") { ... ctx ... }
#define GPU_TEST(name, tags) VKT_GPU_TEST_IMPL(VKT_CAT(vkt_gpu_test_, __LINE__), name, tags)
