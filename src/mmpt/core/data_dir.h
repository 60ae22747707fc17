#pragma once

#include <string>

#include "mmpt/core/status.h"

namespace mmpt {

/// Return the directory of mmpt's data: presets/ (vision, llm, hardware and chat templates),
/// tokenizer.json (the default tokenizer), bench/ (the Python loader baseline) and, where
/// present, real/ (the real COCO and mmc4 files). It is $MMPT_HOME when set; else the nearest
/// share/mmpt at or above the folder of the file running mmpt's code: the mmpt executable, or
/// the shared library (the Python extension) mmpt is linked into. An install puts it at
/// <prefix>/share/mmpt (beside <prefix>/bin/mmpt and <prefix>/lib/python3/dist-packages/mmpt),
/// `pip install` at mmpt/share/mmpt inside the package, and a build tree has
/// build/<preset>/share/mmpt, links into the source tree made at configure time. Nothing is
/// cached: each call looks again. Errors: NotFound naming $MMPT_HOME or the folder searched from.
Result<std::string> DataDir();

/// Return DataDir() + "/presets": one folder per kind (vision, llm, hardware, chat) of NAME.json
/// files. Errors: those of DataDir().
Result<std::string> PresetDir();

}  // namespace mmpt
