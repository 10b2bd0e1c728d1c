// The one translation unit that compiles VMA's implementation.
#define VMA_IMPLEMENTATION
#include "vk.hpp"
