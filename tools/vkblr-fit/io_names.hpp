// io_names.hpp — vkblr-fit is built on vkblr::io (the blr layer file
// format, safetensors and .npy, checkpoints, host matrices, layer shapes
// and their bits: engine/include/vkblr/io/): its names are vkblr::fit's
// too. Every vkblr-fit file that uses a vkblr/io header includes this one.
#pragma once

namespace vkblr::io {}

namespace vkblr::fit {
using namespace vkblr::io;
}  // namespace vkblr::fit
