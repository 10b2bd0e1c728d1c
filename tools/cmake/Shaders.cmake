# The offline shader step and the embedded SPIR-V cache (DESIGN.md §4).
#
#  * `cmake --build <dir> --target spirv` recompiles glsl/*.comp into
#    spirv_cache/ (tools/dev/compile_shaders.py: glslang + spirv-val + manifest).
#    Needs glslang >= 14 (GL_KHR_cooperative_matrix); checked here.
#  * The library always builds from the committed spirv_cache/: a generated
#    source embeds every module and a generated header names them
#    (enum class KernelId), so building vkblr needs no shader compiler.
set(VKBLR_GLSL_DIR ${PROJECT_SOURCE_DIR}/glsl)
set(VKBLR_SPIRV_DIR ${PROJECT_SOURCE_DIR}/spirv_cache)

find_package(Python3 COMPONENTS Interpreter)
find_program(VKBLR_GLSLANG NAMES glslangValidator glslang)
find_program(VKBLR_SPIRV_VAL NAMES spirv-val)

set(VKBLR_CAN_COMPILE_SHADERS OFF)
if(VKBLR_GLSLANG AND VKBLR_SPIRV_VAL AND Python3_Interpreter_FOUND)
  set(_probe_dir ${CMAKE_BINARY_DIR}/shader_probe)
  file(MAKE_DIRECTORY ${_probe_dir})
  file(WRITE ${_probe_dir}/probe.comp [=[
#version 460
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
layout(local_size_x = 32) in;
void main() {
  coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseA> a = coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseA>(1.0);
}
]=])
  execute_process(COMMAND ${VKBLR_GLSLANG} -V --target-env vulkan1.3 ${_probe_dir}/probe.comp -o ${_probe_dir}/probe.spv
                  RESULT_VARIABLE _probe_rc OUTPUT_VARIABLE _probe_out ERROR_VARIABLE _probe_out)
  execute_process(COMMAND ${VKBLR_GLSLANG} --version OUTPUT_VARIABLE _glslang_version ERROR_QUIET)
  string(REGEX MATCH "Glslang Version: [^\n]*" _glslang_version "${_glslang_version}")
  if(_probe_rc EQUAL 0)
    set(VKBLR_CAN_COMPILE_SHADERS ON)
    message(STATUS "vkblr: shader compiler ${VKBLR_GLSLANG} (${_glslang_version}) supports GL_KHR_cooperative_matrix: `spirv` target enabled")
  else()
    message(WARNING "vkblr: ${VKBLR_GLSLANG} (${_glslang_version}) cannot compile GL_KHR_cooperative_matrix "
                    "(glslang >= 14 needed). The `spirv` target is disabled; the library builds from the "
                    "committed spirv_cache/. Compiler said:\n${_probe_out}")
  endif()
else()
  message(STATUS "vkblr: no glslang/spirv-val/python3: `spirv` target disabled; building from the committed spirv_cache/")
endif()

if(VKBLR_CAN_COMPILE_SHADERS)
  add_custom_target(spirv
    COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tools/dev/compile_shaders.py
            --glsl ${VKBLR_GLSL_DIR} --out ${VKBLR_SPIRV_DIR}
            --glslang ${VKBLR_GLSLANG} --spirv-val ${VKBLR_SPIRV_VAL}
    COMMENT "Compiling glsl/*.comp into spirv_cache/"
    VERBATIM)
endif()

# Embedded cache: one generated source + header, remade when a module or the
# manifest changes.
file(GLOB VKBLR_SPIRV_FILES CONFIGURE_DEPENDS ${VKBLR_SPIRV_DIR}/*.spv)
set(VKBLR_GENERATED_DIR ${CMAKE_BINARY_DIR}/generated)
set(VKBLR_EMBED_SOURCE ${VKBLR_GENERATED_DIR}/embedded_spirv.cpp)
set(VKBLR_EMBED_HEADER ${VKBLR_GENERATED_DIR}/vkblr_generated/kernel_ids.hpp)
add_custom_command(
  OUTPUT ${VKBLR_EMBED_SOURCE} ${VKBLR_EMBED_HEADER}
  COMMAND ${CMAKE_COMMAND} -DSPIRV_DIR=${VKBLR_SPIRV_DIR} -DOUT_SOURCE=${VKBLR_EMBED_SOURCE}
          -DOUT_HEADER=${VKBLR_EMBED_HEADER} -P ${PROJECT_SOURCE_DIR}/tools/cmake/EmbedSpirv.cmake
  DEPENDS ${VKBLR_SPIRV_FILES} ${VKBLR_SPIRV_DIR}/manifest.json ${PROJECT_SOURCE_DIR}/tools/cmake/EmbedSpirv.cmake
  COMMENT "Embedding spirv_cache/ into the library"
  VERBATIM)
# The library (engine/) depends on this target, which drives the command above.
add_custom_target(vkblr_embed_spirv DEPENDS ${VKBLR_EMBED_SOURCE} ${VKBLR_EMBED_HEADER})
