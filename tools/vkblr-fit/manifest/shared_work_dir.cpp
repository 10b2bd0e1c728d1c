#include "vkblr-fit/manifest/shared_work_dir.hpp"

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <format>
#include <random>
#include <vector>

#include "vkblr/io/binary_file.hpp"
#include "vkblr/io/checksum.hpp"
#include "vkblr-fit/io_names.hpp"
#include "vkblr-fit/fit_outputs.hpp"
#include "vkblr/error.hpp"
#include "vkblr/file_io.hpp"

namespace vkblr::fit {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kTokenPrefix = "token:", kErrorPrefix = "error:";

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "?";
  return name;
}

// 16 hex digits that no other run shares: of random bits, the time, the
// host and the process.
std::string unique_value() {
  std::random_device random;
  const std::string seed = std::format("{} {} {} {} {}", random(), random(),
                                       std::chrono::system_clock::now().time_since_epoch().count(), host_name(),
                                       getpid());
  return checksum_hex(xxh3_64(seed));
}

std::string token_path(const std::string& work_dir, const std::string& value) {
  return (fs::path(work_dir) / (".ranks-" + value)).string();
}

// What is wrong with the work directory as this rank sees it (empty: it
// holds rank 0's token and takes a new file).
std::string problem_seen(const std::string& work_dir, const std::string& value, int rank) {
  const std::string token = token_path(work_dir, value);
  try {
    std::error_code ec;
    if (!fs::exists(token, ec)) return std::format("does not find the file {} that rank 0 wrote", token);
    const std::string seen = read_whole_file(token, 64, "work directory token");
    if (seen != value) return std::format("reads '{}' in {}, not rank 0's '{}'", seen, token, value);
    check_creatable(std::format("{}-{}", token, rank));
  } catch (const std::exception& e) {
    return e.what();
  }
  return {};
}

}  // namespace

void prepare_shared_work_dir(FitRanks& ranks, const std::string& work_dir, const std::string& out,
                             const std::function<void()>& prepare) {
  if (ranks.size() == 1) {
    prepare();
    return;
  }
  std::string outcome;  // rank 0's: its token's value, or its error
  if (ranks.rank() == 0) {
    try {
      prepare();
      const std::string value = unique_value();
      write_file_atomic(token_path(work_dir, value), value);
      outcome = std::string(kTokenPrefix) + value;
    } catch (const std::exception& e) {
      outcome = std::string(kErrorPrefix) + e.what();
    }
  }
  const std::string zero = ranks.gather(outcome, "rank 0's work directory", 0)[0];
  if (zero.starts_with(kErrorPrefix)) fail("{}", zero.substr(kErrorPrefix.size()));
  const std::string value = zero.substr(kTokenPrefix.size());
  std::string problem = problem_seen(work_dir, value, ranks.rank());
  if (!problem.empty()) problem = std::format("rank {} (host {}) {}", ranks.rank(), host_name(), problem);
  const std::vector<std::string> problems = ranks.gather(problem, "the work directory check", 0);
  if (ranks.rank() == 0) {
    std::error_code ec;
    fs::remove(token_path(work_dir, value), ec);
  }
  std::string list;
  for (const std::string& p : problems) {
    if (!p.empty()) list += "\n  " + p;
  }
  require(list.empty(), "--out {}: the work directory {} must be one directory every rank sees and can write:{}\n"
          "Run the ranks on one host, or give --out a path on a file system every rank shares.", out, work_dir, list);
}

}  // namespace vkblr::fit
