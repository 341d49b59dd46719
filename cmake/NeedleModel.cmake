# needle_add_model(<target> MODEL <path> LAYERS <n> [NAME <name>] [EMIT obj|cpp]
#                  [TARGET <t>] [MCPU <cpu>] [MATTR <features>] [KERNELS native|portable]
#                  [ACTIVATIONS float|int8] [BATCH <n>] [MAX_SEQ <n>] [MAX_ROLLBACK <k>]
#                  [CODEBOOK needle|lloyd-max]
#                  [LORA <adapter.safetensors>] [TOKENIZER <tokenizer.json>|none] [STOP <tokens>|none]
#                  [TOOLS <tools.json>] [PROMPT <file>] [SCHEMA <schema.json>] [SCHEMA_PROMPT <file>]
#                  [CALL_END <token>] [MAX_QUERY <bytes>])
#
# Compiles a Needle model with needlec at build time and adds a static library <target> holding
# it; link it and include "<name>.h" (NAME defaults to <target>; it prefixes every symbol, so
# several models link into one program). Each option is needlec's flag of the same name
# (docs/command-line.md). EMIT obj (the default) compiles to one object for TARGET (default: the
# host, which a cross build must not take: give TARGET there); EMIT cpp to standalone C++ that the
# product's compiler builds. The header is rewritten only when its content changes, so new
# weights rebuild no source that includes it. needlec is this project's target when it is part of
# the build, else the package's (find_package(needlec)), else NEEDLEC_EXECUTABLE or needlec on PATH.

# The needlec to run, and what the command depends on for it, in the caller's scope.
function(_needle_find_needlec)
  if(TARGET needlec)
    set(needlec $<TARGET_FILE:needlec> PARENT_SCOPE)
    set(needlec_dependency needlec PARENT_SCOPE)
  elseif(TARGET needlec::needlec)
    set(needlec $<TARGET_FILE:needlec::needlec> PARENT_SCOPE)
    set(needlec_dependency needlec::needlec PARENT_SCOPE)
  else()
    find_program(NEEDLEC_EXECUTABLE needlec REQUIRED)
    set(needlec ${NEEDLEC_EXECUTABLE} PARENT_SCOPE)
    set(needlec_dependency ${NEEDLEC_EXECUTABLE} PARENT_SCOPE)
  endif()
endfunction()

# needlec's flags for the options given, and the files they name (dependencies of the command).
function(_needle_model_flags prefix)
  set(flags)
  set(files)
  foreach(option BATCH MAX_SEQ MAX_ROLLBACK ACTIVATIONS KERNELS MCPU MATTR CODEBOOK STOP CALL_END MAX_QUERY)
    if(DEFINED ${prefix}_${option})
      string(TOLOWER ${option} flag)
      string(REPLACE "_" "-" flag ${flag})
      list(APPEND flags --${flag} ${${prefix}_${option}})
    endif()
  endforeach()
  foreach(option LORA TOKENIZER TOOLS PROMPT SCHEMA SCHEMA_PROMPT)
    if(DEFINED ${prefix}_${option})
      string(TOLOWER ${option} flag)
      string(REPLACE "_" "-" flag ${flag})
      if(option STREQUAL "TOKENIZER" AND ${prefix}_${option} STREQUAL "none")
        list(APPEND flags --tokenizer none)
        continue()
      endif()
      get_filename_component(file ${${prefix}_${option}} ABSOLUTE)
      list(APPEND flags --${flag} ${file})
      list(APPEND files ${file})
    endif()
  endforeach()
  set(model_flags ${flags} PARENT_SCOPE)
  set(model_flag_files ${files} PARENT_SCOPE)
endfunction()

function(needle_add_model target)
  set(options_with_value MODEL LAYERS NAME EMIT TARGET MCPU MATTR KERNELS ACTIVATIONS BATCH MAX_SEQ MAX_ROLLBACK CODEBOOK
                         LORA TOKENIZER STOP TOOLS PROMPT SCHEMA SCHEMA_PROMPT CALL_END MAX_QUERY)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "${options_with_value}" "")
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "needle_add_model(${target}): unknown arguments ${ARG_UNPARSED_ARGUMENTS}")
  endif()
  if(ARG_KEYWORDS_MISSING_VALUES)
    message(FATAL_ERROR "needle_add_model(${target}): ${ARG_KEYWORDS_MISSING_VALUES} without a value")
  endif()
  if(NOT ARG_MODEL OR NOT ARG_LAYERS)
    message(FATAL_ERROR "needle_add_model(${target}): MODEL and LAYERS are required")
  endif()
  if(NOT ARG_NAME)
    set(ARG_NAME ${target})
  endif()
  if(NOT ARG_EMIT)
    set(ARG_EMIT obj)
  endif()
  if(ARG_EMIT STREQUAL "cpp")
    foreach(option TARGET MCPU MATTR KERNELS)
      if(DEFINED ARG_${option})
        message(FATAL_ERROR "needle_add_model(${target}): ${option} needs EMIT obj (EMIT cpp is built by the product's compiler)")
      endif()
    endforeach()
  elseif(ARG_EMIT STREQUAL "obj")
    if(NOT ARG_TARGET AND CMAKE_CROSSCOMPILING)
      message(FATAL_ERROR "needle_add_model(${target}): this build cross-compiles (CMAKE_SYSTEM_PROCESSOR "
                          "${CMAKE_SYSTEM_PROCESSOR}); give TARGET (x86_64, aarch64, armv7, riscv64, wasm32 or "
                          "an LLVM triple) so the object is for that machine, not this one")
    endif()
  else()
    message(FATAL_ERROR "needle_add_model(${target}): EMIT ${ARG_EMIT} is not obj or cpp")
  endif()
  _needle_find_needlec()
  _needle_model_flags(ARG)
  get_filename_component(model ${ARG_MODEL} ABSOLUTE)
  # A model directory's files are the dependencies; a .needle file is one.
  if(IS_DIRECTORY ${model})
    file(GLOB model_files ${model}/*)
  else()
    set(model_files ${model})
  endif()
  set(out ${CMAKE_CURRENT_BINARY_DIR}/${ARG_NAME})
  if(ARG_EMIT STREQUAL "cpp")
    set(suffix cpp)
  else()
    set(suffix o)
    if(ARG_TARGET)
      list(APPEND model_flags --target ${ARG_TARGET})
    endif()
  endif()
  set(outputs ${out}.${suffix} ${out}.h)
  add_custom_command(
    OUTPUT ${outputs}
    COMMAND ${needlec} ${model} --layers ${ARG_LAYERS} --emit ${ARG_EMIT} --name ${ARG_NAME} ${model_flags} -o ${out}
    DEPENDS ${needlec_dependency} ${model_files} ${model_flag_files}
    COMMENT "needlec: ${ARG_MODEL} at ${ARG_LAYERS} blocks -> ${ARG_NAME}.${suffix}"
    VERBATIM)
  add_library(${target} STATIC ${outputs})
  if(ARG_EMIT STREQUAL "cpp")
    set_target_properties(${target} PROPERTIES CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON LINKER_LANGUAGE CXX)
  else()
    set_source_files_properties(${out}.o PROPERTIES EXTERNAL_OBJECT TRUE GENERATED TRUE)
    # The object calls libc's memory functions and libm (docs/targets.md).
    set_target_properties(${target} PROPERTIES LINKER_LANGUAGE C)
    target_link_libraries(${target} PUBLIC m)
  endif()
  target_include_directories(${target} PUBLIC ${CMAKE_CURRENT_BINARY_DIR})
endfunction()
