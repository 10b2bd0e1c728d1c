// layer_schedule.hpp — which process of a manifest run fits which layers
// (run_manifest.hpp: the layers spread over the ranks of an MPI job).
//
// Each layer to schedule has a cost, an estimate of its work (layer_cost).
// schedule_layers is the LPT rule (longest processing time first): the
// layers in order of decreasing cost, ties in the order given, each to the
// rank whose layers so far cost least, ties to the lowest rank. It depends
// on nothing but the costs and the rank count, so every rank of a job
// computes the same schedule. The spread is bounded: when the most loaded
// rank got its last layer it was the least loaded one, so its total exceeds
// any other rank's by at most that layer's cost (and LPT's largest total
// is at most 4/3 of the best possible one's). The largest layer goes to
// rank 0. With more ranks than layers, the last ranks get none.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "vkblr-fit/fit_options.hpp"
#include "vkblr/io/layer_shape.hpp"
#include "vkblr-fit/io_names.hpp"

namespace vkblr::fit {

// The layers (indices into `costs`) of each of `ranks` ranks, each rank's
// in increasing index order: the order a rank fits them in (the order
// within a rank does not change its total; the manifest's order keeps the
// progress log in that order, and one process fits the layers as the
// manifest lists them). Throws vkblr::Error for ranks < 1 or a cost that
// is negative or not finite.
std::vector<std::vector<std::size_t>> schedule_layers(std::span<const double> costs, int ranks);

// The sum of the costs of each rank's layers.
std::vector<double> schedule_loads(std::span<const double> costs,
                                   const std::vector<std::vector<std::size_t>>& schedule);

// How much longer than the usual deadline a rank waits for the others once
// its share of `schedule` is done: twice the largest share's cost at this
// rank's pace (`done_s` seconds for the work of cost `done_cost` it did),
// or +infinity (no deadline) when it did no work to measure that pace by.
double wait_for_others_s(std::span<const double> costs, const std::vector<std::vector<std::size_t>>& schedule,
                         double done_cost, double done_s);

// The cost of a layer of `shape` with the settings `resolved`
// (resolve_fit_defaults'): one unit per value of W and of the rows of X the
// fit reads, and, when it is to be fitted (`fit`; not when --resume will
// find it done), steps × batch × (m + n) × rank × paths: proportional to the
// multiply-adds of its training steps, whose GEMMs are each batch × m × rank
// or batch × n × rank per path (forward, backward, sign gradients). The
// dense targets (tokens × m × n once) and the init are left out: for the
// layers of a checkpoint, training's steps outweigh them.
double layer_cost(const LayerShape& shape, const FitOptions& resolved, bool fit);

}  // namespace vkblr::fit
