// vkblr/ops.hpp — builders of the elementwise, staging and reduction ops,
// the f32 GEMM, the Gaussian fill, causal self-attention and the losses over a
// vocabulary.
//
// Each builder checks its arguments (shapes, buffer sizes) and returns the
// Dispatch (or Ops) that computes the op; record it with a Recorder. Bad
// arguments throw vkblr::Error naming the op and the value. Layouts are
// row-major; "f32" buffers hold floats, "f16" buffers IEEE halves. What each
// op computes, exactly, is in docs/kernels.md. One header per family:
#pragma once

#include "vkblr/ops/add.hpp"
#include "vkblr/ops/attention.hpp"
#include "vkblr/ops/colsum.hpp"
#include "vkblr/ops/cvt.hpp"
#include "vkblr/ops/dense.hpp"
#include "vkblr/ops/embedding.hpp"
#include "vkblr/ops/expand.hpp"
#include "vkblr/ops/expand_f32.hpp"
#include "vkblr/ops/gemm_f32.hpp"
#include "vkblr/ops/logit_loss.hpp"
#include "vkblr/ops/optim.hpp"
#include "vkblr/ops/probe.hpp"
#include "vkblr/ops/random.hpp"
#include "vkblr/ops/rmsnorm.hpp"
#include "vkblr/ops/rope.hpp"
#include "vkblr/ops/scale.hpp"
#include "vkblr/ops/split_qg.hpp"
#include "vkblr/ops/swiglu.hpp"
#include "vkblr/ops/train.hpp"
