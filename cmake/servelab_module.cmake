# Public and private headers (STYLE.md "Headers"). A module's public headers live in
# include/servelab/<module>/ and are included as "servelab/<module>/x.h"; everything else in src/<module>/
# is private to the module: it is on the include path (as "<module>/x.h") only of the module's own targets,
# of its tests (tests/<module>/), and of the white-box fuzz and benchmark targets. The private path is a
# directory of the build tree holding one link, <module> -> src/<module>, so that another module's
# `#include "<module>/private.h"` does not compile.

# servelab_private_dir(<module> <out-var>): the private include directory of <module> (created once).
function(servelab_private_dir mod out)
  set(d ${CMAKE_BINARY_DIR}/private/${mod})
  if(NOT IS_SYMLINK ${d}/${mod})
    file(MAKE_DIRECTORY ${d})
    file(CREATE_LINK ${CMAKE_SOURCE_DIR}/src/${mod} ${d}/${mod} SYMBOLIC)
  endif()
  set(${out} ${d} PARENT_SCOPE)
endfunction()

# servelab_module_includes(<module>): include/ public and the private directory private on the module's
# targets (servelab_<module>, servelab_<module>_objects, and for cli the servelab executable).
function(servelab_module_includes mod)
  servelab_private_dir(${mod} priv)
  set(targets servelab_${mod} servelab_${mod}_objects)
  if(mod STREQUAL "cli")
    set(targets servelab)
  endif()
  foreach(t ${targets})
    if(NOT TARGET ${t})
      continue()
    endif()
    get_target_property(type ${t} TYPE)
    if(type STREQUAL "INTERFACE_LIBRARY")
      target_include_directories(${t} INTERFACE ${CMAKE_SOURCE_DIR}/include)
    elseif(type STREQUAL "EXECUTABLE")
      target_include_directories(${t} PRIVATE ${CMAKE_SOURCE_DIR}/include ${priv})
    else()
      target_include_directories(${t} PUBLIC ${CMAKE_SOURCE_DIR}/include PRIVATE ${priv})
    endif()
  endforeach()
endfunction()

# servelab_white_box(<target> <module>...): <target> (a test, fuzz or benchmark executable) may include
# the private headers of each <module>.
function(servelab_white_box target)
  foreach(mod ${ARGN})
    if(EXISTS ${CMAKE_SOURCE_DIR}/src/${mod})
      servelab_private_dir(${mod} priv)
      target_include_directories(${target} PRIVATE ${priv})
    endif()
  endforeach()
endfunction()
