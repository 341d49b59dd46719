# Writes INPUT's bytes as a comma-separated list of hex literals to OUTPUT (for #include inside
# an array initializer): the runtime bitcode that needlec carries for each architecture.
file(READ ${INPUT} hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
file(WRITE ${OUTPUT}.tmp "${bytes}\n")
configure_file(${OUTPUT}.tmp ${OUTPUT} COPYONLY)
