// Links against an installed vkblr and stages one matrix on the device.
#include <cstdio>
#include <vkblr/vkblr.hpp>

int main() {
  try {
    if (vkblr::list_devices().empty()) {
      std::puts("vkblr consumer: no Vulkan device (linked fine)");
      return 0;
    }
    vkblr::Context ctx;
    const std::vector<float> x{1.0f, 2.0f, 3.0f, 4.0f}, col{0.5f, 2.0f};
    vkblr::Buffer bx = ctx.upload(x), bcol = ctx.upload(col), dst = ctx.buffer(8);
    vkblr::Recorder rec(ctx);
    rec.add(vkblr::ops::cvt_col(ctx, bx, bcol, dst, 2, 2, 1.0f));
    rec.run();
    const auto h = vkblr::from_f16(dst.download<std::uint16_t>(4));
    const bool ok = h == std::vector<float>{0.5f, 4.0f, 1.5f, 8.0f};
    std::printf("vkblr %s consumer on %s: %s\n", std::string(vkblr::version()).c_str(), ctx.caps().device_name.c_str(),
                ok ? "ok" : "WRONG");
    return ok ? 0 : 1;
  } catch (const vkblr::Error& e) {
    std::fprintf(stderr, "vkblr consumer: %s\n", e.what());
    return 1;
  }
}
