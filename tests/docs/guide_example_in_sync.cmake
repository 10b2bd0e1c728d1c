# cmake [-DUPDATE=ON] -P tests/docs/guide_example_in_sync.cmake
#
# docs/guide.md shows tests/consumer/guide_example.cpp verbatim between the
# lines "<!-- begin tests/consumer/guide_example.cpp -->" and
# "<!-- end tests/consumer/guide_example.cpp -->", as one ```cpp block. The
# test guide_example_in_sync runs this script: it fails, naming the first
# line that differs, unless the block is the file. With -DUPDATE=ON it
# copies the file into the guide instead (after editing the example).
cmake_minimum_required(VERSION 3.25)
get_filename_component(root "${CMAKE_CURRENT_LIST_DIR}/../.." ABSOLUTE)
set(guide_path "${root}/docs/guide.md")
set(example_name "tests/consumer/guide_example.cpp")
set(begin_marker "<!-- begin ${example_name} -->\n")
set(end_marker "<!-- end ${example_name} -->\n")

file(READ "${guide_path}" guide)
file(READ "${root}/${example_name}" example)
string(FIND "${guide}" "${begin_marker}" begin)
string(FIND "${guide}" "${end_marker}" end)
if(begin EQUAL -1 OR end EQUAL -1 OR end LESS begin)
  message(FATAL_ERROR "${guide_path}: the lines <!-- begin ${example_name} --> and <!-- end ${example_name} --> "
                      "are missing or out of order")
endif()
string(LENGTH "${begin_marker}" begin_length)
math(EXPR body_begin "${begin} + ${begin_length}")
math(EXPR body_length "${end} - ${body_begin}")
string(SUBSTRING "${guide}" ${body_begin} ${body_length} block)
set(want "```cpp\n${example}```\n")

if(UPDATE)
  if(NOT block STREQUAL want)
    string(SUBSTRING "${guide}" 0 ${body_begin} head)
    string(SUBSTRING "${guide}" ${end} -1 tail)
    file(WRITE "${guide_path}" "${head}${want}${tail}")
    message(STATUS "copied ${example_name} into ${guide_path}")
  endif()
  return()
endif()

if(NOT block STREQUAL want)
  # the first line that differs, for the message
  set(line 1)
  while(TRUE)
    string(FIND "${block}" "\n" a)
    string(FIND "${want}" "\n" b)
    if(a EQUAL -1 OR b EQUAL -1)
      break()
    endif()
    string(SUBSTRING "${block}" 0 ${a} la)
    string(SUBSTRING "${want}" 0 ${b} lb)
    if(NOT la STREQUAL lb)
      break()
    endif()
    math(EXPR a "${a} + 1")
    math(EXPR b "${b} + 1")
    string(SUBSTRING "${block}" ${a} -1 block)
    string(SUBSTRING "${want}" ${b} -1 want)
    math(EXPR line "${line} + 1")
  endwhile()
  message(FATAL_ERROR "docs/guide.md's copy of ${example_name} differs from the file at line ${line} of the "
                      "```cpp block (line 1 is the ```cpp fence). After editing the example, run\n"
                      "  cmake -DUPDATE=ON -P tests/docs/guide_example_in_sync.cmake")
endif()
message(STATUS "docs/guide.md shows ${example_name} as it is")
