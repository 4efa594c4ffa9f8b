# The layers of src/ as libraries (DESIGN.md, Layers): clmcache_<layer> links
# the layers it builds on and sees their headers, no others. Headers are
# included as "layer/file.h", so src/ itself is never an include directory:
# each layer gets a root of its own in the build tree holding one link,
# <layer> -> src/<layer>, and a target sees the roots of what it links. An
# include of any other layer's header then stops the build with an #error
# naming the layers it may use, from a fence of stand-in headers searched
# after every real one (-idirafter).

set(CLMCACHE_LAYERS_DIR ${PROJECT_BINARY_DIR}/layers)
set(CLMCACHE_SRC_DIR ${PROJECT_SOURCE_DIR}/src)

# clmcache_layer(<layer> [DEPENDS <layer>...] [EXCLUDE <source>...] [ONLY <source>...])
# clmcache_<layer> from src/<layer>'s sources (subfolders included, the
# EXCLUDEd ones, relative to src/<layer>, left out; with ONLY, just those),
# linking PUBLIC the layers it includes; those are defined first, bottom up.
function(clmcache_layer layer)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "DEPENDS;EXCLUDE;ONLY")
  set(dir ${CLMCACHE_SRC_DIR}/${layer})
  if(arg_ONLY)
    list(TRANSFORM arg_ONLY PREPEND ${dir}/ OUTPUT_VARIABLE sources)
  else()
    file(GLOB_RECURSE sources CONFIGURE_DEPENDS ${dir}/*.cpp)
  endif()
  foreach(excluded IN LISTS arg_EXCLUDE)
    list(REMOVE_ITEM sources ${dir}/${excluded})
  endforeach()
  add_library(clmcache_${layer} STATIC ${sources})
  clmcache_include_root(clmcache_${layer} ${layer} PUBLIC)

  set(visible ${layer})
  foreach(dep IN LISTS arg_DEPENDS)
    if(NOT TARGET clmcache_${dep})
      message(FATAL_ERROR "clmcache_layer(${layer}): ${dep} is not a layer defined before it")
    endif()
    target_link_libraries(clmcache_${layer} PUBLIC clmcache_${dep})
    get_property(dep_visible GLOBAL PROPERTY CLMCACHE_VISIBLE_${dep})
    list(APPEND visible ${dep_visible})
  endforeach()
  list(REMOVE_DUPLICATES visible)
  set_property(GLOBAL PROPERTY CLMCACHE_VISIBLE_${layer} ${visible})
  clmcache_write_fence(${layer} "${visible}")
  clmcache_fence(clmcache_${layer} ${layer})
endfunction()

# clmcache_include_root(<target> <layer> <scope>): <target> (and, PUBLIC,
# what links it) sees src/<layer>'s headers, as "<layer>/file.h".
function(clmcache_include_root target layer scope)
  set(root ${CLMCACHE_LAYERS_DIR}/${layer}/include)
  file(MAKE_DIRECTORY ${root})
  file(CREATE_LINK ${CLMCACHE_SRC_DIR}/${layer} ${root}/${layer} SYMBOLIC)
  target_include_directories(${target} ${scope} ${root})
endfunction()

# clmcache_fence(<target> <layer>): <target> (a layer, its tests, or what
# sits on it) may include what <layer> sees, and nothing of the other layers.
function(clmcache_fence target layer)
  target_compile_options(${target} PRIVATE "SHELL:-idirafter ${CLMCACHE_LAYERS_DIR}/${layer}/fence")
  set_property(TARGET ${target} PROPERTY CLMCACHE_FENCE ${layer})
endfunction()

# One stand-in per header of each layer outside `visible`, rewritten at every
# configure so that it follows the headers there are. A build that succeeds
# never reads one, so rewriting them rebuilds nothing.
function(clmcache_write_fence layer visible)
  set(fence ${CLMCACHE_LAYERS_DIR}/${layer}/fence)
  file(REMOVE_RECURSE ${fence})
  file(MAKE_DIRECTORY ${fence})
  list(JOIN visible "/, " seen)
  file(GLOB others LIST_DIRECTORIES true RELATIVE ${CLMCACHE_SRC_DIR} ${CLMCACHE_SRC_DIR}/*)
  foreach(other IN LISTS others)
    if(NOT IS_DIRECTORY ${CLMCACHE_SRC_DIR}/${other} OR other IN_LIST visible)
      continue()
    endif()
    file(GLOB_RECURSE headers CONFIGURE_DEPENDS RELATIVE ${CLMCACHE_SRC_DIR} ${CLMCACHE_SRC_DIR}/${other}/*.h)
    foreach(header IN LISTS headers)
      file(WRITE ${fence}/${header}
           "#error \"layering: ${header} is in ${other}/, which ${layer}/ does not build on; "
           "code built with ${layer}/ sees only ${seen}/ (dependencies point down only)\"\n")
    endforeach()
  endforeach()
endfunction()
