# Every header of the simulator compiles on its own: one generated translation unit per header of
# hw/, sim/, graphs/ and scripts/cli that includes it twice (the second time proves its include
# guard), compiled into the object library stepsim_header_check as part of the build. A header
# that needs an include it does not write fails here, not in whichever file happened to include
# it first. Included from testbench/CMakeLists.txt. Cost: about 2 min of CPU for ~100 headers
# (a minute of a 2-core build).
file(GLOB_RECURSE STEPSIM_CHECKED_HEADERS RELATIVE ${CMAKE_SOURCE_DIR} CONFIGURE_DEPENDS
     ${CMAKE_SOURCE_DIR}/hw/*.h ${CMAKE_SOURCE_DIR}/sim/*.h ${CMAKE_SOURCE_DIR}/graphs/*.h
     ${CMAKE_SOURCE_DIR}/scripts/cli/*.h)
# The headers of hw/bridge/rtl need Verilator's: checked apart, with the RTL bridges' usage
# requirements, when they are built.
set(STEPSIM_CHECKED_RTL_HEADERS ${STEPSIM_CHECKED_HEADERS})
list(FILTER STEPSIM_CHECKED_RTL_HEADERS INCLUDE REGEX "^hw/bridge/rtl/")
list(FILTER STEPSIM_CHECKED_HEADERS EXCLUDE REGEX "^hw/bridge/rtl/")

# The translation units of `headers`, one per header, in header_check/ of the build tree.
function(stepsim_header_units out)
  set(units "")
  foreach(header ${ARGN})
    set(unit ${CMAKE_CURRENT_BINARY_DIR}/header_check/${header}.cpp)
    file(CONFIGURE OUTPUT ${unit} CONTENT "#include \"${header}\"\n#include \"${header}\"\n")
    list(APPEND units ${unit})
  endforeach()
  set(${out} ${units} PARENT_SCOPE)
endfunction()

# Only the include paths and definitions of the layers (stepsim_base, the headers generated at
# configure time), not their libraries: the check does not wait for them.
stepsim_header_units(units ${STEPSIM_CHECKED_HEADERS})
add_library(stepsim_header_check OBJECT ${units})
target_link_libraries(stepsim_header_check PRIVATE stepsim_base)
target_include_directories(stepsim_header_check PRIVATE ${STEPSIM_GENERATED_DIR})

if(TARGET stepsim_bridge_rtl AND STEPSIM_CHECKED_RTL_HEADERS)
  stepsim_header_units(units ${STEPSIM_CHECKED_RTL_HEADERS})
  add_library(stepsim_header_check_rtl OBJECT ${units})
  target_link_libraries(stepsim_header_check_rtl PRIVATE stepsim_bridge_rtl)
endif()
