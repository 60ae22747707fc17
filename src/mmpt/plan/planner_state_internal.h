#pragma once

// The planner's saved state as bytes: the settings it was saved under (by name), where the
// sample stream stands and the samples waiting for the next step. Planner::SaveState and
// RestoreState, and Planner::StateWithinStep, share this format.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mmpt/core/status.h"
#include "mmpt/plan/sample_order.h"

namespace mmpt::plan::internal {

/// One planner setting: its name, its value as text, and whether a restore needs it unchanged.
/// Stream settings (the corpus, the seed, the blend) define the sample stream; the others (the
/// layout, packing options) only how it is planned, and may change at a restore.
struct Setting {
  std::string name;
  std::string value;
  bool stream = false;
};

/// Where the stream stands before a step: each source's cursor, and the samples carried into
/// the step (table rows ascending; a row may appear twice) with the steps each has waited.
struct StreamPoint {
  std::vector<SourceCursor> cursors;
  std::vector<uint64_t> carried_rows;
  std::vector<uint8_t> carried_ages;
};

/// A saved state. `before` is the planner before step `step`. With `micro_step` > 0 the state
/// was taken inside that step, before that micro-step; `rest` is then the planner before step
/// step + 1 with the step's unconsumed samples (micro-steps micro_step..ga-1 of every rank)
/// added to the carried ones.
struct SavedState {
  std::vector<Setting> settings;
  uint64_t step = 0;
  uint32_t micro_step = 0;
  StreamPoint before;
  std::optional<StreamPoint> rest;
};

std::string EncodeState(const SavedState& state);
/// Errors: Corrupt (bad magic, version, size or checksum; a version of an older build is named
/// as such).
Result<SavedState> DecodeState(std::string_view bytes);

}  // namespace mmpt::plan::internal
