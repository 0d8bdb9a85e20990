# The unit manifest, rtl/units.list (its format is described at its top), read at configure time
# by the top-level CMakeLists.txt; what it generates:
#   * rtl/CMakeLists.txt Verilates every unit and configuration line from the variables below
#     (sources, the -G parameter overrides, the library);
#   * stepsim_generate_unit_kinds: hw/bridge/unit_kinds.h, the bridge kinds (kinds::KIND, whose
#     factory and support check hw/bridge defines);
#   * stepsim_generate_bridges: for one implementation (hls: the classes of hw/units; rtl: the
#     Verilated models), one source file per bridge kind holding its unit table and its factory,
#     and the implementation's routes (operator -> kind, mode, support check, factory).
# Why generated, one file per kind: the manifest is the one list of units, and the bridge
# templates are instantiated for each unit in its own translation unit, so touching one unit's
# header rebuilds the kinds that use it, not every bridge (hls_units.cpp took 24 s for all).
# Plain CMake (no generator program to build or find); the files are written at configure time
# and rewritten only when their text changes (stepsim_write_if_changed), so a reconfigure does not
# rebuild them.

set(STEPSIM_UNIT_MANIFEST ${CMAKE_CURRENT_LIST_DIR}/units.list)
set(STEPSIM_GENERATED_DIR ${CMAKE_BINARY_DIR}/generated)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${STEPSIM_UNIT_MANIFEST})

# Reads the manifest into variables of the caller's scope (a macro for that reason):
#   STEPSIM_RTL_MODULES        the module and configuration lines in order (their first word); per line m:
#     STEPSIM_RTL_<m>_FLAGS    its flags (lib, noquick, noshare, t16, direct)
#     STEPSIM_RTL_<m>_EXTRA    its extra modules
#     STEPSIM_RTL_<m>_OF       the module a configuration line configures ("" on a module line)
#     STEPSIM_RTL_<m>_G        its Verilator parameter overrides, as -GP=V
#   STEPSIM_RTL_PARAMETERS     every override as <m>_P=V (the constants of unit_kinds.h)
#   STEPSIM_UNITS              the unit names (unit:); per unit u:
#     STEPSIM_UNIT_<u>_LINE    its line, STEPSIM_UNIT_<u>_HLS its HLS type, STEPSIM_UNIT_<u>_HEADER
#                              the header of that type (hw/units/<snake case of the class>.h)
#   STEPSIM_BRIDGE_KINDS       the bridge kinds in order; per kind k:
#     STEPSIM_BRIDGE_<k>_UNITS its units, STEPSIM_BRIDGE_<k>_OPS its routes OP[/FN][=MODE]
macro(stepsim_read_unit_manifest)
  set(STEPSIM_RTL_MODULES "")
  set(STEPSIM_UNITS "")
  set(STEPSIM_BRIDGE_KINDS "")
  set(STEPSIM_RTL_PARAMETERS "")
  file(STRINGS ${STEPSIM_UNIT_MANIFEST} _su_lines)
  foreach(_su_line ${_su_lines})
    string(STRIP "${_su_line}" _su_line)
    if(_su_line STREQUAL "" OR _su_line MATCHES "^#")
      continue()
    endif()
    string(REGEX REPLACE "[ \t]+" ";" _su_words "${_su_line}")
    list(GET _su_words 0 _su_first)
    list(REMOVE_AT _su_words 0)
    if(_su_first MATCHES "^bridge:(.+)$")
      set(_su_kind ${CMAKE_MATCH_1})
      list(APPEND STEPSIM_BRIDGE_KINDS ${_su_kind})
      set(STEPSIM_BRIDGE_${_su_kind}_UNITS "")
      set(STEPSIM_BRIDGE_${_su_kind}_OPS "")
      foreach(_su_w ${_su_words})
        if(_su_w MATCHES "^units:(.+)$")
          string(REPLACE "," ";" STEPSIM_BRIDGE_${_su_kind}_UNITS "${CMAKE_MATCH_1}")
        elseif(_su_w MATCHES "^ops:(.+)$")
          string(REPLACE "," ";" STEPSIM_BRIDGE_${_su_kind}_OPS "${CMAKE_MATCH_1}")
        else()
          message(FATAL_ERROR "rtl/units.list: bridge:${_su_kind}: unknown word '${_su_w}'")
        endif()
      endforeach()
      continue()
    endif()
    set(_su_m ${_su_first})
    list(APPEND STEPSIM_RTL_MODULES ${_su_m})
    set(STEPSIM_RTL_${_su_m}_FLAGS "")
    set(STEPSIM_RTL_${_su_m}_EXTRA "")
    set(STEPSIM_RTL_${_su_m}_OF "")
    set(STEPSIM_RTL_${_su_m}_G "")
    set(_su_unit "")
    set(_su_hls "")
    foreach(_su_w ${_su_words})
      if(_su_w MATCHES "^(lib|noquick|noshare|t16|direct)$")
        list(APPEND STEPSIM_RTL_${_su_m}_FLAGS ${_su_w})
      elseif(_su_w MATCHES "^of:(.+)$")
        set(STEPSIM_RTL_${_su_m}_OF ${CMAKE_MATCH_1})
      elseif(_su_w MATCHES "^G:(.+)$")
        list(APPEND STEPSIM_RTL_${_su_m}_G -G${CMAKE_MATCH_1})
        list(APPEND STEPSIM_RTL_PARAMETERS "${_su_m}_${CMAKE_MATCH_1}")
      elseif(_su_w MATCHES "^unit:(.+)$")
        set(_su_unit ${CMAKE_MATCH_1})
      elseif(_su_w MATCHES "^hls:(.+)$")
        set(_su_hls ${CMAKE_MATCH_1})
      elseif(_su_w MATCHES "^(quick|area):")
        # synthesis only (rtl/synth.sh)
      elseif(_su_w MATCHES ":")
        message(FATAL_ERROR "rtl/units.list: ${_su_m}: unknown word '${_su_w}'")
      else()
        list(APPEND STEPSIM_RTL_${_su_m}_EXTRA ${_su_w})
      endif()
    endforeach()
    if(NOT _su_unit STREQUAL "")
      if(_su_hls STREQUAL "")
        message(FATAL_ERROR "rtl/units.list: ${_su_m}: unit:${_su_unit} without its hls: type")
      endif()
      # The class's header: ShapeZip<kZipN,kW> -> hw/units/shape_zip.h.
      string(REGEX REPLACE "<.*$" "" _su_class "${_su_hls}")
      string(REGEX REPLACE "([a-z0-9])([A-Z])" "\\1_\\2" _su_header "${_su_class}")
      string(TOLOWER "${_su_header}" _su_header)
      if(NOT EXISTS ${CMAKE_SOURCE_DIR}/hw/units/${_su_header}.h)
        message(FATAL_ERROR "rtl/units.list: ${_su_m}: hls:${_su_hls}: no hw/units/${_su_header}.h")
      endif()
      list(APPEND STEPSIM_UNITS ${_su_unit})
      set(STEPSIM_UNIT_${_su_unit}_LINE ${_su_m})
      set(STEPSIM_UNIT_${_su_unit}_HLS "${_su_hls}")
      set(STEPSIM_UNIT_${_su_unit}_HEADER hw/units/${_su_header}.h)
    endif()
  endforeach()
  foreach(_su_kind ${STEPSIM_BRIDGE_KINDS})
    foreach(_su_unit ${STEPSIM_BRIDGE_${_su_kind}_UNITS})
      if(NOT _su_unit IN_LIST STEPSIM_UNITS)
        message(FATAL_ERROR "rtl/units.list: bridge:${_su_kind} names unit ${_su_unit}, which no line has")
      endif()
    endforeach()
  endforeach()
endmacro()

# Writes CONTENT to PATH only if it differs from what PATH holds (configure_file COPYONLY keeps
# the file and its time stamp otherwise), so a reconfigure rebuilds nothing that did not change.
function(stepsim_write_if_changed path content)
  get_filename_component(name ${path} NAME)
  set(tmp ${CMAKE_BINARY_DIR}/CMakeFiles/stepsim_generated/${name}.tmp)
  file(WRITE ${tmp} "${content}")
  configure_file(${tmp} ${path} COPYONLY)
endfunction()

set(STEPSIM_GENERATED_NOTE "Generated by rtl/units.cmake from rtl/units.list: do not edit")

# hw/bridge/unit_kinds.h under STEPSIM_GENERATED_DIR: one struct per bridge kind, whose members
# hw/bridge defines (unsupported in unit_bridge.cpp, pmu_bridge.cpp, ag_bridge.cpp; create in
# unit_bridges.h).
function(stepsim_generate_unit_kinds)
  set(c "// ${STEPSIM_GENERATED_NOTE}.\n// The bridge kinds of the manifest's bridge: lines (hw/bridge/unit_bridge.h, UnitRoute).\n")
  string(APPEND c "#pragma once\n\n#include <memory>\n#include <string>\n\n#include \"hw/bridge/unit_bridge.h\"\n\n")
  string(APPEND c "namespace stepsim::bridge::kinds {\n")
  foreach(kind ${STEPSIM_BRIDGE_KINDS})
    string(APPEND c "\nstruct ${kind} {\n"
      "  static std::string unsupported(const OpConfig& cfg, OpMode mode);\n"
      "  template <class U>\n"
      "  static std::unique_ptr<Op> create(const OpConfig& cfg, OpMode mode, const std::string& impl);\n"
      "};\n")
  endforeach()
  string(APPEND c "\n}  // namespace stepsim::bridge::kinds\n\n")
  # The configuration lines' parameter overrides, so that the bridges' constants (the HLS twins'
  # template arguments, the capacities they check) are the Verilated ones, written once.
  string(APPEND c "// The G:P=V overrides of the configuration lines, as <line>_<P>.\nnamespace stepsim::bridge::manifest {\n")
  foreach(p ${STEPSIM_RTL_PARAMETERS})
    string(REPLACE "=" " = " p "${p}")
    string(APPEND c "constexpr int ${p};\n")
  endforeach()
  string(APPEND c "}  // namespace stepsim::bridge::manifest\n")
  stepsim_write_if_changed(${STEPSIM_GENERATED_DIR}/hw/bridge/unit_kinds.h "${c}")
endfunction()

# stepsim_generate_bridges(IMPL OUT_VAR): the sources of implementation IMPL (hls or rtl) under
# STEPSIM_GENERATED_DIR/hw/bridge/IMPL: <IMPL>_<Kind>.cpp per bridge kind (the kind's unit table,
# `struct <Impl><Kind>Units { using NAME = TYPE; ... }`, and its factory create_<IMPL>_<Kind>) and
# <IMPL>_routes.cpp (UnitImpl <IMPL>_unit_impl(): the routes, in the manifest's order). The unit
# types: hls, the manifest's hls: class in namespace units; rtl, the Verilated model V<line>
# (Direct<V<line>_direct> for a `direct` line: hw/bridge/rtl/direct_unit.h), or void for a t16 line
# when the build has no stepsim_rtl_t16 (the bridges then reject [16 x 16] tiles).
function(stepsim_generate_bridges impl out)
  set(dir ${STEPSIM_GENERATED_DIR}/hw/bridge/${impl})
  string(SUBSTRING ${impl} 0 1 first)
  string(TOUPPER ${first} first)
  string(SUBSTRING ${impl} 1 -1 rest)
  set(Impl ${first}${rest})
  set(sources "")
  set(decls "")
  set(routes "")
  foreach(kind ${STEPSIM_BRIDGE_KINDS})
    set(headers "")
    set(usings "")
    foreach(unit ${STEPSIM_BRIDGE_${kind}_UNITS})
      set(line ${STEPSIM_UNIT_${unit}_LINE})
      if(impl STREQUAL "hls")
        list(APPEND headers ${STEPSIM_UNIT_${unit}_HEADER})
        string(REPLACE "," ", " type "units::${STEPSIM_UNIT_${unit}_HLS}")
      elseif("t16" IN_LIST STEPSIM_RTL_${line}_FLAGS AND NOT TARGET stepsim_rtl_t16)
        set(type void)  # no stepsim_rtl_t16 (STEPSIM_RTL_T16=OFF)
      elseif("direct" IN_LIST STEPSIM_RTL_${line}_FLAGS)
        list(APPEND headers hw/bridge/rtl/direct_unit.h V${line}_direct.h)
        set(type Direct<V${line}_direct>)
      else()
        list(APPEND headers V${line}.h)
        set(type V${line})
      endif()
      string(APPEND usings "  using ${unit} = ${type};\n")
    endforeach()
    list(REMOVE_DUPLICATES headers)
    set(includes "")
    foreach(h ${headers})
      string(APPEND includes "#include \"${h}\"\n")
    endforeach()
    set(c "// ${STEPSIM_GENERATED_NOTE}.\n// bridge:${kind} over the ${impl} units.\n")
    string(APPEND c "#include \"hw/bridge/unit_bridges.h\"\n${includes}\n")
    string(APPEND c "namespace stepsim::bridge {\n\nstruct ${Impl}${kind}Units {\n${usings}};\n\n")
    string(APPEND c "std::unique_ptr<Op> create_${impl}_${kind}(const OpConfig& cfg, OpMode mode) {\n"
      "  return kinds::${kind}::create<${Impl}${kind}Units>(cfg, mode, \"${impl}\");\n}\n\n"
      "}  // namespace stepsim::bridge\n")
    stepsim_write_if_changed(${dir}/${impl}_${kind}.cpp "${c}")
    list(APPEND sources ${dir}/${impl}_${kind}.cpp)
    string(APPEND decls "std::unique_ptr<Op> create_${impl}_${kind}(const OpConfig& cfg, OpMode mode);\n")
    foreach(route ${STEPSIM_BRIDGE_${kind}_OPS})
      if(NOT route MATCHES "^([A-Za-z0-9_]+)(/([A-Za-z0-9_]+))?(=([A-Za-z0-9_]+))?$")
        message(FATAL_ERROR "rtl/units.list: bridge:${kind}: route '${route}' is not OP[/FN][=MODE]")
      endif()
      set(mode Plain)
      if(NOT "${CMAKE_MATCH_5}" STREQUAL "")
        set(mode ${CMAKE_MATCH_5})
      endif()
      string(APPEND routes "      {OpKind::k${CMAKE_MATCH_1}, \"${CMAKE_MATCH_3}\", OpMode::k${mode}, \"${kind}\", "
        "&kinds::${kind}::unsupported, &create_${impl}_${kind}},\n")
    endforeach()
  endforeach()
  set(c "// ${STEPSIM_GENERATED_NOTE}.\n// impl: ${impl}: which operators run on which bridge kind (UnitRoute).\n")
  string(APPEND c "#include \"hw/bridge/unit_bridge.h\"\n#include \"hw/bridge/unit_kinds.h\"\n\n")
  string(APPEND c "namespace stepsim::bridge {\n\n${decls}\nUnitImpl ${impl}_unit_impl() {\n"
    "  return make_unit_impl(\"${impl}\", {\n${routes}  });\n}\n\n}  // namespace stepsim::bridge\n")
  stepsim_write_if_changed(${dir}/${impl}_routes.cpp "${c}")
  list(APPEND sources ${dir}/${impl}_routes.cpp)
  set(${out} ${sources} PARENT_SCOPE)
endfunction()
