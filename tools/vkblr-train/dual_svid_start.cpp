#include "vkblr-train/dual_svid_start.hpp"

#include <span>
#include <string>
#include <vector>

#include "vkblr-fit/init/device_matrix.hpp"
#include "vkblr-fit/init/gpu_dual_svid.hpp"
#include "vkblr/error.hpp"
#include "vkblr/io/bpw.hpp"
#include "vkblr/io/checksum.hpp"

namespace vkblr::train {

io::BlrModel dual_svid_start(Context& ctx, const io::LlamaCheckpoint& checkpoint, const DualSvidStart& settings,
                             const std::function<void(std::size_t, std::size_t)>& done,
                             std::vector<std::vector<fit::SignMagnitudes>>* magnitudes) {
  std::vector<const io::LlamaParameter*> linear;
  for (const io::LlamaParameter& p : checkpoint.parameters()) {
    if (p.linear_in_block) linear.push_back(&p);
  }
  io::BlrModel model;
  model.tool_version = std::string(vkblr::version());
  for (std::size_t k = 0; k < linear.size(); ++k) {
    const io::LlamaParameter& p = *linear[k];
    const auto m = static_cast<std::uint32_t>(p.shape[0]), n = static_cast<std::uint32_t>(p.shape[1]);
    io::LayerShape shape{m, n, 0, settings.paths};
    try {
      shape.rank = settings.rank ? *settings.rank
                                 : io::rank_for_bpw(m, n, settings.paths, io::ScaleDtype::f16, *settings.bpw);
      io::check_layer_shape(shape, "--init dual-svid");
    } catch (const Error& e) {
      fail("--init dual-svid: layer {} ({}x{}): {}", p.name, m, n, e.what());
    }
    const std::vector<float> w = checkpoint.read_f32(p.name);
    fit::DeviceMatrix w_device{ctx.upload(w, "train.init.w"), m, n};
    io::BlrModelLayer layer;
    layer.name = p.name;
    layer.result.shape = shape;
    layer.result.scale_dtype = io::ScaleDtype::f16;
    std::vector<fit::SignMagnitudes> signs;
    layer.result.paths = fit::gpu_dual_svid_init(ctx, w_device, shape, {.seed = settings.seed},
                                                 magnitudes ? &signs : nullptr);
    if (magnitudes) magnitudes->push_back(std::move(signs));
    layer.result.tool_version = model.tool_version;
    layer.result.inputs.weight = io::xxh3_64(std::as_bytes(std::span(w)));
    model.layers.push_back(std::move(layer));
    done(k + 1, linear.size());
  }
  return model;
}

}  // namespace vkblr::train
