#include "gpu.hpp"

#include <catch2/reporters/catch_reporter_event_listener.hpp>
#include <catch2/reporters/catch_reporter_registrars.hpp>
#include <memory>

#include "vkblr/error.hpp"

namespace vkt {
namespace {

std::unique_ptr<vkblr::Context> ctx;
bool no_device = false;

// Destroys the shared context when the run ends, before static destructors
// of the Vulkan layers run at process exit (destroying it later crashes
// inside the validation layer).
class ContextTeardown : public Catch::EventListenerBase {
 public:
  using Catch::EventListenerBase::EventListenerBase;
  void testRunEnded(const Catch::TestRunStats&) override { ctx.reset(); }
};
CATCH_REGISTER_LISTENER(ContextTeardown)

}  // namespace

vkblr::Context& context() {
  if (!ctx && !no_device) {
    bool any = false;
    try {
      any = !vkblr::list_devices().empty();
    } catch (const vkblr::Error&) {
      any = false;  // no Vulkan loader at all
    }
    if (!any) {
      no_device = true;
    } else {
      ctx = std::make_unique<vkblr::Context>(shared_options());
    }
  }
  if (no_device) SKIP("no Vulkan device on this machine");
  return *ctx;
}

void check_validation(vkblr::Context& ctx) {
  const auto messages = ctx.validation_messages();
  ctx.clear_validation_messages();
  for (const auto& m : messages) UNSCOPED_INFO(m);
  CHECK(messages.empty());
}

vkblr::ContextOptions shared_options() {
  vkblr::ContextOptions options;
  options.validation = true;
  return options;
}

}  // namespace vkt
