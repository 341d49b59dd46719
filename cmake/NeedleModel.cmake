# needle_add_model(<target> MODEL <path> LAYERS <n> [NAME <name>] [MAX_SEQ <n>]
#                  [EMIT obj|cpp] [TARGET <t>] [MCPU <cpu>] [MATTR <features>] [TOOLS <tools.json>])
#
# Compiles a Needle model with needlec at build time and adds a static library <target> holding
# it; link it and include "<name>.h" (NAME defaults to <target>; it prefixes every symbol, so
# several models link into one program). EMIT obj (the default) compiles to one object for
# TARGET (default host; the product's toolchain must build for the same target) with MCPU and
# MATTR passed as --mcpu/--mattr; EMIT cpp to standalone C++ that the product's compiler builds.
# TOOLS compiles the automaton of the tools' calls in (needlec --tools; NAME_call,
# docs/tool-calls.md). needlec is this project's target when it is part of the build, else the program named by
# NEEDLEC_EXECUTABLE (or found on PATH).
function(needle_add_model target)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "MODEL;LAYERS;NAME;MAX_SEQ;EMIT;TARGET;MCPU;MATTR;TOOLS" "")
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "needle_add_model: unknown arguments ${ARG_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT ARG_MODEL OR NOT ARG_LAYERS)
    message(FATAL_ERROR "needle_add_model(${target}): MODEL and LAYERS are required")
  endif()
  if(NOT ARG_NAME)
    set(ARG_NAME ${target})
  endif()
  if(TARGET needlec)
    set(needlec $<TARGET_FILE:needlec>)
    set(needlec_dependency needlec)
  else()
    find_program(NEEDLEC_EXECUTABLE needlec REQUIRED)
    set(needlec ${NEEDLEC_EXECUTABLE})
    set(needlec_dependency ${NEEDLEC_EXECUTABLE})
  endif()
  set(model_flags) # --max-seq, --tools
  if(ARG_MAX_SEQ)
    set(model_flags --max-seq ${ARG_MAX_SEQ})
  endif()
  if(ARG_TOOLS)
    get_filename_component(tools_file ${ARG_TOOLS} ABSOLUTE)
    list(APPEND model_flags --tools ${tools_file})
  endif()
  get_filename_component(model ${ARG_MODEL} ABSOLUTE)
  # A model directory's files are the dependencies; a .needle file is one.
  if(IS_DIRECTORY ${model})
    file(GLOB model_files ${model}/*)
  else()
    set(model_files ${model})
  endif()
  if(NOT ARG_EMIT)
    set(ARG_EMIT obj)
  endif()
  set(out ${CMAKE_CURRENT_BINARY_DIR}/${ARG_NAME})
  if(ARG_EMIT STREQUAL "cpp")
    if(ARG_TARGET OR ARG_MCPU OR ARG_MATTR)
      message(FATAL_ERROR "needle_add_model(${target}): TARGET, MCPU and MATTR need EMIT obj")
    endif()
    add_custom_command(
      OUTPUT ${out}.cpp ${out}.h
      COMMAND ${needlec} ${model} --layers ${ARG_LAYERS} --emit cpp --name ${ARG_NAME} ${model_flags} -o ${out}
      DEPENDS ${needlec_dependency} ${model_files} ${tools_file}
      COMMENT "needlec: ${ARG_MODEL} at ${ARG_LAYERS} blocks -> ${ARG_NAME}.cpp"
      VERBATIM)
    add_library(${target} STATIC ${out}.cpp ${out}.h)
    set_target_properties(${target} PROPERTIES CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON LINKER_LANGUAGE CXX)
  elseif(ARG_EMIT STREQUAL "obj")
    if(NOT ARG_TARGET)
      set(ARG_TARGET host)
    endif()
    set(cpu_flags)
    if(ARG_MCPU)
      list(APPEND cpu_flags --mcpu ${ARG_MCPU})
    endif()
    if(ARG_MATTR)
      list(APPEND cpu_flags --mattr ${ARG_MATTR})
    endif()
    add_custom_command(
      OUTPUT ${out}.o ${out}.h
      COMMAND ${needlec} ${model} --layers ${ARG_LAYERS} --emit obj --target ${ARG_TARGET} ${cpu_flags}
              --name ${ARG_NAME} ${model_flags} -o ${out}
      DEPENDS ${needlec_dependency} ${model_files} ${tools_file}
      COMMENT "needlec: ${ARG_MODEL} at ${ARG_LAYERS} blocks -> ${ARG_NAME}.o (${ARG_TARGET})"
      VERBATIM)
    set_source_files_properties(${out}.o PROPERTIES EXTERNAL_OBJECT TRUE GENERATED TRUE)
    add_library(${target} STATIC ${out}.o ${out}.h)
    # The object calls libc's memory functions and libm (docs/targets.md).
    set_target_properties(${target} PROPERTIES LINKER_LANGUAGE C)
    target_link_libraries(${target} PUBLIC m)
  else()
    message(FATAL_ERROR "needle_add_model(${target}): EMIT ${ARG_EMIT} is not obj or cpp")
  endif()
  target_include_directories(${target} PUBLIC ${CMAKE_CURRENT_BINARY_DIR})
endfunction()
