// vkblr/vkblr.hpp — what a trainer includes: the context and its buffers,
// the Recorder and Graphs, the blr layer (forward, backward, sign
// gradients), the sign optimizer, BlrTrainer, the profiler, errors and
// atomic file writes.
//
// The kernel builders (vkblr/ops.hpp, vkblr/gemm.hpp: the GEMMs, staging,
// reductions, optimizer steps each as one Dispatch) and the blr ops'
// transients shared between layers (vkblr/ops/blr_lane.hpp) are the opt-in
// layer below: a trainer that records its own ops includes them itself.
// MPI is vkblr/mpi.hpp (the vkblr::mpi library).
#pragma once

#include "vkblr/blr.hpp"
#include "vkblr/buffer.hpp"
#include "vkblr/context.hpp"
#include "vkblr/error.hpp"
#include "vkblr/file_io.hpp"
#include "vkblr/half.hpp"
#include "vkblr/profiler.hpp"
#include "vkblr/recorder.hpp"
#include "vkblr/sign.hpp"
#include "vkblr/trainer.hpp"
