# include() from a script run as `cmake -DNAME=... -P script.cmake`:
# require_definitions(NAME...) stops the script with a message naming the
# first NAME that was not given (or is empty).
function(require_definitions)
  get_filename_component(script "${CMAKE_SCRIPT_MODE_FILE}" NAME)
  foreach(name IN LISTS ARGN)
    if(NOT ${name})
      message(FATAL_ERROR "${script} needs -D${name}=...")
    endif()
  endforeach()
endfunction()
