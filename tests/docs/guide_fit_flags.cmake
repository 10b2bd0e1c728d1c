# cmake -DFIT=<path of vkblr-fit> -P tests/docs/guide_fit_flags.cmake
#
# docs/guide.md's table of vkblr-fit's flags (between the lines
# "<!-- begin vkblr-fit flags -->" and "<!-- end vkblr-fit flags -->", one
# row "| `--flag ..." per flag) must name every flag that `vkblr-fit --help`
# lists, and no other: the test guide_fit_flags fails when a flag is added,
# renamed or removed without the guide.
cmake_minimum_required(VERSION 3.25)
get_filename_component(root "${CMAKE_CURRENT_LIST_DIR}/../.." ABSOLUTE)
set(guide_path "${root}/docs/guide.md")

execute_process(COMMAND "${FIT}" --help OUTPUT_VARIABLE help RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${FIT} --help exited with ${rc}")
endif()
# option lines of CLI11's help: "  --name ..." or "  -h,--help ..."
string(REGEX MATCHALL "\n  (-[a-zA-Z],)?--[a-z0-9-]+" lines "${help}")
set(help_flags "")
foreach(l IN LISTS lines)
  string(REGEX REPLACE "^\n  (-[a-zA-Z],)?" "" flag "${l}")
  list(APPEND help_flags "${flag}")
endforeach()
if(NOT help_flags)
  message(FATAL_ERROR "no flags found in the output of ${FIT} --help:\n${help}")
endif()

file(READ "${guide_path}" guide)
string(FIND "${guide}" "<!-- begin vkblr-fit flags -->" begin)
string(FIND "${guide}" "<!-- end vkblr-fit flags -->" end)
if(begin EQUAL -1 OR end EQUAL -1 OR end LESS begin)
  message(FATAL_ERROR "${guide_path}: the markers of the vkblr-fit flag table are missing or out of order")
endif()
math(EXPR length "${end} - ${begin}")
string(SUBSTRING "${guide}" ${begin} ${length} table)
string(REGEX MATCHALL "\n\\| `(-[a-zA-Z], )?--[a-z0-9-]+" rows "${table}")
set(guide_flags "")
foreach(r IN LISTS rows)
  string(REGEX REPLACE "^\n\\| `(-[a-zA-Z], )?" "" flag "${r}")
  list(APPEND guide_flags "${flag}")
endforeach()

set(missing "")
foreach(f IN LISTS help_flags)
  if(NOT f IN_LIST guide_flags)
    list(APPEND missing "${f}")
  endif()
endforeach()
set(extra "")
foreach(f IN LISTS guide_flags)
  if(NOT f IN_LIST help_flags)
    list(APPEND extra "${f}")
  endif()
endforeach()
if(missing OR extra)
  foreach(l IN ITEMS missing extra)
    if(${l})
      list(JOIN ${l} " " ${l})
    else()
      set(${l} "(none)")
    endif()
  endforeach()
  message(FATAL_ERROR "docs/guide.md's vkblr-fit flag table and `vkblr-fit --help` disagree:\n"
                      "  in --help, not in the guide: ${missing}\n"
                      "  in the guide, not in --help: ${extra}\n"
                      "Add or remove the rows of the table in section 7 of docs/guide.md (value, default, "
                      "and the --help text).")
endif()
list(LENGTH help_flags count)
message(STATUS "docs/guide.md's flag table names the ${count} flags of vkblr-fit --help")
