#include "vkblr/model/blr_download.hpp"

#include "vkblr/error.hpp"

namespace vkblr::model {

std::vector<BlrPathInit> download_blr_paths(const BlrLayer& layer) {
  std::vector<float> scales;
  if (layer.scales) scales = layer.scales.download<float>();
  const auto segment = [&](std::size_t p, Scale which, const Buffer& own, std::uint32_t length) {
    if (!layer.scales) return own.download<float>(length);
    const ScaleSegment s = layer.segment(p, which);
    require(s.length == length && std::uint64_t{s.offset} + s.length <= scales.size(),
            "download_blr_paths: path {} scale segment {}+{} does not fit the layer ({} scales, {} wanted)", p,
            s.offset, s.length, scales.size(), length);
    return std::vector<float>(scales.begin() + s.offset, scales.begin() + s.offset + s.length);
  };
  std::vector<BlrPathInit> out;
  out.reserve(layer.paths.size());
  const std::uint64_t words = layer.r / 32;
  for (std::size_t p = 0; p < layer.paths.size(); ++p) {
    const BlrPath& path = layer.paths[p];
    BlrPathInit init;
    init.bits_u = path.bits_u.download<std::uint32_t>(std::uint64_t{layer.m} * words);
    init.bits_v = path.bits_v.download<std::uint32_t>(std::uint64_t{layer.n} * words);
    init.h = segment(p, Scale::h, path.h, layer.m);
    init.l = segment(p, Scale::l, path.l, layer.r);
    init.g = segment(p, Scale::g, path.g, layer.n);
    out.push_back(std::move(init));
  }
  return out;
}

std::vector<io::BlrModelLayer> download_blr_layers(LlamaWeights& weights, std::span<const std::string> names,
                                                   io::ScaleDtype scale_dtype,
                                                   std::span<const io::InputChecksums> inputs,
                                                   const std::string& tool_version) {
  require(inputs.empty() || inputs.size() == names.size(),
          "download_blr_layers: {} input checksums for {} layers (want one per layer, or none)", inputs.size(),
          names.size());
  std::vector<io::BlrModelLayer> layers;
  layers.reserve(names.size());
  for (std::size_t i = 0; i < names.size(); ++i) {
    const Projection* p = weights.projection(names[i]);
    require(p != nullptr, "download_blr_layers: '{}' is not a projection of the model's blocks", names[i]);
    require(p->is_blr(), "download_blr_layers: the projection '{}' is dense, not a blr layer", names[i]);
    const BlrLayer& layer = *p->blr;
    io::BlrModelLayer out;
    out.name = names[i];
    out.result.shape = {layer.m, layer.n, layer.r, static_cast<std::uint32_t>(layer.paths.size())};
    out.result.scale_dtype = scale_dtype;
    out.result.paths = download_blr_paths(layer);
    out.result.tool_version = tool_version;
    if (!inputs.empty()) out.result.inputs = inputs[i];
    layers.push_back(std::move(out));
  }
  return layers;
}

}  // namespace vkblr::model
