// Links against an installed vkblr with vkblr::io: writes a blr layer file
// as vkblr-fit writes one (io::write_blr_result), loads it back
// (io::read_blr_result), runs the layer's forward on the device and checks
// y = x·Ŵᵀ against Ŵ = Σ_p diag(h)·S_U·diag(ℓ)·S_Vᵀ·diag(g) built on the
// host from the file's own bits and scales. docs/guide.md, "Loading a
// layer vkblr-fit wrote", shows the same steps.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>
#include <vkblr/io/blr_result.hpp>
#include <vkblr/vkblr.hpp>

namespace {

// Deterministic values in [-1, 1) (no zeros: sign bits and scales that
// matter everywhere).
struct Lcg {
  std::uint64_t state;
  float next() {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<float>((state >> 40) & 0xFFFF) / 32768.0f - 1.0f + 1.0f / 65536.0f;
  }
  std::uint32_t bits() {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<std::uint32_t>(state >> 32);
  }
};

bool sign_bit(const std::vector<std::uint32_t>& bits, std::uint32_t row, std::uint32_t col, std::uint32_t r) {
  return (bits[row * (r / 32) + col / 32] >> (col % 32)) & 1u;  // 1: +1
}

}  // namespace

int main() {
  namespace io = vkblr::io;
  try {
    if (vkblr::list_devices().empty()) {
      std::puts("vkblr load_layer: no Vulkan device (linked fine)");
      return 0;
    }
    constexpr std::uint32_t m = 48, n = 32, r = 32, paths = 2, ntok = 16;
    // a layer file, as vkblr-fit writes its result
    io::BlrResult written;
    written.shape = {m, n, r, paths};
    written.scale_dtype = io::ScaleDtype::f16;
    written.tool_version = "consumer";
    Lcg lcg{7};
    for (std::uint32_t p = 0; p < paths; ++p) {
      vkblr::BlrPathInit path;
      for (std::uint32_t i = 0; i < m * r / 32; ++i) path.bits_u.push_back(lcg.bits());
      for (std::uint32_t i = 0; i < n * r / 32; ++i) path.bits_v.push_back(lcg.bits());
      for (std::uint32_t i = 0; i < m; ++i) path.h.push_back(lcg.next());
      for (std::uint32_t i = 0; i < r; ++i) path.l.push_back(lcg.next());
      for (std::uint32_t i = 0; i < n; ++i) path.g.push_back(lcg.next());
      written.paths.push_back(path);
    }
    const std::string file = (std::filesystem::temp_directory_path() / "vkblr-consumer-layer.safetensors").string();
    io::write_blr_result(file, written);

    // load it and run it
    const io::BlrResult loaded = io::read_blr_result(file);
    std::filesystem::remove(file);
    const io::LayerShape& s = loaded.shape;
    vkblr::Context ctx;
    const vkblr::BlrLayer layer = vkblr::make_blr_layer(ctx, s.m, s.n, s.rank, loaded.paths, false);
    vkblr::BlrScratch scratch(ctx, layer, ntok);
    std::vector<float> x(ntok * n);
    for (float& v : x) v = static_cast<float>(static_cast<int>(lcg.bits() % 9) - 4) / 4.0f;  // exact in f16
    const vkblr::Buffer bx = ctx.upload(x), by = ctx.buffer(ntok * m * sizeof(float));
    vkblr::Recorder rec(ctx);
    vkblr::blr_forward(rec, ctx, layer, scratch, bx, by, ntok);
    rec.run();
    const std::vector<float> y = by.download<float>(ntok * m);

    // the host's y from the loaded bits and scales, in double
    double worst = 0, norm = 0;
    for (std::uint32_t t = 0; t < ntok; ++t) {
      for (std::uint32_t i = 0; i < m; ++i) {
        double want = 0;
        for (const vkblr::BlrPathInit& p : loaded.paths) {
          for (std::uint32_t k = 0; k < r; ++k) {
            double vx = 0;  // (S_Vᵀ·diag(g)·x)[k]
            for (std::uint32_t j = 0; j < n; ++j) {
              vx += (sign_bit(p.bits_v, j, k, r) ? 1.0 : -1.0) * p.g[j] * x[t * n + j];
            }
            want += p.h[i] * (sign_bit(p.bits_u, i, k, r) ? 1.0 : -1.0) * p.l[k] * vx;
          }
        }
        worst = std::max(worst, std::abs(y[t * m + i] - want));
        norm = std::max(norm, std::abs(want));
      }
    }
    // the forward rounds its intermediates to f16 (docs/kernels.md)
    const bool ok = loaded.paths.size() == paths && worst <= 1e-2 * norm;
    std::printf("vkblr load_layer on %s: a %ux%u layer of %u paths of rank %u from its file; max |y - y_host| = %.3g "
                "(max |y_host| %.3g): %s\n",
                ctx.caps().device_name.c_str(), s.m, s.n, s.paths, s.rank, worst, norm, ok ? "ok" : "WRONG");
    return ok ? 0 : 1;
  } catch (const vkblr::Error& e) {
    std::fprintf(stderr, "vkblr load_layer: %s\n", e.what());
    return 1;
  }
}
