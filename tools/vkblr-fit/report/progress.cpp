#include "vkblr-fit/report/progress.hpp"

#include <unistd.h>

namespace vkblr::fit {

ProgressStyle progress_style_for(std::FILE* out, bool quiet) {
  if (quiet) return ProgressStyle::quiet;
  return ::isatty(::fileno(out)) ? ProgressStyle::bar : ProgressStyle::lines;
}

}  // namespace vkblr::fit
