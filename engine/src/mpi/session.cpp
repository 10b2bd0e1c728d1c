// vkblr::mpi::Session: MPI initialised for a scope.
#include "vkblr/error.hpp"
#include "vkblr/mpi.hpp"

namespace vkblr::mpi {

Session::Session(int& argc, char**& argv) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) return;
  int provided = 0;
  require(MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided) == MPI_SUCCESS,
          "vkblr::mpi::Session: MPI_Init_thread failed");
  owns_ = true;
}

Session::~Session() {
  if (owns_) MPI_Finalize();
}

}  // namespace vkblr::mpi
