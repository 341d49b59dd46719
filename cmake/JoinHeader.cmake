# Writes INPUT to OUTPUT with each line #include "NAME" replaced by the text of NAME (a header in
# INPUT's directory), recursively, each header once (a later #include of it is dropped): the
# runtime, kept in files by kernel family and instruction set, as the one self-contained text the
# C++ backend carries into every emitted source. -DJOINED="a.h;b.h" names includes already
# joined elsewhere in the same text: they are dropped.
cmake_minimum_required(VERSION 3.20) # IN_LIST, and while() without surprises
get_filename_component(directory ${INPUT} DIRECTORY)
file(READ ${INPUT} text)
set(joined ${JOINED})
while(1)
  string(REGEX MATCH "#include \"([^\"]+)\"\n" include "${text}")
  if(include STREQUAL "")
    break()
  endif()
  set(name ${CMAKE_MATCH_1})
  set(header "")
  if(NOT name IN_LIST joined)
    list(APPEND joined ${name})
    file(READ ${directory}/${name} header)
  endif()
  string(FIND "${text}" "${include}" at)
  string(LENGTH "${include}" length)
  math(EXPR rest "${at} + ${length}")
  string(SUBSTRING "${text}" 0 ${at} before)
  string(SUBSTRING "${text}" ${rest} -1 after)
  set(text "${before}${header}${after}")
endwhile()
file(WRITE ${OUTPUT}.tmp "${text}")
configure_file(${OUTPUT}.tmp ${OUTPUT} COPYONLY)
