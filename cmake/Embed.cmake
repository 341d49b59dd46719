# needle_embed(<output> <input> TEXT|BINARY <comment>)
#
# Writes <input> to <output> at build time for #include: TEXT as a C++ raw string literal
# (EmbedText.cmake), BINARY as a comma-separated list of hex bytes for an array initializer
# (EmbedBinary.cmake). Rebuilt when the input or the script changes.
function(needle_embed output input kind comment)
  if(kind STREQUAL "TEXT")
    set(script ${PROJECT_SOURCE_DIR}/cmake/EmbedText.cmake)
  elseif(kind STREQUAL "BINARY")
    set(script ${PROJECT_SOURCE_DIR}/cmake/EmbedBinary.cmake)
  else()
    message(FATAL_ERROR "needle_embed: ${kind} is not TEXT or BINARY")
  endif()
  add_custom_command(
    OUTPUT ${output}
    COMMAND ${CMAKE_COMMAND} -DINPUT=${input} -DOUTPUT=${output} -P ${script}
    DEPENDS ${input} ${script}
    COMMENT "${comment}")
endfunction()
