#include "layer_case.hpp"

#include <sstream>
#include <stdexcept>

namespace bench {

LayerCase parse_layer_case(const std::string& text) {
  LayerCase c;
  char s1 = 0, s2 = 0, s3 = 0, s4 = 0;
  std::istringstream in(text);
  in >> c.m >> s1 >> c.n >> s2 >> c.r >> s3 >> c.ntok >> s4 >> c.paths;
  if (in.fail() || s1 != ',' || s2 != ',' || s3 != ',' || s4 != ',') {
    throw std::invalid_argument("expected m,n,r,ntok,P, got " + text);
  }
  return c;
}

vkblr::BlrLayer random_layer(vkblr::Context& ctx, const LayerCase& c, bool sign_grads) {
  std::vector<vkblr::BlrPathInit> init;
  for (std::uint32_t p = 0; p < c.paths; ++p) {
    init.push_back({random_words(std::size_t{c.m} * c.r / 32, 10 + p), random_words(std::size_t{c.n} * c.r / 32, 20 + p),
                    random_floats(c.m, 30 + p, 0.02f, 0.07f), random_floats(c.r, 40 + p, 0.5f, 1.5f),
                    random_floats(c.n, 50 + p, 0.1f, 0.3f)});
  }
  return vkblr::make_blr_layer(ctx, c.m, c.n, c.r, init, sign_grads);
}

}  // namespace bench
