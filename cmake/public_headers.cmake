# gpulua_public_headers(TARGET FOLDER HEADER...)
#
# A library's own folder (FOLDER, relative to the source root) is PRIVATE to
# it. What links the library sees only the HEADERs named here, the interface
# the layer above uses: they are copied into <build>/include/TARGET, the
# library's PUBLIC include folder (the copy follows the header: CMake runs
# again when it changes). Any other header of FOLDER stays internal, and a
# file of another target that includes it does not compile; a test that
# reaches a library's internals names FOLDER as an include folder itself.
#
# A public header may include only public headers (of this library, or of one
# below it, whose call came first): checked here, when CMake runs.
function(gpulua_public_headers target folder)
  set(out ${PROJECT_BINARY_DIR}/include/${target})
  set(kept "")
  foreach(h ${ARGN})
    set(src ${PROJECT_SOURCE_DIR}/${folder}/${h})
    if(NOT EXISTS ${src})
      message(FATAL_ERROR "gpulua_public_headers(${target}): ${folder}/${h} does not exist")
    endif()
    configure_file(${src} ${out}/${h} COPYONLY)
    list(APPEND kept ${out}/${h})
  endforeach()
  # a header no longer named is no longer public
  file(GLOB present ${out}/*)
  foreach(f ${present})
    if(NOT f IN_LIST kept)
      file(REMOVE ${f})
    endif()
  endforeach()
  foreach(h ${ARGN})
    file(STRINGS ${out}/${h} lines REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
    foreach(line ${lines})
      string(REGEX REPLACE "^[^\"]*\"([^\"]*)\".*$" "\\1" inc "${line}")
      file(GLOB found ${PROJECT_BINARY_DIR}/include/*/${inc})
      if(NOT found)
        message(FATAL_ERROR "gpulua_public_headers(${target}): ${folder}/${h} is public but includes "
                            "\"${inc}\", which is not: make it public too, or include it from a .c file")
      endif()
    endforeach()
  endforeach()
  target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR}/${folder} PUBLIC ${out})
endfunction()
