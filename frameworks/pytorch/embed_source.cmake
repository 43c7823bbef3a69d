# Writes the text file IN as a C string constant `edt_runtime_source` in OUT.
file(READ ${IN} _hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," _bytes "${_hex}")
file(WRITE ${OUT} "/* generated from runtime.py */\nstatic const char edt_runtime_source[] = {${_bytes} 0};\n")
