// hmma-peak.cu — a reference for docs/benchmarks.md: the peak rate of the
// warp-level tensor-core instruction that both of vkblr's cooperative-matrix
// GEMMs compile to on NVIDIA's driver (tools/lab/nvidia-sass.py shows it):
// mma.sync m16n8k16, f16 operands, f32 accumulators (SASS HMMA.16816.F32),
// registers only, 8 independent accumulators per warp, 4 to 32 warps per
// multiprocessor; best of 5 launches, CUDA events. On the `device` tool's
// machine:  nvcc -O3 -arch=sm_90 -o /tmp/hmma tools/lab/hmma-peak.cu && /tmp/hmma
#include <cstdio>
#include <cuda_fp16.h>
__global__ void hmma_loop(float* out, int iters) {
  unsigned a0 = 0x3c003c00u ^ threadIdx.x, a1 = a0 + 1, a2 = a0 + 2, a3 = a0 + 3, b0 = a0 + 4, b1 = a0 + 5;
  float c[8][4] = {};
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int j = 0; j < 8; ++j)
      asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                   : "+f"(c[j][0]), "+f"(c[j][1]), "+f"(c[j][2]), "+f"(c[j][3])
                   : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  }
  float s = 0;
  for (int j = 0; j < 8; ++j) s += c[j][0] + c[j][1] + c[j][2] + c[j][3];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
int main() {
  int sms; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  const int iters = 4096;
  float* out; cudaMalloc(&out, sizeof(float) * sms * 16 * 1024);
  for (int warps_per_sm : {4, 8, 16, 32}) {
    int threads = 128, blocks = sms * warps_per_sm / 4;
    hmma_loop<<<blocks, threads>>>(out, iters);
    cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
    float best = 1e30f;
    for (int r = 0; r < 5; ++r) {
      cudaEventRecord(e0); hmma_loop<<<blocks, threads>>>(out, iters); cudaEventRecord(e1); cudaEventSynchronize(e1);
      float ms; cudaEventElapsedTime(&ms, e0, e1); if (ms < best) best = ms;
    }
    cudaError_t err = cudaGetLastError();
    double flop = 2.0 * 16 * 8 * 16 * 8.0 * iters * (double)blocks * (threads / 32);
    printf("warps/SM %2d: %.3f ms, %.0f TFLOPS (HMMA.16816.F32, best of 5) %s\n", warps_per_sm, best, flop / best / 1e9, cudaGetErrorString(err));
  }
  return 0;
}
