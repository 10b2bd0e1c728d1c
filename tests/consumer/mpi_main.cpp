// Links against an installed vkblr::mpi (built, not run: it needs mpirun).
#include <cstdio>
#include <vkblr/mpi.hpp>

int main(int argc, char** argv) {
  vkblr::mpi::Session mpi(argc, argv);
  vkblr::mpi::RankGroup group;
  const vkblr::mpi::TokenSlice slice = group.slice(1024);
  std::printf("rank %d of %d: tokens %u..%u\n", group.rank(), group.size(), slice.first, slice.first + slice.count);
  return 0;
}
