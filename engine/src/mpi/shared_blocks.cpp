// vkblr::mpi::SharedBlocks: the MPI shared-memory window of the
// shared-memory exchange.
#include <sys/statvfs.h>

#include <exception>
#include <format>

#include "vkblr/error.hpp"
#include "vkblr/mpi.hpp"

namespace vkblr::mpi {
namespace {

constexpr std::size_t kPageFloats = 1024;  // 4 KiB

// Floats from one block to the next: whole pages.
std::size_t stride_of(std::size_t floats) { return (floats + kPageFloats - 1) / kPageFloats * kPageFloats; }

// The window: `ranks` inputs and the result.
std::size_t window_bytes(std::size_t floats, int ranks) {
  return (static_cast<std::size_t>(ranks) + 1) * stride_of(floats) * sizeof(float);
}

}  // namespace

SharedBlocks::SharedBlocks(RankGroup& group, std::size_t floats, std::string_view what)
    : floats_(floats), stride_(stride_of(floats)), ranks_(group.size()) {
  require(group.exchange() == Exchange::shared_memory,
          "vkblr::mpi::SharedBlocks ({}): the group exchanges through {}, not shared memory", what,
          to_string(group.exchange()));
  group.barrier(what);  // every rank is here: the window's blocking collective is quick
  auto fail = [&](const char* call, int rc) {
    group.abort(std::format("{} ({}: shared-memory blocks of {} floats) failed (error {}); "
                            "VKBLR_MPI_EXCHANGE=messages exchanges through MPI messages instead",
                            call, what, floats, rc));
  };
  // rank 0 allocates the whole window (one mapping: page-aligned); the
  // others map it
  const std::size_t bytes = window_bytes(floats, ranks_);
  void* own = nullptr;
  int rc = MPI_Win_allocate_shared(static_cast<MPI_Aint>(group.rank() == 0 ? bytes : 0), sizeof(float),
                                   MPI_INFO_NULL, group.comm(), &own, &window_);
  if (rc != MPI_SUCCESS) fail("MPI_Win_allocate_shared", rc);
  MPI_Win_set_errhandler(window_, MPI_ERRORS_RETURN);
  MPI_Aint size = 0;
  int unit = 0;
  if ((rc = MPI_Win_shared_query(window_, 0, &size, &unit, &base_)) != MPI_SUCCESS) fail("MPI_Win_shared_query", rc);
  if ((rc = MPI_Win_lock_all(MPI_MODE_NOCHECK, window_)) != MPI_SUCCESS) fail("MPI_Win_lock_all", rc);
}

std::string SharedBlocks::lack_of_room(std::size_t floats, int ranks) {
  const std::size_t bytes = window_bytes(floats, ranks);
  struct statvfs fs {};
  if (statvfs("/dev/shm", &fs) != 0) return {};  // elsewhere: MPI decides
  const std::size_t free = static_cast<std::size_t>(fs.f_bavail) * fs.f_frsize;
  if (free >= bytes) return {};
  return std::format("/dev/shm has {} MiB free, the shared blocks need {} MiB (a container's --shm-size raises it)",
                     free >> 20, (bytes + (1u << 20) - 1) >> 20);
}

SharedBlocks::~SharedBlocks() {
  // MPI_Win_free waits for every rank. A rank unwinding an exception ends
  // the job through RankGroup::abort (mpi.hpp, "Failure"): it leaves the
  // window to the job's end rather than wait for ranks that never come.
  if (window_ == MPI_WIN_NULL || std::uncaught_exceptions() > 0) return;
  MPI_Win_unlock_all(window_);
  MPI_Win_free(&window_);
}

void SharedBlocks::sync() const { MPI_Win_sync(window_); }

}  // namespace vkblr::mpi
