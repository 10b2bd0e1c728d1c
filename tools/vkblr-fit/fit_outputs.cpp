#include "vkblr-fit/fit_outputs.hpp"

#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <utility>

#include "vkblr/error.hpp"
#include "vkblr/file_io.hpp"

namespace vkblr::fit {
namespace fs = std::filesystem;

bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  if (fs::equivalent(a, b, ec) && !ec) return true;
  std::error_code ec_a, ec_b;
  const fs::path ca = fs::weakly_canonical(a, ec_a), cb = fs::weakly_canonical(b, ec_b);
  return !ec_a && !ec_b && ca == cb;
}

void check_creatable(const std::string& path) {
  const fs::path target(path);
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::error_code ec;
  const fs::file_status dir_status = fs::status(dir, ec);
  require(dir_status.type() != fs::file_type::not_found, "--out: cannot write {}: directory {} does not exist", path,
          dir.string());
  require(fs::exists(dir_status), "--out: cannot write {}: {}: {}", path, dir.string(), ec.message());
  require(fs::is_directory(dir_status), "--out: cannot write {}: {} is not a directory", path, dir.string());
  require(!fs::is_directory(fs::status(target, ec)), "--out: cannot write {}: it is a directory", path);
  std::string probe = (dir / ("." + target.filename().string() + ".XXXXXX")).string();
  const int fd = ::mkstemp(probe.data());
  require(fd >= 0, "--out: cannot create {}: {}", path, std::strerror(errno));
  ::close(fd);
  ::unlink(probe.c_str());
}

FitOutputPaths fit_output_paths(const FitOptions& o) {
  const std::string name = fs::path(o.out).filename().string();
  require(!name.empty() && name != "." && name != "..",
          "--out '{}': the prefix needs a file name (as in --out dir/name), not a directory", o.out);
  return {o.out + ".safetensors", o.out + ".json", o.out + ".svg", o.out + ".ckpt"};
}

std::size_t prepare_fit_outputs(const FitOutputPaths& paths, const FitOptions& o) {
  std::vector<std::string> outputs{paths.safetensors, paths.json, paths.svg};
  if (o.checkpoint_every > 0) outputs.push_back(paths.checkpoint);
  const std::array<std::pair<const char*, const std::string*>, 4> inputs{{{"--weight", &o.weight_path},
                                                                          {"--activations", &o.activations_path},
                                                                          {"--resume", &o.resume},
                                                                          {"--eval", &o.eval}}};
  for (const std::string& out : outputs) {
    for (const auto& [flag, input] : inputs) {
      if (input->empty() || (out == paths.checkpoint && input == &o.resume)) continue;
      require(!same_file(out, *input), "--out {}: the output {} is the input {} {}: choose another --out", o.out, out,
              flag, *input);
    }
  }
  for (const std::string& out : outputs) check_creatable(out);
  std::size_t removed = 0;
  for (const std::string& out : {paths.safetensors, paths.json, paths.svg, paths.checkpoint}) {
    removed += remove_stale_temporaries(out);
  }
  return removed;
}

void write_fit_outputs(const FitOutputPaths& paths, std::string_view layer, std::string_view report,
                       std::string_view chart) {
  const FileToWrite files[] = {{paths.safetensors, layer}, {paths.json, report}, {paths.svg, chart}};
  write_files_atomic(files);
}

}  // namespace vkblr::fit
