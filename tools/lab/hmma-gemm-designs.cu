// hmma-gemm-designs.cu — a reference for docs/benchmarks.md (issue 4): how
// fast the GEMM design that vkblr's Vulkan kernel has to use on NVIDIA's
// driver can be at all, written in CUDA with the same instructions the
// driver emits for it (ldmatrix + mma.sync m16n8k16, SASS LDSM + HMMA), and
// what the two things Vulkan does not give there would add: shared memory
// past 24 KiB with two workgroups per multiprocessor, and asynchronous
// global-to-shared copies (cp.async) several stages deep.
//
// C[M][N] (f32) = A[M][K] · B[N][K]ᵀ, f16 operands, f32 accumulation: the
// plane mode of vkblr's GEMM. Every kernel: workgroup tile BM×BN×32, warps of
// 64×64 (16 fragments 16×16 = 32 mma.sync per 16 of K), shared-memory rows
// padded by 8 halves (conflict-free ldmatrix), 16-byte global loads.
//   regs/1  — vkblr's design: the next K tile loaded into registers while
//             the current one is multiplied, one shared-memory stage, two
//             barriers per K tile (20 KiB for 128×128).
//   regs/2  — the same with two shared-memory stages, one barrier per tile
//             (40 KiB: on Vulkan past the 24 KiB step to one workgroup).
//   async/S — cp.async into S stages, one barrier per tile.
// Shapes: M, N multiples of the tile, K of 32 (checked). Each result is
// compared with a plain f32 kernel (relative Frobenius error); each time is
// the median of 30 launches after 5, CUDA events; cuBLAS (cublasGemmEx, f16
// in, f32 out and compute) timed the same way beside them.
// `--profile`: each design launched once on the first shape, nothing timed
// (for Nsight Compute). On the `device` tool's machine:
//   nvcc -O3 -arch=sm_90 -o /tmp/designs tools/lab/hmma-gemm-designs.cu -lcublas
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include <cublas_v2.h>
#include <cuda_fp16.h>

#define CHECK(x)                                                                          \
  do {                                                                                    \
    cudaError_t e_ = (x);                                                                 \
    if (e_ != cudaSuccess) {                                                              \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                       \
    }                                                                                     \
  } while (0)

__device__ __forceinline__ unsigned smem_addr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void ldsm_x4(unsigned (&r)[4], unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

__device__ __forceinline__ void mma_16816(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ void cp_async_16(unsigned dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(src));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;"); }
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(kPending));
}

// One warp's fragments for 16 of K: 4 A fragments (rows 16 each) and 8
// B blocks of 8 columns, from sA [BM][row] and sB [BN][row] (row = BK + 8
// halves); (wm, wn) is the warp's 64×64 block.
struct Fragments {
  unsigned a[4][4], b[4][4];
};

template <int kRow>
__device__ __forceinline__ void load_fragments(Fragments& f, const half* sA, const half* sB, int wm, int wn,
                                               int lane, int kk) {
#pragma unroll
  for (int i = 0; i < 4; ++i)  // rows 0-15 of the fragment, K halves 0-7 / 8-15
    ldsm_x4(f.a[i], smem_addr(sA + (wm * 64 + i * 16 + lane % 16) * kRow + kk + (lane / 16) * 8));
#pragma unroll
  for (int j = 0; j < 4; ++j)  // two 8-column blocks of B, K halves 0-7 / 8-15
    ldsm_x4(f.b[j], smem_addr(sB + (wn * 64 + j * 16 + (lane / 16) * 8 + lane % 8) * kRow + kk +
                            ((lane / 8) % 2) * 8));
}

__device__ __forceinline__ void multiply(float (&acc)[4][8][4], const Fragments& f) {
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      mma_16816(acc[i][2 * j], f.a[i], f.b[j][0], f.b[j][1]);
      mma_16816(acc[i][2 * j + 1], f.a[i], f.b[j][2], f.b[j][3]);
    }
}

__device__ __forceinline__ void store_c(float* C, int N, int m0, int n0, int wm, int wn, int lane,
                                        const float (&acc)[4][8][4]) {
  const int g = lane / 4, t = lane % 4;
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const int row = m0 + wm * 64 + i * 16 + g, col = n0 + wn * 64 + j * 8 + 2 * t;
      *reinterpret_cast<float2*>(C + static_cast<size_t>(row) * N + col) = make_float2(acc[i][j][0], acc[i][j][1]);
      *reinterpret_cast<float2*>(C + static_cast<size_t>(row + 8) * N + col) =
          make_float2(acc[i][j][2], acc[i][j][3]);
    }
}

// kWM × kWN warps of 64×64, kStages shared-memory stages of BK = kBK.
// kAsync: tiles copied by cp.async (else loaded into registers a tile ahead
// and stored after the multiply). kPipelined: one barrier per tile placed
// before the tile's last 16 of K, so the next tile's first fragments load
// while that last step multiplies (CUTLASS's order; needs two stages).
template <int kWM, int kWN, int kStages, int kBK, bool kAsync, bool kPipelined>
__global__ void __launch_bounds__(kWM* kWN * 32)
    gemm(const half* __restrict__ A, const half* __restrict__ B, float* __restrict__ C, int N, int K) {
  constexpr int kBM = kWM * 64, kBN = kWN * 64, kThreads = kWM * kWN * 32, kRow = kBK + 8;
  constexpr int kChunks = kBK / 8;  // 16-byte pieces per tile row
  constexpr int kLoadsA = kBM * kChunks / kThreads, kLoadsB = kBN * kChunks / kThreads;
  constexpr int kSteps = kBK / 16;
  static_assert(!kPipelined || (kStages >= 2 && kSteps % 2 == 0), "pipelined needs 2 stages, even K steps");
  static_assert(!kAsync || kStages >= 2, "cp.async needs 2 stages");
  extern __shared__ __align__(16) half smem[];
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int wm = warp / kWN, wn = warp % kWN;
  const int m0 = blockIdx.y * kBM, n0 = blockIdx.x * kBN;
  auto stage_a = [&](int s) { return smem + s * kBM * kRow; };
  auto stage_b = [&](int s) { return smem + kStages * kBM * kRow + s * kBN * kRow; };
  auto src_a = [&](int kt, int idx) { return A + static_cast<size_t>(m0 + idx / kChunks) * K + kt * kBK + idx % kChunks * 8; };
  auto src_b = [&](int kt, int idx) { return B + static_cast<size_t>(n0 + idx / kChunks) * K + kt * kBK + idx % kChunks * 8; };
  auto dst = [&](half* base, int idx) { return base + idx / kChunks * kRow + idx % kChunks * 8; };
  uint4 ra[kAsync ? 1 : kLoadsA], rb[kAsync ? 1 : kLoadsB];
  auto load = [&](int kt) {  // registers <- tile kt
#pragma unroll
    for (int c = 0; c < kLoadsA; ++c) ra[c] = *reinterpret_cast<const uint4*>(src_a(kt, tid + c * kThreads));
#pragma unroll
    for (int c = 0; c < kLoadsB; ++c) rb[c] = *reinterpret_cast<const uint4*>(src_b(kt, tid + c * kThreads));
  };
  auto store = [&](int s) {  // stage s <- registers
#pragma unroll
    for (int c = 0; c < kLoadsA; ++c) *reinterpret_cast<uint4*>(dst(stage_a(s), tid + c * kThreads)) = ra[c];
#pragma unroll
    for (int c = 0; c < kLoadsB; ++c) *reinterpret_cast<uint4*>(dst(stage_b(s), tid + c * kThreads)) = rb[c];
  };
  auto issue = [&](int kt, int s) {  // stage s <- tile kt, asynchronously
#pragma unroll
    for (int c = 0; c < kLoadsA; ++c)
      cp_async_16(smem_addr(dst(stage_a(s), tid + c * kThreads)), src_a(kt, tid + c * kThreads));
#pragma unroll
    for (int c = 0; c < kLoadsB; ++c)
      cp_async_16(smem_addr(dst(stage_b(s), tid + c * kThreads)), src_b(kt, tid + c * kThreads));
  };
  float acc[4][8][4] = {};
  const int tiles = K / kBK;
  if constexpr (kPipelined) {
    Fragments f[2];
    if constexpr (kAsync) {
#pragma unroll
      for (int s = 0; s < kStages - 1; ++s) {
        if (s < tiles) issue(s, s);
        cp_async_commit();
      }
      cp_async_wait<kStages - 2>();
    } else {
      load(0);
      store(0);
    }
    __syncthreads();
    load_fragments<kRow>(f[0], stage_a(0), stage_b(0), wm, wn, lane, 0);
    for (int kt = 0; kt < tiles; ++kt) {
      const int s = kt % kStages, next_s = (kt + 1) % kStages;
      if constexpr (kAsync) {  // into the stage read in tile kt-1 (all reads were before the last barrier)
        const int t = kt + kStages - 1;
        if (t < tiles) issue(t, t % kStages);
        cp_async_commit();
      } else if (kt + 1 < tiles) {
        load(kt + 1);
      }
#pragma unroll
      for (int ks = 0; ks < kSteps; ++ks) {
        if (ks + 1 < kSteps) {
          load_fragments<kRow>(f[(ks + 1) % 2], stage_a(s), stage_b(s), wm, wn, lane, (ks + 1) * 16);
        } else {
          if constexpr (kAsync) cp_async_wait<kStages - 2>();
          else if (kt + 1 < tiles) store(next_s);
          __syncthreads();
          if (kt + 1 < tiles) load_fragments<kRow>(f[0], stage_a(next_s), stage_b(next_s), wm, wn, lane, 0);
        }
        multiply(acc, f[ks % 2]);
      }
    }
  } else if constexpr (kAsync) {
#pragma unroll
    for (int s = 0; s < kStages - 1; ++s) {
      if (s < tiles) issue(s, s);
      cp_async_commit();
    }
    for (int kt = 0; kt < tiles; ++kt) {
      cp_async_wait<kStages - 2>();
      __syncthreads();  // tile kt landed for every thread; stage (kt-1)%S is free
      const int t = kt + kStages - 1;
      if (t < tiles) issue(t, t % kStages);
      cp_async_commit();
      Fragments f;
#pragma unroll
      for (int ks = 0; ks < kSteps; ++ks) {
        load_fragments<kRow>(f, stage_a(kt % kStages), stage_b(kt % kStages), wm, wn, lane, ks * 16);
        multiply(acc, f);
      }
    }
  } else {
    load(0);
    if constexpr (kStages == 2) {
      store(0);
      __syncthreads();
    }
    for (int kt = 0; kt < tiles; ++kt) {
      const int s = kStages == 1 ? 0 : kt % 2;
      if constexpr (kStages == 1) {  // vkblr's design
        __syncthreads();
        store(0);
        __syncthreads();
      }
      if (kt + 1 < tiles) load(kt + 1);
      Fragments f;
#pragma unroll
      for (int ks = 0; ks < kSteps; ++ks) {
        load_fragments<kRow>(f, stage_a(s), stage_b(s), wm, wn, lane, ks * 16);
        multiply(acc, f);
      }
      if constexpr (kStages == 2) {
        if (kt + 1 < tiles) store((kt + 1) % 2);
        __syncthreads();
      }
    }
  }
  store_c(C, N, m0, n0, wm, wn, lane, acc);
}

__global__ void gemm_reference(const half* A, const half* B, float* C, int M, int N, int K) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y;
  if (col >= N) return;
  float s = 0;
  for (int k = 0; k < K; ++k)
    s += __half2float(A[static_cast<size_t>(row) * K + k]) * __half2float(B[static_cast<size_t>(col) * K + k]);
  C[static_cast<size_t>(row) * N + col] = s;
}

using Kernel = void (*)(const half*, const half*, float*, int, int);

struct Design {
  const char* name;
  Kernel kernel;
  int bm, bn, bk, threads, stages;
  int smem() const { return stages * (bm + bn) * (bk + 8) * static_cast<int>(sizeof(half)); }
};

template <int kWM, int kWN, int kS, int kBK, bool kAsync, bool kPipelined>
Design design(const char* name) {
  return {name, gemm<kWM, kWN, kS, kBK, kAsync, kPipelined>, kWM * 64, kWN * 64, kBK, kWM * kWN * 32, kS};
}

template <typename Launch>
static float median_ms(Launch launch) {
  for (int i = 0; i < 5; ++i) launch();
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  std::vector<float> ms(30);
  for (float& t : ms) {
    CHECK(cudaEventRecord(e0));
    launch();
    CHECK(cudaEventRecord(e1));
    CHECK(cudaEventSynchronize(e1));
    CHECK(cudaEventElapsedTime(&t, e0, e1));
  }
  CHECK(cudaGetLastError());
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

static double rel_error(const std::vector<float>& x, const std::vector<float>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double d = static_cast<double>(x[i]) - ref[i];
    num += d * d;
    den += static_cast<double>(ref[i]) * ref[i];
  }
  return std::sqrt(num / den);
}

int main(int argc, char** argv) {
  const bool profile = argc > 1 && std::string(argv[1]) == "--profile";
  const Design designs[] = {
      design<2, 2, 1, 32, false, false>("regs/1 128x128x32 (vkblr's)"),
      design<2, 2, 2, 32, false, false>("regs/2 128x128x32"),
      design<2, 2, 2, 32, false, true>("regs/2 128x128x32 pipelined"),
      design<2, 2, 2, 64, false, true>("regs/2 128x128x64 pipelined"),
      design<2, 2, 3, 32, true, false>("async/3 128x128x32"),
      design<2, 2, 4, 32, true, false>("async/4 128x128x32"),
      design<2, 2, 4, 32, true, true>("async/4 128x128x32 pipelined"),
      design<2, 2, 3, 64, true, true>("async/3 128x128x64 pipelined"),
      design<2, 4, 3, 32, true, true>("async/3 128x256x32 pipelined"),
      design<2, 4, 4, 32, true, true>("async/4 128x256x32 pipelined"),
  };
  const int shapes[][3] = {{4096, 3584, 1024}, {4096, 1024, 3584}, {3584, 1024, 4096}, {4096, 6144, 1024}};
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  for (const Design& d : designs) {
    const int smem = d.smem();
    CHECK(cudaFuncSetAttribute(d.kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    CHECK(cudaFuncSetAttribute(d.kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                               cudaSharedmemCarveoutMaxShared));
    cudaFuncAttributes attr{};
    CHECK(cudaFuncGetAttributes(&attr, d.kernel));
    int blocks = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, d.kernel, d.threads, smem));
    std::printf("design %-34s registers %3d  shared %3d KiB  workgroups/SM %d  warps/SM %2d  spill %zu B\n", d.name,
                attr.numRegs, smem / 1024, blocks, blocks * d.threads / 32, attr.localSizeBytes);
  }
  cublasHandle_t blas;
  if (cublasCreate(&blas) != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "cublasCreate failed\n");
    return 1;
  }
  std::mt19937 rng(4);
  std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
  bool ok = true;
  for (const auto& s : shapes) {
    const int M = s[0], N = s[1], K = s[2];
    std::vector<half> a(static_cast<size_t>(M) * K), b(static_cast<size_t>(N) * K);
    for (half& v : a) v = __float2half(uni(rng));
    for (half& v : b) v = __float2half(uni(rng));
    half *dA, *dB;
    float *dC, *dR;
    CHECK(cudaMalloc(&dA, a.size() * sizeof(half)));
    CHECK(cudaMalloc(&dB, b.size() * sizeof(half)));
    CHECK(cudaMalloc(&dC, static_cast<size_t>(M) * N * sizeof(float)));
    CHECK(cudaMalloc(&dR, static_cast<size_t>(M) * N * sizeof(float)));
    CHECK(cudaMemcpy(dA, a.data(), a.size() * sizeof(half), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dB, b.data(), b.size() * sizeof(half), cudaMemcpyHostToDevice));
    gemm_reference<<<dim3((N + 255) / 256, M), 256>>>(dA, dB, dR, M, N, K);
    CHECK(cudaDeviceSynchronize());
    std::vector<float> ref(static_cast<size_t>(M) * N), out(ref.size());
    CHECK(cudaMemcpy(ref.data(), dR, ref.size() * sizeof(float), cudaMemcpyDeviceToHost));
    const double flop = 2.0 * M * N * K;
    auto report = [&](const char* name, float ms) {
      CHECK(cudaMemcpy(out.data(), dC, out.size() * sizeof(float), cudaMemcpyDeviceToHost));
      const double err = rel_error(out, ref);
      const bool good = err < 1e-4;
      ok = ok && good;
      std::printf("%5dx%5dx%5d  %-34s %8.4f ms  %6.1f TFLOPS  rel.err %.2e %s\n", M, N, K, name, ms,
                  flop / ms / 1e9, err, good ? "" : "FAIL");
    };
    for (const Design& d : designs) {
      if (M % d.bm || N % d.bn || K % d.bk) continue;
      const int smem = d.smem();
      CHECK(cudaMemset(dC, 0xff, out.size() * sizeof(float)));  // NaN poison
      if (profile) {
        d.kernel<<<dim3(N / d.bn, M / d.bm), d.threads, smem>>>(dA, dB, dC, N, K);
        CHECK(cudaDeviceSynchronize());
        continue;
      }
      const float ms = median_ms([&] { d.kernel<<<dim3(N / d.bn, M / d.bm), d.threads, smem>>>(dA, dB, dC, N, K); });
      report(d.name, ms);
    }
    if (profile) return 0;
    const float one = 1.0f, zero = 0.0f;
    CHECK(cudaMemset(dC, 0xff, out.size() * sizeof(float)));
    const float ms = median_ms([&] {
      cublasGemmEx(blas, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &one, dB, CUDA_R_16F, K, dA, CUDA_R_16F, K, &zero, dC,
                   CUDA_R_32F, N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    });
    report("cuBLAS (f32 out)", ms);
    CHECK(cudaFree(dA));
    CHECK(cudaFree(dB));
    CHECK(cudaFree(dC));
    CHECK(cudaFree(dR));
  }
  std::printf("%d multiprocessors; %s\n", sms, ok ? "all results within 1e-4 of the reference" : "SOME RESULTS WRONG");
  return ok ? 0 : 1;
}
