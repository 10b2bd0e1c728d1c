// Links against an installed vkblr and runs one blr layer's forward through
// vkblr/vkblr.hpp alone, the API a trainer uses.
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>
#include <vkblr/vkblr.hpp>

int main() {
  try {
    if (vkblr::list_devices().empty()) {
      std::puts("vkblr consumer: no Vulkan device (linked fine)");
      return 0;
    }
    vkblr::Context ctx;
    constexpr std::uint32_t m = 16, n = 16, r = 32, ntok = 16;
    vkblr::BlrPathInit path;  // every sign +1, unit scales: y[t][i] = r · Σ_j x[t][j]
    path.bits_u.assign(m * r / 32, 0xFFFFFFFFu);
    path.bits_v.assign(n * r / 32, 0xFFFFFFFFu);
    path.h.assign(m, 1.0f);
    path.l.assign(r, 1.0f);
    path.g.assign(n, 1.0f);
    const vkblr::BlrLayer layer = vkblr::make_blr_layer(ctx, m, n, r, {path}, false);
    vkblr::BlrScratch scratch(ctx, layer, ntok);
    std::vector<float> x(ntok * n);
    for (std::uint32_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 5) - 2.0f;  // exact in f16
    const vkblr::Buffer bx = ctx.upload(x), by = ctx.buffer(ntok * m * sizeof(float));
    vkblr::Recorder rec(ctx);
    vkblr::blr_forward(rec, ctx, layer, scratch, bx, by, ntok);
    rec.run();
    const std::vector<float> y = by.download<float>(ntok * m);
    bool ok = true;
    for (std::uint32_t t = 0; t < ntok; ++t) {
      float sum = 0;
      for (std::uint32_t j = 0; j < n; ++j) sum += x[t * n + j];
      for (std::uint32_t i = 0; i < m; ++i) ok = ok && y[t * m + i] == static_cast<float>(r) * sum;
    }
    std::printf("vkblr %s consumer on %s: %s\n", std::string(vkblr::version()).c_str(), ctx.caps().device_name.c_str(),
                ok ? "ok" : "WRONG");
    return ok ? 0 : 1;
  } catch (const vkblr::Error& e) {
    std::fprintf(stderr, "vkblr consumer: %s\n", e.what());
    return 1;
  }
}
