#include "mmpt/load/loader.h"

#include <algorithm>

#include <fmt/format.h>

#include "mmpt/load/batch_view.h"
#include "mmpt/plan/cp_stage.h"

namespace mmpt::load {

Result<std::unique_ptr<Loader>> Loader::Start(std::shared_ptr<const SampleSource> source,
                                              PlanFunction plans, LoaderOptions options,
                                              LoaderPosition start) {
  if (source == nullptr || !plans) {
    return Status::InvalidArgument("loader: a sample source and a plan function are required");
  }
  if (options.threads == 0) {
    return Status::InvalidArgument("loader: threads must be at least 1");
  }
  MMPT_ASSIGN_OR_RETURN(std::shared_ptr<const plan::StepPlan> first, plans(start.step));
  if (first == nullptr) return Status::Internal("loader: plan of step {} is null", start.step);
  const plan::Layout& layout = first->layout;
  if (options.dp_rank >= layout.dp || options.cp_rank >= layout.cp) {
    return Status::InvalidArgument(
        "loader: dp rank {} / cp rank {} outside the plan's layout (dp {}, cp {})", options.dp_rank,
        options.cp_rank, layout.dp, layout.cp);
  }
  if (start.micro_step >= layout.ga) {
    return Status::InvalidArgument("loader: start micro-step {} outside the plan's {} (ga)",
                                   start.micro_step, layout.ga);
  }
  options.assemble.cp_rank = options.cp_rank;
  options.assemble.patch_dim = source->patch_dim();
  options.assemble.merge_size = source->merge_size();
  options.assemble.tokens_per_second = source->tokens_per_second();
  const AudioFeatureShape audio = source->audio_features();
  options.assemble.mel_bins = audio.mel_bins;
  options.assemble.audio_window_frames = audio.window_frames;
  std::unique_ptr<Loader> loader(
      new Loader(std::move(source), std::move(plans), options, start, layout.ga));
  loader->plan_cache_[start.step] = std::move(first);
  for (uint32_t i = 0; i < options.threads; ++i) {
    loader->workers_.emplace_back([l = loader.get()] { l->WorkerLoop(); });
  }
  return loader;
}

Loader::Loader(std::shared_ptr<const SampleSource> source, PlanFunction plans,
               LoaderOptions options, LoaderPosition start, uint32_t ga)
    : source_(std::move(source)),
      plans_(std::move(plans)),
      options_(options),
      start_(start),
      ga_(ga),
      ready_(std::max<uint32_t>(1, options.prefetch_micro_steps)),
      next_(start) {}

Loader::~Loader() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  turn_cv_.notify_all();
  bytes_cv_.notify_all();
  ready_.Close();
  for (std::thread& t : workers_) t.join();
}

LoaderPosition Loader::PositionOf(uint64_t sequence) const {
  const uint64_t total = start_.micro_step + sequence;
  return {start_.step + total / ga_, static_cast<uint32_t>(total % ga_)};
}

Result<std::shared_ptr<const plan::StepPlan>> Loader::PlanOf(uint64_t step) {
  std::lock_guard lock(mu_);
  auto it = plan_cache_.find(step);
  if (it != plan_cache_.end()) return it->second;
  // Planning under the lock: one plan per step, computed once, cheap next to loading it.
  MMPT_ASSIGN_OR_RETURN(std::shared_ptr<const plan::StepPlan> plan, plans_(step));
  if (plan == nullptr) return Status::Internal("loader: plan of step {} is null", step);
  if (plan->layout.ga != ga_ || plan->layout.dp <= options_.dp_rank ||
      plan->layout.cp <= options_.cp_rank) {
    return Status::Internal("loader: plan of step {} has a different layout than step {}", step,
                            start_.step);
  }
  // Keep only recent steps: workers are at most a few micro-steps apart.
  while (plan_cache_.size() >= 4) plan_cache_.erase(plan_cache_.begin());
  plan_cache_[step] = plan;
  return plan;
}

uint64_t Loader::EstimateBytes(const plan::StepPlan& plan, uint32_t micro_step) const {
  uint64_t tokens = 0, patches = 0, clips = 0, clip_frames = 0;
  const AudioFeatureShape audio = source_->audio_features();
  for (uint32_t slot = 0; slot < plan.layout.mbs; ++slot) {
    const plan::PlannedPack& pack = plan.Pack(options_.dp_rank, micro_step, slot);
    for (const plan::PlannedSequence& seq : plan.Sequences(pack)) {
      tokens += seq.tokens + seq.cp_padding + plan.layout.PadMultiple();
      for (const plan::PlannedImage& image : plan.Images(seq)) patches += image.patches;
      for (const plan::PlannedVideo& video : plan.Videos(seq)) patches += video.patches;
      for (std::span<const plan::PlannedAudio> clip : plan::AudioClips(plan.Audios(seq))) {
        ++clips;
        uint64_t frames = 0;
        for (const plan::PlannedAudio& part : clip) frames += part.valid_frames;
        clip_frames = std::max<uint64_t>(clip_frames,
                                         audio.window_frames != 0 ? audio.window_frames : frames);
      }
    }
  }
  // Per token: every per-token array of a Batch, positions as M-RoPE's 3 rows (the most).
  const uint64_t token_bytes = tokens / plan.layout.cp * BytesPerToken(3);
  // Every clip padded to the longest: features and mask.
  const uint64_t audio_bytes = clips * clip_frames * (uint64_t{audio.mel_bins} + 1) * 4;
  return token_bytes + patches * options_.assemble.patch_dim * sizeof(float) + audio_bytes;
}

void Loader::WorkerLoop() {
  while (true) {
    uint64_t k;
    {
      std::lock_guard lock(mu_);
      if (stopping_) return;
      k = next_sequence_++;
    }
    const LoaderPosition pos = PositionOf(k);
    if (pos.step >= options_.end_step) return;

    Result<std::shared_ptr<Batch>> result = Status::Internal("unset");
    Result<std::shared_ptr<const plan::StepPlan>> plan = PlanOf(pos.step);
    const uint64_t reserved = plan.ok() ? EstimateBytes(**plan, pos.micro_step) : 0;
    {
      std::unique_lock lock(mu_);
      // Memory is reserved in micro-step order, and a micro-step may always start when nothing
      // else is in flight: the bound holds and can never deadlock.
      bytes_cv_.wait(lock, [&] {
        return stopping_ || (reserved_ == k && (bytes_of_.empty() ||
                                                bytes_in_flight_ + reserved <= options_.max_bytes));
      });
      if (stopping_) return;
      ++reserved_;
      bytes_in_flight_ += reserved;
      bytes_of_[k] = reserved;
      stats_.peak_bytes_in_flight = std::max(stats_.peak_bytes_in_flight, bytes_in_flight_);
      stats_.peak_micro_steps_in_flight =
          std::max<uint64_t>(stats_.peak_micro_steps_in_flight, bytes_of_.size());
    }
    bytes_cv_.notify_all();
    if (!plan.ok()) {
      result = plan.status().WithContext(fmt::format("plan of step {}", pos.step));
    } else {
      Result<Batch> built = Build(**plan, pos.micro_step);
      if (built.ok()) {
        built->step = pos.step;
        built->micro_step = pos.micro_step;
        built->dp_rank = options_.dp_rank;
        built->plan_hash = (*plan)->Hash();
        built->plan_dropped = (*plan)->dropped.size();
        result = std::make_shared<Batch>(std::move(*built));
      } else {
        result = built.status().WithContext(
            fmt::format("step {} micro-step {} (dp rank {}, cp rank {})", pos.step, pos.micro_step,
                        options_.dp_rank, options_.cp_rank));
      }
    }
    const bool failed = !result.ok();
    {
      std::unique_lock lock(mu_);
      turn_cv_.wait(lock, [&] { return stopping_ || pushed_ == k; });
      if (stopping_) return;
    }
    // Only the worker whose turn it is pushes, so batches enter the queue in order.
    if (!ready_.Push({k, std::move(result)})) return;
    {
      std::lock_guard lock(mu_);
      ++pushed_;
      // After an error nothing later is delivered: the consumer stops at the error.
      if (failed) stopping_ = true;
    }
    turn_cv_.notify_all();
    bytes_cv_.notify_all();
  }
}

Result<Batch> Loader::Build(const plan::StepPlan& plan, uint32_t micro_step) {
  const uint32_t mbs = plan.layout.mbs;
  if (plan.cp.size() != plan.packs.size()) {
    return Status::Internal("the plan of step {} has no cp stage (plan::AddCpStage)", plan.step);
  }
  // Per pack slot: the rendered samples, each one's place in the planned pack, and the cp
  // stage to execute (the plan's, or the plan's own cp stage re-run on what is left after a
  // drop, identically on every CP rank since every rank renders the whole pack).
  std::vector<std::vector<RenderedSample>> packs(mbs);
  std::vector<std::vector<uint32_t>> place(mbs);  // per rendered sample: its place in the pack
  std::vector<plan::PackCp> replanned(mbs);
  std::vector<const plan::PackCp*> cps(mbs);
  std::vector<DroppedSample> dropped;
  for (uint32_t slot = 0; slot < mbs; ++slot) {
    const size_t p = plan.PackIndex(options_.dp_rank, micro_step, slot);
    cps[slot] = &plan.cp[p];
    auto sequences = plan.Sequences(plan.packs[p]);
    for (uint32_t q = 0; q < sequences.size(); ++q) {
      Result<RenderedSample> rendered = source_->Render(plan, sequences[q]);
      if (rendered.ok()) {
        packs[slot].push_back(std::move(*rendered));
        place[slot].push_back(q);
      } else if (options_.on_error == ErrorPolicy::kSkip) {
        dropped.push_back(
            {sequences[q].source, sequences[q].index, slot, rendered.status().ToString()});
      } else {
        return rendered.status();
      }
    }
  }
  auto replan = [&](uint32_t slot) -> Status {
    const size_t p = plan.PackIndex(options_.dp_rank, micro_step, slot);
    if (packs[slot].empty()) return Status::OK();
    std::vector<uint8_t> kept(plan.packs[p].sequence_end - plan.packs[p].sequence_begin, 0);
    for (uint32_t q : place[slot]) kept[q] = 1;
    const plan::PackCpInput input = plan::MakePackCpInput(plan, p, kept);
    MMPT_ASSIGN_OR_RETURN(replanned[slot],
                          plan::PlanPackCp(plan.layout, input, plan.cp[p].vision.policy));
    cps[slot] = &replanned[slot];
    return Status::OK();
  };
  for (uint32_t slot = 0; slot < mbs; ++slot) {
    const plan::PlannedPack& pack = plan.Pack(options_.dp_rank, micro_step, slot);
    if (place[slot].size() < pack.sequence_end - pack.sequence_begin) {
      MMPT_RETURN_IF_ERROR(replan(slot));
    }
  }
  while (true) {
    uint32_t bad_pack = 0;
    const RenderedSample* bad_sample = nullptr;
    PixelFiller fill = [&](uint32_t pack, const RenderedSample& sample, const RenderedVisual& image,
                           std::span<float> out) {
      Status s = source_->FillPixels(sample, image, out);
      if (!s.ok()) {
        bad_pack = pack;
        bad_sample = &sample;
      }
      return s;
    };
    AudioFiller fill_audio = [&](uint32_t pack, const RenderedSample& sample,
                                 const RenderedAudio& audio, uint32_t frames,
                                 std::span<float> features, std::span<int32_t> mask) {
      Status s = source_->FillAudio(sample, audio, frames, features, mask);
      if (!s.ok()) {
        bad_pack = pack;
        bad_sample = &sample;
      }
      return s;
    };
    Result<Batch> batch = AssembleBatch(packs, cps, options_.assemble, fill, fill_audio);
    if (batch.ok()) {
      batch->dropped = std::move(dropped);
      return batch;
    }
    if (bad_sample == nullptr || options_.on_error == ErrorPolicy::kFail) {
      return batch.status();
    }
    if (plan.layout.cp > 1) {
      // Another CP rank encodes the other images and cannot know this one failed, so the
      // ranks would disagree on the pack; Render's checks (which every rank runs) missed it.
      return batch.status().WithContext(
          "cannot drop the sample consistently across the CP group (an image passed its "
          "checksum and header checks but failed to decode)");
    }
    dropped.push_back({bad_sample->source, bad_sample->index, bad_pack, batch.status().ToString()});
    const size_t at = bad_sample - packs[bad_pack].data();
    packs[bad_pack].erase(packs[bad_pack].begin() + at);
    place[bad_pack].erase(place[bad_pack].begin() + at);
    bool any = std::any_of(packs.begin(), packs.end(), [](const auto& p) { return !p.empty(); });
    if (!any) {
      return Status::Corrupt("every sample of the micro-step was dropped; last: {}",
                             dropped.back().reason);
    }
    MMPT_RETURN_IF_ERROR(replan(bad_pack));
  }
}

Result<std::shared_ptr<Batch>> Loader::Next() {
  if (!failed_.ok()) {
    return Status::Cancelled("loader stopped at an earlier error: {}", failed_.ToString());
  }
  if (next_.step >= options_.end_step) return std::shared_ptr<Batch>();
  std::optional<std::pair<uint64_t, Result<std::shared_ptr<Batch>>>> item = ready_.Pop();
  if (!item) return Status::Cancelled("loader: stopped");
  {
    std::lock_guard lock(mu_);
    auto it = bytes_of_.find(item->first);
    if (it != bytes_of_.end()) {
      bytes_in_flight_ -= it->second;
      bytes_of_.erase(it);
    }
  }
  bytes_cv_.notify_all();
  if (!item->second.ok()) {
    failed_ = item->second.status();
    return failed_;
  }
  std::shared_ptr<Batch> batch = std::move(*item->second);
  if (options_.comm != nullptr && batch->step != agreed_step_) {
    Status agree = comm::CheckPlanAgreement(*options_.comm, batch->plan_hash, batch->step);
    if (!agree.ok()) {
      failed_ = agree;
      return agree;
    }
    agreed_step_ = batch->step;
  }
  ++consumed_;
  next_ = PositionOf(consumed_);
  {
    std::lock_guard lock(mu_);
    ++stats_.batches;
    stats_.samples += batch->sample_index.size();
    stats_.images += batch->image_rows.size();
    stats_.dropped += batch->dropped.size();
  }
  return batch;
}

LoaderStats Loader::stats() const {
  std::lock_guard lock(mu_);
  LoaderStats s = stats_;
  s.bytes_in_flight = bytes_in_flight_;
  return s;
}

}  // namespace mmpt::load
