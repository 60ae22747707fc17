#pragma once

// Elastic resume as a test sees it: a run in segments, each under its own layout and restored
// from the state the previous one saved (at a step boundary or inside a step), and what it
// consumed compared with the sample stream. Shared by the planner's and the loader's tests.
// Test-only.

#include <gtest/gtest.h>

#include <map>
#include <span>
#include <string>
#include <vector>

#include "mmpt/plan/planner.h"
#include "mmpt/plan/sample_order.h"

namespace mmpt::plan::testing {

/// One segment of a run: `steps` whole steps under `config`, then, with `save_within` > 0, the
/// first `save_within` micro-steps of one more step, saved inside it; else saved at the boundary.
struct Segment {
  PlannerConfig config;
  int steps = 1;
  uint32_t save_within = 0;
};

/// What a run took from the stream: each row delivered (every rank's micro-steps), dropped by
/// a plan or still carried at the end, with its count; and the draws its plans made.
struct Taken {
  std::map<uint64_t, int64_t> rows;
  uint64_t draws = 0;
  std::vector<Planner::ResumePoint> resumes;  // one per segment after the first
};

inline uint64_t RowOf(const cost::SampleTable& table, uint32_t source, uint64_t index) {
  return table.source_begin[source] + index;
}

/// Deliver micro-steps [0, micro_steps) of `plan` over every rank into `out`, with the plan's
/// dropped samples and its draws.
inline void Deliver(const StepPlan& plan, const StepStats& stats, uint32_t micro_steps,
                    const cost::SampleTable& table, Taken* out) {
  for (const SampleId& id : plan.dropped) ++out->rows[RowOf(table, id.source, id.index)];
  out->draws += stats.drawn;
  for (uint32_t rank = 0; rank < plan.layout.dp; ++rank) {
    for (uint32_t micro = 0; micro < micro_steps; ++micro) {
      for (uint32_t slot = 0; slot < plan.layout.mbs; ++slot) {
        for (const PlannedSequence& seq : plan.Sequences(plan.Pack(rank, micro, slot))) {
          ++out->rows[RowOf(table, seq.source, seq.index)];
        }
      }
    }
  }
}

/// Run `segments` in order, each planner restored from the state the one before saved.
inline Taken RunSegments(const cost::SampleTable& table, const cost::CostModel& model,
                         std::span<const Segment> segments) {
  Taken taken;
  std::string state;
  for (size_t k = 0; k < segments.size(); ++k) {
    const Segment& segment = segments[k];
    auto planner = Planner::Create(table, model, segment.config);
    EXPECT_TRUE(planner.ok()) << planner.status().ToString();
    if (!planner.ok()) return taken;
    if (k > 0) {
      auto resume = planner->RestoreState(state);
      EXPECT_TRUE(resume.ok()) << resume.status().ToString();
      if (!resume.ok()) return taken;
      EXPECT_EQ(planner->next_step(), resume->step);
      taken.resumes.push_back(*resume);
    }
    const uint32_t ga = segment.config.layout.ga;
    for (int s = 0; s < segment.steps; ++s) {
      auto plan = planner->PlanStep();
      EXPECT_TRUE(plan.ok()) << plan.status().ToString();
      if (!plan.ok()) return taken;
      Deliver(*plan, planner->last_stats(), ga, table, &taken);
    }
    state = planner->SaveState();
    if (segment.save_within > 0) {
      auto plan = planner->PlanStep();
      EXPECT_TRUE(plan.ok()) << plan.status().ToString();
      if (!plan.ok()) return taken;
      Deliver(*plan, planner->last_stats(), segment.save_within, table, &taken);
      auto within =
          planner->StateWithinStep(state, planner->SaveState(), *plan, segment.save_within);
      EXPECT_TRUE(within.ok()) << within.status().ToString();
      if (!within.ok()) return taken;
      state = *within;
    }
    if (k + 1 == segments.size()) {
      for (const PlacedSample& sample : planner->carried()) ++taken.rows[sample.row];
    }
  }
  return taken;
}

/// The first `draws` rows of the sample stream of `table` under `config`, as a multiset.
inline std::map<uint64_t, int64_t> StreamPrefix(const cost::SampleTable& table,
                                                const PlannerConfig& config, uint64_t draws) {
  std::vector<uint64_t> sizes;
  for (uint32_t s = 0; s < table.num_sources(); ++s) sizes.push_back(table.source_size(s));
  auto order = SampleOrder::Create(sizes, config.source_weights, config.seed);
  EXPECT_TRUE(order.ok());
  std::map<uint64_t, int64_t> rows;
  for (uint64_t k = 0; order.ok() && k < draws; ++k) {
    const SampleOrder::Draw d = order->Next();
    ++rows[RowOf(table, d.source, d.index)];
  }
  return rows;
}

}  // namespace mmpt::plan::testing
