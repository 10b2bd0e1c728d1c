// vkblr::mpi::RankGroup: the communicator, local ranks, the device and token
// mapping, and the deadline every collective waits under.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <format>
#include <string>
#include <thread>

#include "rank_order_sum.hpp"
#include "vkblr/error.hpp"
#include "vkblr/mpi.hpp"

namespace vkblr::mpi {
namespace {

constexpr double kDefaultTimeout = 300.0;

double timeout_from(double requested) {
  if (requested != 0) {
    require(requested > 0 && std::isfinite(requested), "vkblr::mpi::RankGroup: timeout_s = {}", requested);
    return requested;
  }
  const char* env = std::getenv("VKBLR_MPI_TIMEOUT");
  if (env == nullptr || *env == '\0') return kDefaultTimeout;
  char* end = nullptr;
  const double v = std::strtod(env, &end);
  require(*end == '\0' && v > 0 && std::isfinite(v), "vkblr::mpi::RankGroup: VKBLR_MPI_TIMEOUT={} (seconds > 0)", env);
  return v;
}

Exchange exchange_from(Exchange requested) {
  if (requested != Exchange::automatic) return requested;
  const char* env = std::getenv("VKBLR_MPI_EXCHANGE");
  if (env == nullptr || *env == '\0') return Exchange::automatic;
  const std::string_view v = env;
  if (v == "shared") return Exchange::shared_memory;
  if (v == "messages") return Exchange::messages;
  throw Error(std::format("vkblr::mpi::RankGroup: VKBLR_MPI_EXCHANGE={} (shared or messages)", v));
}

std::string error_string(int rc) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(rc, text, &length) != MPI_SUCCESS) return std::format("MPI error {}", rc);
  return std::string(text, static_cast<std::size_t>(length));
}

}  // namespace

RankGroup::RankGroup(MPI_Comm comm, const RankGroupOptions& options) : timeout_s_(timeout_from(options.timeout_s)) {
  require(MPI_Comm_dup(comm, &comm_) == MPI_SUCCESS, "vkblr::mpi::RankGroup: MPI_Comm_dup failed");
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  MPI_Comm local = MPI_COMM_NULL;
  check(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local), "MPI_Comm_split_type",
        "local ranks");
  MPI_Comm_rank(local, &local_rank_);
  MPI_Comm_size(local, &local_size_);
  MPI_Comm_free(&local);
  sum_threads_ = detail::sum_threads_for(options.sum_threads, local_size_);
  try {
    choose_exchange(options.exchange);
  } catch (...) {
    MPI_Comm_free(&comm_);
    throw;
  }
}

void RankGroup::choose_exchange(Exchange requested) {
  // every rank asks for the same exchange (a bad VKBLR_MPI_EXCHANGE on one
  // rank fails every rank), and the shared one only on one host
  std::string bad;
  Exchange wanted = Exchange::automatic;
  try {
    wanted = exchange_from(requested);
  } catch (const Error& e) {
    bad = e.what();
  }
  const std::vector<std::string> asked =
      allgather_strings(bad.empty() ? std::string(to_string(wanted)) : "error: " + bad, "the exchange");
  for (int r = 0; r < size_; ++r) {
    const std::string& a = asked[static_cast<std::size_t>(r)];
    require(!a.starts_with("error: "), "{} (rank {})", a.substr(7), r);
    require(a == asked[0], "vkblr::mpi::RankGroup: the ranks ask for different exchanges: {} on rank 0 vs {} on rank {}",
            asked[0], a, r);
  }
  const bool one_host = local_size_ == size_;
  require(wanted != Exchange::shared_memory || one_host,
          "vkblr::mpi::RankGroup: the shared-memory exchange needs every rank on one host ({} of {} ranks are on "
          "this one)",
          local_size_, size_);
  exchange_ = wanted != Exchange::automatic ? wanted
              : one_host && size_ > 1      ? Exchange::shared_memory
                                           : Exchange::messages;
}

RankGroup::~RankGroup() {
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

const char* to_string(Exchange exchange) noexcept {
  switch (exchange) {
    case Exchange::automatic: return "automatic";
    case Exchange::shared_memory: return "shared_memory";
    case Exchange::messages: return "messages";
  }
  return "?";
}

void RankGroup::set_timeout_s(double seconds) {
  require(seconds > 0 && !std::isnan(seconds), "vkblr::mpi::RankGroup::set_timeout_s: {} s", seconds);
  timeout_s_ = seconds;
}

std::string RankGroup::device() const {
  const char* env = std::getenv("VKBLR_DEVICE");
  const std::string_view want = env != nullptr ? env : "";
  if (!want.empty() || local_size_ <= 1) return device_for_local_rank(local_rank_, local_size_, want, {});
  return device_for_local_rank(local_rank_, local_size_, want, list_devices());
}

TokenSlice RankGroup::slice(std::uint32_t total) const {
  const auto n = static_cast<std::uint32_t>(size_);
  require(total >= n, "vkblr::mpi: a batch of {} tokens over {} ranks (each rank needs a token)", total, n);
  const detail::Chunk c = detail::chunk_of(total, static_cast<std::size_t>(rank_), n);
  return {static_cast<std::uint32_t>(c.first), static_cast<std::uint32_t>(c.count)};
}

void RankGroup::abort(std::string_view message, int code) const {
  const std::string line = std::format("vkblr::mpi: rank {}: {}\n", rank_, message);
  std::fputs(line.c_str(), stderr);
  std::fflush(stderr);
  MPI_Abort(comm_ != MPI_COMM_NULL ? comm_ : MPI_COMM_WORLD, code);
  std::abort();  // MPI_Abort does not return
}

void RankGroup::check(int rc, const char* call, std::string_view what) const {
  if (rc != MPI_SUCCESS) abort(std::format("{} ({}) failed: {}", call, what, error_string(rc)));
}

void RankGroup::wait(MPI_Request& request, const char* call, std::string_view what) {
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  const auto deadline =
      std::isinf(timeout_s_)
          ? clock::time_point::max()
          : start + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(timeout_s_));
  // Poll: MPI_Test also drives the nonblocking collective. Yield while the
  // wait is short; then sleep between polls, so a rank that waits leaves the
  // cores to ranks still computing (several ranks may share a host's cores).
  for (int polls = 0;; ++polls) {
    int done = 0;
    check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), call, what);
    if (done) return;
    const auto now = clock::now();
    if (now > deadline) {
      abort(std::format("{} ({}) timed out after {} s: another rank died, hung or lags too far behind "
                        "(RankGroupOptions::timeout_s, VKBLR_MPI_TIMEOUT); aborting the job",
                        call, what, timeout_s_));
    }
    if (now - start < std::chrono::milliseconds(2)) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }
}

void RankGroup::barrier(std::string_view what) {
  MPI_Request request = MPI_REQUEST_NULL;
  check(MPI_Ibarrier(comm_, &request), "MPI_Ibarrier", what);
  wait(request, "MPI_Ibarrier", what);
}

double RankGroup::sum(double value, std::string_view what) {
  std::vector<double> all(static_cast<std::size_t>(size_));
  MPI_Request request = MPI_REQUEST_NULL;
  check(MPI_Iallgather(&value, 1, MPI_DOUBLE, all.data(), 1, MPI_DOUBLE, comm_, &request), "MPI_Iallgather", what);
  wait(request, "MPI_Iallgather", what);
  double s = 0;
  for (double v : all) s += v;
  return s;
}

std::vector<std::string> RankGroup::allgather_strings(const std::string& bytes, std::string_view what) {
  require(bytes.size() <= 0x7fffffff, "vkblr::mpi: {}: a string of {} bytes", what, bytes.size());
  const int length = static_cast<int>(bytes.size());
  std::vector<int> lengths(static_cast<std::size_t>(size_)), displs(static_cast<std::size_t>(size_));
  MPI_Request request = MPI_REQUEST_NULL;
  check(MPI_Iallgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, comm_, &request), "MPI_Iallgather", what);
  wait(request, "MPI_Iallgather", what);
  std::int64_t total = 0;
  for (int r = 0; r < size_; ++r) {
    displs[static_cast<std::size_t>(r)] = static_cast<int>(total);
    total += lengths[static_cast<std::size_t>(r)];
    require(total <= 0x7fffffff, "vkblr::mpi: {}: {} bytes from all ranks", what, total);
  }
  std::string all(static_cast<std::size_t>(total), '\0');
  check(MPI_Iallgatherv(bytes.data(), length, MPI_CHAR, all.data(), lengths.data(), displs.data(), MPI_CHAR, comm_,
                        &request),
        "MPI_Iallgatherv", what);
  wait(request, "MPI_Iallgatherv", what);
  std::vector<std::string> out;
  for (int r = 0; r < size_; ++r) {
    out.push_back(all.substr(static_cast<std::size_t>(displs[static_cast<std::size_t>(r)]),
                             static_cast<std::size_t>(lengths[static_cast<std::size_t>(r)])));
  }
  return out;
}

}  // namespace vkblr::mpi
