// nan_preserve.glsl — declares the SignedZeroInfNanPreserve execution mode
// for f32. Without it Vulkan lets a shader assume no NaN or Inf occurs, and
// a compiler may fold isnan()/isinf() away or drop a NaN on the way; kernels
// whose job is to see or propagate non-finite values include this.
#ifndef VKBLR_NAN_PRESERVE_GLSL
#define VKBLR_NAN_PRESERVE_GLSL
#extension GL_EXT_spirv_intrinsics : require
#define SPV_CAPABILITY_SIGNED_ZERO_INF_NAN_PRESERVE 4466
#define SPV_EXECUTION_MODE_SIGNED_ZERO_INF_NAN_PRESERVE 4461
spirv_execution_mode(capabilities = [SPV_CAPABILITY_SIGNED_ZERO_INF_NAN_PRESERVE],
                     SPV_EXECUTION_MODE_SIGNED_ZERO_INF_NAN_PRESERVE, 32);
#endif
