# Compile options shared by every vkblr target: warnings, sanitizers and the
# static C++ runtime of the `device` preset.
add_library(vkblr_build_options INTERFACE)
target_compile_options(vkblr_build_options INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion
  -Wno-missing-field-initializers  # Vulkan structs are built as T{sType} then filled
  -Wnon-virtual-dtor -Wold-style-cast -Wcast-align -Wnull-dereference
  $<$<BOOL:${VKBLR_WERROR}>:-Werror>)
if(VKBLR_SANITIZE)
  target_compile_options(vkblr_build_options INTERFACE
    -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
  target_link_options(vkblr_build_options INTERFACE -fsanitize=address,undefined)
endif()
if(VKBLR_STATIC_RUNTIME)
  target_link_options(vkblr_build_options INTERFACE -static-libstdc++ -static-libgcc)
endif()
