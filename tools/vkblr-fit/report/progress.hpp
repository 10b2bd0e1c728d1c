// progress.hpp — how vkblr-fit shows progress on `out`: a bar redrawn in
// place on a terminal, plain lines in a log or a pipe, nothing when quiet
// (report/stages.hpp draws the stages' lines).
#pragma once

#include <cstdio>

namespace vkblr::fit {

enum class ProgressStyle { bar, lines, quiet };

// bar when `out` is a terminal, lines otherwise, quiet with `quiet`.
ProgressStyle progress_style_for(std::FILE* out, bool quiet);

}  // namespace vkblr::fit
