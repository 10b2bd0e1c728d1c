// A rank that dies or hangs mid-run must end the whole job with an error,
// not leave the others waiting: `test_mpi_rank_failure kill|hang` under
// mpirun trains a small layer, and at step 3 the last rank kills itself
// (SIGKILL: the launcher notices) or stops taking part (an endless sleep:
// only the other ranks' collective deadline, 5 s after the first step,
// notices).
// tests/mpi/expect_job_failure.cmake checks that the job fails, with a
// message, within a bounded time; the program itself never succeeds.
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <thread>

#include "mpi/mpi_test.hpp"

using namespace vkblr;

int main(int argc, char** argv) {
  mpi::Session session(argc, argv);
  const bool hang = argc > 1 && std::strcmp(argv[1], "hang") == 0;
  mpi::RankGroupOptions group_options;
  group_options.timeout_s = 60;  // start-up and the first step (a loaded CI machine)
  mpi::RankGroup group(MPI_COMM_WORLD, group_options);
  try {
    ContextOptions options;
    options.device = group.device();
    Context ctx(options);
    const auto tokens = 32 * static_cast<std::uint32_t>(group.size());
    const vkt::mpi::Problem p = vkt::mpi::make_problem(32, 48, 32, 1, tokens, 1, 3);
    BlrLayer layer = make_blr_layer(ctx, p.m, p.n, p.r, p.start.init(), false);
    mpi::DistributedTrainer trainer(group, ctx, layer, tokens, vkt::mpi::config(p));
    Buffer x = ctx.upload(vkt::mpi::rows(p.x[0], p.n, trainer.slice().first, trainer.slice().count));
    Buffer target = ctx.upload(vkt::mpi::rows(p.target[0], p.m, trainer.slice().first, trainer.slice().count));
    trainer.add_batch(x, target);
    for (int step = 1; step <= 1000; ++step) {
      if (step == 3 && group.rank() == group.size() - 1) {
        std::fprintf(stderr, "rank %d: %s at step %d\n", group.rank(), hang ? "hanging" : "killing itself", step);
        std::fflush(stderr);
        if (!hang) std::raise(SIGKILL);
        for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
      }
      trainer.step(0, 0.01f, 1e-3f);
      if (step == 1) group.set_timeout_s(hang ? 5.0 : 20.0);  // kill: the launcher should be faster
      if (group.rank() == 0) std::printf("step %d done\n", step);
      std::fflush(stdout);
    }
  } catch (const std::exception& e) {
    group.abort(std::string("error: ") + e.what());
  }
  std::fprintf(stderr, "rank %d: the job outlived a dead rank\n", group.rank());
  return 1;
}
