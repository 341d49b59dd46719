# Writes NeedleVersion.inc for --version (run at every build by the needle_version target;
# configure_file leaves the file untouched when nothing changed, so nothing rebuilds then).
# In: SOURCE_DIR, OUTPUT, VERSION, LLVM_VERSION, HALIDE_VERSION.
execute_process(
  COMMAND git -C ${SOURCE_DIR} describe --always --dirty --abbrev=12
  OUTPUT_VARIABLE NEEDLE_COMMIT
  OUTPUT_STRIP_TRAILING_WHITESPACE
  ERROR_QUIET)
if(NOT NEEDLE_COMMIT)
  set(NEEDLE_COMMIT "unknown")
endif()
file(WRITE ${OUTPUT}.tmp
  "#define NEEDLE_VERSION \"${VERSION}\"\n"
  "#define NEEDLE_COMMIT \"${NEEDLE_COMMIT}\"\n"
  "#define NEEDLE_LLVM_VERSION \"${LLVM_VERSION}\"\n"
  "#define NEEDLE_HALIDE_VERSION \"${HALIDE_VERSION}\"\n")
configure_file(${OUTPUT}.tmp ${OUTPUT} COPYONLY)
