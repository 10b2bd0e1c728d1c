// vkblr/vkblr.hpp — everything a trainer includes.
#pragma once

#include "vkblr/blr.hpp"
#include "vkblr/buffer.hpp"
#include "vkblr/context.hpp"
#include "vkblr/dispatch.hpp"
#include "vkblr/error.hpp"
#include "vkblr/half.hpp"
#include "vkblr/kernel_stats.hpp"
#include "vkblr/gemm.hpp"
#include "vkblr/ops.hpp"
#include "vkblr/profiler.hpp"
#include "vkblr/recorder.hpp"
#include "vkblr/trainer.hpp"
#include "vkblr/sign.hpp"
