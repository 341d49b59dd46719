# needle_add_model(<target> MODEL <path> LAYERS <n> [NAME <name>] [MAX_SEQ <n>])
#
# Compiles a Needle model with needlec at build time (--emit cpp) and adds a static library
# <target> holding it; link it and include "<name>.h" (NAME defaults to <target>; it prefixes
# every symbol, so several models link into one program). needlec is this project's target when
# it is part of the build, else the program named by NEEDLEC_EXECUTABLE (or found on PATH).
function(needle_add_model target)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "MODEL;LAYERS;NAME;MAX_SEQ" "")
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
  set(max_seq)
  if(ARG_MAX_SEQ)
    set(max_seq --max-seq ${ARG_MAX_SEQ})
  endif()
  get_filename_component(model ${ARG_MODEL} ABSOLUTE)
  # A model directory's files are the dependencies; a .needle file is one.
  if(IS_DIRECTORY ${model})
    file(GLOB model_files ${model}/*)
  else()
    set(model_files ${model})
  endif()
  set(out ${CMAKE_CURRENT_BINARY_DIR}/${ARG_NAME})
  add_custom_command(
    OUTPUT ${out}.cpp ${out}.h
    COMMAND ${needlec} ${model} --layers ${ARG_LAYERS} --emit cpp --name ${ARG_NAME} ${max_seq} -o ${out}
    DEPENDS ${needlec_dependency} ${model_files}
    COMMENT "needlec: ${ARG_MODEL} at ${ARG_LAYERS} blocks -> ${ARG_NAME}.cpp"
    VERBATIM)
  add_library(${target} STATIC ${out}.cpp ${out}.h)
  target_include_directories(${target} PUBLIC ${CMAKE_CURRENT_BINARY_DIR})
  set_target_properties(${target} PROPERTIES CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON LINKER_LANGUAGE CXX)
endfunction()
