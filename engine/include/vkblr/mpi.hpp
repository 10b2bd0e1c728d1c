// vkblr/mpi.hpp — data-parallel training of a blr layer across MPI ranks:
// the optional library vkblr::mpi (CMake option VKBLR_MPI; vkblr itself
// never needs MPI).
//
// Every rank drives one Vulkan device (RankGroup::device) and trains the
// same layer on its slice of every batch's tokens. A step
// (DistributedTrainer::step) is
//
//   1. on each rank, BlrTrainer's split graph A on its slice: forward, loss,
//      backward; the GPU copies the gradients (every sign matrix's kept G,
//      the scale gradients) and the host the loss partials into the
//      trainer's GradientBlock, one contiguous host-visible buffer
//   2. RankGroup::allreduce_sum of the block, deterministic (below)
//   3. on each rank, graph B on the summed block: the GPU copies it back,
//      then the non-finite guard, the sign steps and Adam.
//
// Every rank runs the same kernels on the same inputs, so bitmaps, scales
// and optimizer state stay identical on every rank, bit for bit — on
// devices of one kind and driver, under one GEMM policy (the start-up
// check compares them).
//
// Reduction order (allreduce_sum): the F floats are cut into N contiguous
// chunks, chunk s = [s·⌊F/N⌋ + min(s, F mod N), +⌊F/N⌋ + (s < F mod N));
// rank s sums each element of chunk s over the ranks in rank order,
// ((0 + v₀) + v₁) + … + v_{N−1} in f32, and every rank receives the sums.
// Each element is summed once, by one rank, in one order, so every rank
// receives the same bits — the bits one rank gets by accumulating the
// ranks' slices as micro-batches in rank order (BlrTrainer::accumulate;
// 0 + v = v for v not −0). MPI_Allreduce is not used: it promises neither
// a fixed order nor the same bits on every rank.
//
// Exchange (RankGroupOptions::exchange): when every rank is on one host,
// DistributedTrainer's blocks meet in one MPI shared-memory window
// (SharedBlocks) that every rank's device imports: graph A writes each
// rank's gradients straight into its input there and graph B reads the
// sums from the window's result; between the two, each rank sums its
// chunk of every rank's input in the order above (RankGroup::sum_shared,
// a barrier before and after). Otherwise (ranks on several hosts, or a
// device that refuses that memory) MPI messages
// (RankGroup::allreduce_sum): rank s receives chunk s of every rank
// (MPI_Ialltoallv), sums it, and the summed chunks go to every rank
// (MPI_Iallgatherv, in place). Both give the same bits. A rank's sums run
// on a few threads (RankGroupOptions::sum_threads), each element in one
// thread, so the thread count changes no bit either.
//
// Copies: device → block is one GPU copy per gradient buffer inside graph
// A; block → device is one GPU copy per gradient buffer inside graph B.
// With shared blocks those copies write this rank's input in the window
// and read the result there: the host copies nothing, it only sums.
//
// Tokens: a global batch of T tokens is sliced in rank order (slice()):
// rank s takes ⌊T/N⌋ tokens, one more when s < T mod N, after those of
// ranks 0..s−1. Every rank's dy uses the global normaliser
// (BlrTrainerConfig::loss_norm, L = ½‖y − target‖² / loss_norm over all T
// tokens), so the summed gradients are those of all T tokens.
//
// Failure: the communicator returns errors (MPI_ERRORS_RETURN) and every
// collective is nonblocking, polled against a deadline
// (RankGroupOptions::timeout_s). An MPI error or a passed deadline prints
// "vkblr::mpi: rank R: ..." on stderr and calls MPI_Abort, which ends every
// rank of the job: nothing waits forever. A rank that dies is usually
// noticed first by the launcher (Open MPI's mpirun ends the job when a
// rank is killed or exits without MPI_Finalize); a rank that hangs is
// caught by the others' deadline. Errors every rank sees alike (bad
// arguments, the start-up agreement check) throw vkblr::Error on every
// rank. A caller that catches an error of one rank only should end the job
// with RankGroup::abort: finalizing would leave the others waiting until
// their deadline.
//
// Threading: one thread per rank calls vkblr::mpi (MPI_THREAD_FUNNELED).
// Every collective here is called by every rank of the group, in the same
// order, with the same arguments unless a comment says otherwise.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "vkblr/blr.hpp"
#include "vkblr/context.hpp"
#include "vkblr/trainer.hpp"

namespace vkblr::mpi {

// MPI for a scope: MPI_Init_thread (MPI_THREAD_FUNNELED) at construction,
// MPI_Finalize at destruction; neither when MPI was initialised already.
// Throws Error when MPI cannot be initialised.
class Session {
 public:
  Session(int& argc, char**& argv);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

 private:
  bool owns_ = false;
};

// How DistributedTrainer sums the gradient blocks over the ranks (the same
// bits either way).
enum class Exchange {
  automatic,      // $VKBLR_MPI_EXCHANGE (shared | messages), else shared_memory
                  // when every rank of the group is on one host, else messages
  shared_memory,  // SharedBlocks + sum_shared; every rank on one host
  messages,       // allreduce_sum; ranks on any hosts
};
const char* to_string(Exchange exchange) noexcept;

struct RankGroupOptions {
  // Longest a collective waits for the other ranks before it aborts the
  // job, in seconds (> 0). 0: $VKBLR_MPI_TIMEOUT, else 300. It bounds the
  // slowest rank's lead too: a step's exchange waits for every rank's graph
  // A, the first one also for every rank's start-up.
  double timeout_s = 0;
  // The same on every rank (the constructor checks: Error on every rank).
  Exchange exchange = Exchange::automatic;
  // Threads of this rank's sums in allreduce_sum and sum_shared (the
  // calling one included); 0: 1 to 8, the cores this rank may run on, or
  // its share of the host's when it may run on all (mpirun binds each rank
  // to one core unless given --bind-to none or --map-by ...:PE=k).
  unsigned sum_threads = 0;
};

// Tokens [first, first + count) of a global batch.
struct TokenSlice {
  std::uint32_t first = 0, count = 0;
};

// Named values that must be equal on every rank (RankGroup::check_agreement).
class Fingerprint {
 public:
  void add(std::string name, std::string value);
  // value = a 64-bit FNV-1a hash of the bytes, in hex
  void add_hash(std::string name, std::span<const std::byte> bytes);
  // What makes the same kernels give the same bits on every rank: the vkblr
  // version ("vkblr version"), the device and driver ("device") and every
  // field of the context's GEMM policy ("gemm policy <field>").
  void add_device(const Context& ctx);
  const std::vector<std::pair<std::string, std::string>>& fields() const noexcept { return fields_; }

 private:
  std::vector<std::pair<std::string, std::string>> fields_;
};

// The device of the rank with local rank `local_rank` of `local_size` ranks
// on its host, as a ContextOptions::device string. `env` is VKBLR_DEVICE:
// a comma-separated list gives entry local_rank mod its length ("0,1";
// "H200,H200"); one entry is every rank's. Without it: "" (the Context's
// own choice) for a lone rank, else the index of device local_rank mod k
// among the k devices of the best kind in `devices` (discrete GPUs, else
// integrated, virtual, CPU), so ranks of a host spread over its GPUs.
std::string device_for_local_rank(int local_rank, int local_size, std::string_view env,
                                  const std::vector<Caps>& devices);

// The ranks of a communicator training one model. Owns a duplicate of the
// communicator (MPI_ERRORS_RETURN set on it); MPI must be initialised and
// outlive the group.
class SharedBlocks;

class RankGroup {
 public:
  // Collective over `comm`. Throws Error on every rank for a bad timeout or
  // exchange, when the ranks ask for different exchanges, or for
  // Exchange::shared_memory over ranks on several hosts.
  explicit RankGroup(MPI_Comm comm = MPI_COMM_WORLD, const RankGroupOptions& options = {});
  ~RankGroup();
  RankGroup(const RankGroup&) = delete;
  RankGroup& operator=(const RankGroup&) = delete;

  int rank() const noexcept { return rank_; }
  int size() const noexcept { return size_; }
  // Rank and rank count on this host (MPI_Comm_split_type, MPI_COMM_TYPE_SHARED).
  int local_rank() const noexcept { return local_rank_; }
  int local_size() const noexcept { return local_size_; }
  double timeout_s() const noexcept { return timeout_s_; }
  // DistributedTrainer's exchange (never automatic) and the sum threads.
  Exchange exchange() const noexcept { return exchange_; }
  unsigned sum_threads() const noexcept { return sum_threads_; }
  // The deadline of later collectives (e.g. a long one over start-up, a
  // shorter one per step). Not collective. Throws Error unless > 0;
  // +infinity: no deadline (a rank that dies still ends the job through
  // the launcher; one that hangs is then not noticed).
  void set_timeout_s(double seconds);
  MPI_Comm comm() const noexcept { return comm_; }

  // This rank's device (device_for_local_rank with $VKBLR_DEVICE; lists the
  // devices only when it must). Put it in ContextOptions::device.
  std::string device() const;
  // This rank's slice of a global batch of `total` tokens (order above).
  // Throws Error when total < size() (a rank would get no token).
  TokenSlice slice(std::uint32_t total) const;

  // Collectives; `what` names the exchange in error messages.
  // Replaces values (the same length on every rank) by their sum over the
  // ranks, in the reduction order above, through MPI messages. Throws
  // Error (before any communication) for more than 2^31 − 1 floats.
  void allreduce_sum(std::span<float> values, std::string_view what);
  // The sum of every rank's value, in rank order (f64).
  double sum(double value, std::string_view what);
  void barrier(std::string_view what);
  // The shared-memory exchange without the copies: every rank has written
  // its input of `blocks`; on return the result holds the rank-order sums
  // (each rank sums its chunk), on every rank. Exchange::shared_memory
  // only (Error otherwise, on every rank).
  void sum_shared(const SharedBlocks& blocks, std::string_view what);
  // Every rank's `bytes` (any length each, up to 2^31 − 1 in all), in rank
  // order.
  std::vector<std::string> allgather_strings(const std::string& bytes, std::string_view what);
  // Compares every field of the ranks' fingerprints; when any differs,
  // throws Error on every rank naming each differing field with its values
  // and ranks ("vkblr::mpi: ranks disagree: gscale = 1024 on ranks 0, 2 vs
  // 512 on rank 1; m = ...").
  void check_agreement(const Fingerprint& fingerprint);

  // Prints "vkblr::mpi: rank R: message" on stderr and ends the whole job
  // (MPI_Abort with `code`). Not collective.
  [[noreturn]] void abort(std::string_view message, int code = 1) const;

 private:
  // Polls `request` until it completes; aborts on an error or the deadline.
  void wait(MPI_Request& request, const char* call, std::string_view what);
  // Collective: sets exchange_ (the constructor's checks).
  void choose_exchange(Exchange requested);
  // Aborts unless rc is MPI_SUCCESS.
  void check(int rc, const char* call, std::string_view what) const;
  // allreduce_sum's two exchanges
  void sum_by_messages(std::span<float> values, std::string_view what);

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1;
  double timeout_s_ = 0;
  Exchange exchange_ = Exchange::messages;
  unsigned sum_threads_ = 1;
  std::vector<float> chunks_;  // allreduce_sum: this rank's chunk from every rank
};

// Blocks of `floats` floats in host memory that every rank of a one-host
// group maps (one MPI shared-memory window): one input per rank and the
// result (RankGroup::sum_shared), each starting on a 4 KiB page and
// padded to whole pages (padded_bytes()): (N + 1) blocks of host memory.
class SharedBlocks {
 public:
  // Collective (a barrier, then MPI_Win_allocate_shared). The group must
  // outlive the blocks. Error (every rank) unless the group's exchange is
  // shared_memory; an MPI failure aborts the job naming the call.
  SharedBlocks(RankGroup& group, std::size_t floats, std::string_view what);
  ~SharedBlocks();
  SharedBlocks(const SharedBlocks&) = delete;
  SharedBlocks& operator=(const SharedBlocks&) = delete;

  // Why this host cannot hold the window of `ranks` inputs and a result of
  // `floats` floats each ("" where it can, as far as this rank can tell):
  // Open MPI backs it with a file in /dev/shm, which containers often
  // keep small (64 MiB under Docker's default), and it fails the window
  // when the file does not fit. Not collective.
  static std::string lack_of_room(std::size_t floats, int ranks);

  std::size_t floats() const noexcept { return floats_; }
  std::size_t padded_bytes() const noexcept { return stride_ * sizeof(float); }
  float* input(int rank) const noexcept { return base_ + static_cast<std::size_t>(rank) * stride_; }
  float* result() const noexcept { return base_ + static_cast<std::size_t>(ranks_) * stride_; }
  // MPI_Win_sync: this rank's stores to the window become visible to the
  // others and theirs to this rank, around a barrier (the window stays in
  // one passive-target epoch for its life).
  void sync() const;

 private:
  MPI_Win window_ = MPI_WIN_NULL;
  float* base_ = nullptr;
  std::size_t floats_ = 0, stride_ = 0;
  int ranks_ = 0;
};

struct DistributedOptions {
  // Measurement: a barrier before each exchange, so StepTiming tells the
  // wait for slower ranks (wait_s) from the exchange itself (exchange_s).
  bool timing_barrier = false;
};

// Wall-clock seconds this rank's steps spent, summed over its steps.
struct StepTiming {
  std::uint64_t steps = 0;
  double accumulate_s = 0;  // graph A: forward, loss, backward, gradients → block
  double wait_s = 0;        // the timing barrier (0 without it)
  double exchange_s = 0;    // allreduce_sum of the block (and the wait for slower ranks, without the barrier)
  double apply_s = 0;       // graph B: block → gradients, guard, sign steps, Adam
  double total_s() const noexcept { return accumulate_s + wait_s + exchange_s + apply_s; }
  // exchange_s / total_s (0 before any step)
  double exchange_share() const noexcept { return total_s() > 0 ? exchange_s / total_s() : 0.0; }
};

// A BlrTrainer (split steps) whose gradients are summed over the ranks of a
// group before every update. Borrows the group, context, layer and batch
// buffers (they must outlive it).
class DistributedTrainer {
 public:
  // Collective. Each rank passes its own Context (on group.device()), a
  // layer with the same initial values, `total_tokens` of a global batch
  // and the same configuration (config.loss_norm: the global normaliser;
  // split is implied). Makes this rank's BlrTrainer for slice().count
  // tokens, then checks that the ranks agree (check_agreement) on: the
  // device kind and driver, every field of the context's GEMM policy
  // (Context::gemm_policy), m, n, r, paths, the scale layout, total_tokens,
  // every configuration value that changes results, the layer's bits and
  // scales and the optimizer state (hashed), the step counters. Throws
  // Error on every rank when they do not.
  DistributedTrainer(RankGroup& group, Context& ctx, const BlrLayer& layer, std::uint32_t total_tokens,
                     const BlrTrainerConfig& config, const DistributedOptions& options = {});

  TokenSlice slice() const noexcept { return slice_; }
  // A training / evaluation batch: this rank's slice of it, x f32
  // [slice().count][n], target f32 [slice().count][m]. Every rank adds its
  // batches in the same order.
  std::size_t add_batch(const Buffer& x, const Buffer& target, BatchInput input = BatchInput::f32);
  std::size_t add_eval_batch(const Buffer& x, const Buffer& target, BatchInput input = BatchInput::f32);

  // Collective: one step on training batch `batch` of every rank. The
  // result is every rank's (sq_error and loss of the global batch).
  StepResult step(std::size_t batch, float sign_lr, float scale_lr);
  // Collective: ‖y − target‖² of evaluation batch `batch` over all ranks.
  double eval(std::size_t batch);
  // Collective: the constructor's agreement check again, e.g. after every
  // rank restored a checkpoint into trainer() and the layer.
  void check_agreement();

  BlrTrainer& trainer() noexcept { return trainer_; }
  const StepTiming& timing() const noexcept { return timing_; }
  // The ranks sum their blocks in shared memory that every GPU reads and
  // writes (Exchange::shared_memory, and every rank's device imported the
  // blocks); else through allreduce_sum's messages. shared_note() says
  // why not where a device refused ("rank R: <error>"; else empty).
  bool shares_blocks() const noexcept { return static_cast<bool>(shared_); }
  const std::string& shared_note() const noexcept { return shared_note_; }

 private:
  // Collective: the shared blocks where every rank's device imports them.
  void share_blocks();

  RankGroup& group_;
  Context& ctx_;
  const BlrLayer& layer_;
  std::uint32_t total_tokens_;
  BlrTrainerConfig config_;
  TokenSlice slice_;
  DistributedOptions options_;
  // shared-memory exchange: the ranks' blocks, this rank's input and the
  // result imported as device buffers, and their views of the block's
  // length; declared before the trainer, which borrows them
  std::unique_ptr<SharedBlocks> shared_;
  Buffer shared_input_, shared_result_, input_view_, result_view_;
  std::string shared_note_;
  BlrTrainer trainer_;
  StepTiming timing_;
};

}  // namespace vkblr::mpi
