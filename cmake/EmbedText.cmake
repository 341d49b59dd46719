# Writes INPUT's text as a C++ raw string literal to OUTPUT (for #include inside an
# initializer): the runtime header that needlec carries into every emitted source.
file(READ ${INPUT} text)
file(WRITE ${OUTPUT}.tmp "R\"needle_text(${text})needle_text\"\n")
configure_file(${OUTPUT}.tmp ${OUTPUT} COPYONLY)
