#include "mmpt/load/assemble.h"

#include <algorithm>

#include "mmpt/cp/thd_split.h"
#include "mmpt/load/mrope.h"
#include "mmpt/plan/cp_stage.h"

namespace mmpt::load {

Status ValidateRendered(const RenderedSample& sample, uint32_t merge_size) {
  if (sample.tokens.size() != sample.has_loss.size()) {
    return Status::InvalidArgument("sample {} of source {}: {} tokens but {} loss flags",
                                   sample.index, sample.source, sample.tokens.size(),
                                   sample.has_loss.size());
  }
  uint64_t end = 0;
  for (size_t k = 0; k < sample.visuals.size(); ++k) {
    const RenderedVisual& image = sample.visuals[k];
    const uint64_t merge2 = uint64_t{merge_size} * merge_size;
    const uint64_t patches = uint64_t{image.grid_t} * image.grid_h * image.grid_w;
    if (image.grid_h % merge_size != 0 || image.grid_w % merge_size != 0 ||
        patches != uint64_t{image.token_count} * merge2 || image.token_count == 0) {
      return Status::InvalidArgument(
          "sample {} of source {}, image {}: grid {}x{}x{} does not give {} tokens at merge {}",
          sample.index, sample.source, k, image.grid_t, image.grid_h, image.grid_w,
          image.token_count, merge_size);
    }
    if (image.token_start < end ||
        uint64_t{image.token_start} + image.token_count > sample.tokens.size()) {
      return Status::InvalidArgument(
          "sample {} of source {}, image {}: tokens [{}, +{}) overlap or leave the sample's {}",
          sample.index, sample.source, k, image.token_start, image.token_count,
          sample.tokens.size());
    }
    end = uint64_t{image.token_start} + image.token_count;
  }
  end = 0;
  for (size_t k = 0; k < sample.audios.size(); ++k) {
    const RenderedAudio& audio = sample.audios[k];
    Status status;
    cp::ForEachRun(audio, [&](const cp::TokenRun& run, uint32_t) {
      if (status.ok() &&
          (run.token_count == 0 || audio.valid_frames == 0 || run.token_start < end ||
           uint64_t{run.token_start} + run.token_count > sample.tokens.size())) {
        status = Status::InvalidArgument(
            "sample {} of source {}, audio {}: tokens [{}, +{}) ({} frames) are "
            "empty, overlap or leave the sample's {}",
            sample.index, sample.source, k, run.token_start, run.token_count, audio.valid_frames,
            sample.tokens.size());
      }
      end = uint64_t{run.token_start} + run.token_count;
    });
    MMPT_RETURN_IF_ERROR(status);
  }
  return Status::OK();
}

namespace {

// The full (unsharded) arrays of one padded pack.
struct PackArrays {
  std::vector<int32_t> tokens, labels, t, h, w;
  std::vector<float> loss_mask;
};

PackArrays FillPack(const std::vector<RenderedSample>& samples, const cp::ThdSplit& split,
                    const AssembleOptions& options) {
  const uint32_t padded = split.padded_tokens();
  PackArrays a;
  a.tokens.assign(padded, options.pad_token_id);
  a.labels.assign(padded, kIgnoreLabel);
  a.loss_mask.assign(padded, 0.0f);
  a.t.resize(padded);
  if (options.mrope) {
    a.h.resize(padded);
    a.w.resize(padded);
  }
  for (size_t s = 0; s < samples.size(); ++s) {
    const RenderedSample& sample = samples[s];
    const uint32_t base = split.cu_seqlens_padded[s];
    const uint32_t length = static_cast<uint32_t>(sample.tokens.size());
    const uint32_t sub_padded = split.cu_seqlens_padded[s + 1] - base;
    std::copy(sample.tokens.begin(), sample.tokens.end(), a.tokens.begin() + base);
    for (uint32_t i = 0; i + 1 < length; ++i) {
      if (sample.has_loss[i + 1]) {
        a.labels[base + i] = sample.tokens[i + 1];
        a.loss_mask[base + i] = 1.0f;
      }
    }
    std::span<int32_t> t(a.t.data() + base, sub_padded);
    if (options.mrope) {
      MropePositions(sample, options.merge_size, options.tokens_per_second, sub_padded - length, t,
                     std::span<int32_t>(a.h.data() + base, sub_padded),
                     std::span<int32_t>(a.w.data() + base, sub_padded));
    } else {
      for (uint32_t i = 0; i < sub_padded; ++i) t[i] = static_cast<int32_t>(i);
    }
  }
  return a;
}

// The batch's arrays of one kind's routing (its vision items, or its audio clips).
struct RoutingArrays {
  std::vector<int32_t>& rows;
  std::vector<int32_t>& encoder;
  std::vector<RouteSegment>& routes;
  std::vector<int32_t>& send_index;
  std::vector<int32_t>& splits;
  std::vector<int32_t>& gather_index;
  std::vector<int32_t>& positions;
};

// The routing of a micro-step's items (its vision items, or its audio clips): every pack's,
// items numbered across packs and local positions across their shards.
struct MicroStepRouting {
  explicit MicroStepRouting(uint32_t cp) {
    merged.encoded.resize(cp);
    merged.consumed.resize(cp);
  }
  cp::EncoderAssignment merged;  // the packs' assignments, as one
  std::vector<uint32_t> rows;    // per item: LLM rows

  // Append one pack's routing of its items (`rows` LLM rows each) under `assignment`, the items
  // numbered from `item_base` and local positions from `local_base`. Returns the pack's items
  // `cp_rank` encodes.
  std::vector<size_t> Append(const cp::EncoderAssignment& assignment,
                             std::span<const uint32_t> pack_rows, uint32_t cp_rank,
                             uint32_t item_base, uint32_t local_base) {
    std::vector<size_t> encoded;
    if (pack_rows.empty()) return encoded;
    for (size_t r = 0; r < merged.consumed.size(); ++r) {
      for (cp::RowSegment seg : assignment.consumed[r]) {
        seg.image += item_base;
        seg.local_offset += local_base;
        merged.consumed[r].push_back(seg);
      }
      for (uint32_t k : assignment.encoded[r]) merged.encoded[r].push_back(item_base + k);
    }
    for (size_t k = 0; k < pack_rows.size(); ++k) {
      const std::span<const uint32_t> encoders = assignment.encoders[k];
      merged.encoders.Add(encoders);
      rows.push_back(pack_rows[k]);
      if (std::find(encoders.begin(), encoders.end(), cp_rank) != encoders.end()) {
        encoded.push_back(k);
      }
    }
    return encoded;
  }

  // Into the batch's arrays: per item its rows and (first) encoder, every rank's segments by
  // consumer, and `cp_rank`'s exchange (cp::RankExchange).
  Status Fill(uint32_t cp_rank, const RoutingArrays& out) const {
    for (size_t k = 0; k < rows.size(); ++k) {
      out.rows.push_back(static_cast<int32_t>(rows[k]));
      out.encoder.push_back(static_cast<int32_t>(merged.encoders[k].front()));
    }
    for (size_t r = 0; r < merged.consumed.size(); ++r) {
      for (const cp::RowSegment& seg : merged.consumed[r]) {
        out.routes.push_back(
            {static_cast<int32_t>(r), static_cast<int32_t>(seg.image),
             static_cast<int32_t>(seg.row_begin), static_cast<int32_t>(seg.row_count),
             static_cast<int32_t>(seg.local_offset), static_cast<int32_t>(seg.source_rank)});
      }
    }
    MMPT_ASSIGN_OR_RETURN(cp::ExchangeIndices indices, cp::RankExchange(merged, rows, cp_rank));
    out.send_index = std::move(indices.send_index);
    out.splits = std::move(indices.send_splits);
    out.splits.insert(out.splits.end(), indices.recv_splits.begin(), indices.recv_splits.end());
    out.gather_index = std::move(indices.gather_index);
    out.positions = std::move(indices.positions);
    return Status::OK();
  }
};

// A vision item (image or video) or an audio clip this rank encodes, and where it comes from.
struct EncodedRef {
  uint32_t pack;
  const RenderedSample* sample;
  const RenderedVisual* image;
  int32_t index;  // among the micro-step's vision items
};
struct EncodedAudio {
  uint32_t pack;
  const RenderedSample* sample;
  const RenderedAudio* audio;
  int32_t index;  // among the micro-step's clips
};

// A pack's media in the plan's order, checked against its cp stage.
struct PackMedia {
  std::vector<std::pair<const RenderedSample*, const RenderedVisual*>> items;  // VisionItemOrder
  std::vector<std::pair<const RenderedSample*, const RenderedAudio*>> audios;  // token order
};

// Check pack `p`'s rendered samples against its split and assignments (Internal when they
// disagree: the plan and the renderer must not), and list its media in the plan's order.
Result<PackMedia> CheckPack(const std::vector<RenderedSample>& samples, const plan::PackCp& cp,
                            const AssembleOptions& options, size_t p) {
  const cp::ThdSplit& split = cp.split;
  if (options.cp_rank >= split.cp) {
    return Status::InvalidArgument("cp rank {} outside a CP group of {}", options.cp_rank,
                                   split.cp);
  }
  if (split.cu_seqlens.size() != samples.size() + 1) {
    return Status::Internal("pack {}: {} samples where the plan's split has {}", p, samples.size(),
                            split.cu_seqlens.size() - 1);
  }
  for (size_t s = 0; s < samples.size(); ++s) {
    const RenderedSample& sample = samples[s];
    MMPT_RETURN_IF_ERROR(ValidateRendered(sample, options.merge_size));
    if (sample.tokens.size() != split.cu_seqlens[s + 1] - split.cu_seqlens[s]) {
      return Status::Internal(
          "sample {} of source {} renders to {} tokens where the plan's "
          "split has {}",
          sample.index, sample.source, sample.tokens.size(),
          split.cu_seqlens[s + 1] - split.cu_seqlens[s]);
    }
  }
  PackMedia media;
  std::vector<std::pair<const RenderedSample*, const RenderedVisual*>> in_pack_order;
  std::vector<uint8_t> is_video;
  for (const RenderedSample& sample : samples) {
    for (const RenderedVisual& image : sample.visuals) {
      in_pack_order.push_back({&sample, &image});
      is_video.push_back(image.video);
    }
    for (const RenderedAudio& audio : sample.audios) media.audios.push_back({&sample, &audio});
  }
  for (uint32_t k : plan::VisionItemOrder(is_video)) media.items.push_back(in_pack_order[k]);
  if (cp.vision.encoders.size() != media.items.size()) {
    return Status::Internal("pack {}: {} images and videos where the plan's assignment has {}", p,
                            media.items.size(), cp.vision.encoders.size());
  }
  if (cp.audio.encoders.size() != media.audios.size()) {
    return Status::Internal("pack {}: {} audio clips where the plan's assignment has {}", p,
                            media.audios.size(), cp.audio.encoders.size());
  }
  return media;
}

// The pixels of every vision item this rank encodes, with their grids and indices.
Status FillPixels(const std::vector<EncodedRef>& encoded, const AssembleOptions& options,
                  const PixelFiller& fill, Batch& batch) {
  uint64_t floats[2] = {0, 0};  // of images, of videos
  for (const EncodedRef& ref : encoded) {
    floats[ref.image->video] +=
        uint64_t{ref.image->grid_t} * ref.image->grid_h * ref.image->grid_w * options.patch_dim;
  }
  batch.pixel_values.resize(floats[0]);
  batch.pixel_values_videos.resize(floats[1]);
  uint64_t at[2] = {0, 0};
  for (const EncodedRef& ref : encoded) {
    const RenderedVisual& item = *ref.image;
    const uint64_t n = uint64_t{item.grid_t} * item.grid_h * item.grid_w * options.patch_dim;
    std::vector<float>& pixels = item.video ? batch.pixel_values_videos : batch.pixel_values;
    Status filled = fill(ref.pack, *ref.sample, item, {pixels.data() + at[item.video], n});
    if (!filled.ok()) {
      return filled.WithContext(fmt::format("sample {} of source {}, {} {}", ref.sample->index,
                                            ref.sample->source, item.video ? "video" : "image",
                                            item.sample_image));
    }
    std::vector<int32_t>& grids = item.video ? batch.video_grid_thw : batch.image_grid_thw;
    grids.insert(grids.end(), {static_cast<int32_t>(item.grid_t), static_cast<int32_t>(item.grid_h),
                               static_cast<int32_t>(item.grid_w)});
    (item.video ? batch.encoded_videos : batch.encoded_images).push_back(ref.index);
    if (item.video) batch.second_per_grid_ts.push_back(item.second_per_grid_t);
    at[item.video] += n;
  }
  return Status::OK();
}

// The features of every audio clip this rank encodes, padded alike (AssembleOptions).
Status FillFeatures(const std::vector<EncodedAudio>& encoded, const AssembleOptions& options,
                    const AudioFiller& fill_audio, Batch& batch) {
  if (encoded.empty()) return Status::OK();
  uint32_t frames = options.audio_window_frames;
  if (frames == 0) {
    for (const EncodedAudio& e : encoded) frames = std::max(frames, e.audio->valid_frames);
  }
  batch.mel_bins = options.mel_bins;
  batch.feature_frames = frames;
  const size_t per_clip = size_t{options.mel_bins} * frames;
  batch.input_features.resize(encoded.size() * per_clip);
  batch.feature_attention_mask.resize(encoded.size() * frames);
  for (size_t e = 0; e < encoded.size(); ++e) {
    const EncodedAudio& ref = encoded[e];
    Status filled =
        fill_audio
            ? fill_audio(
                  ref.pack, *ref.sample, *ref.audio, frames,
                  std::span<float>(batch.input_features).subspan(e * per_clip, per_clip),
                  std::span<int32_t>(batch.feature_attention_mask).subspan(e * frames, frames))
            : Status::InvalidArgument("the micro-step has audio clips and no audio filler");
    if (!filled.ok()) {
      return filled.WithContext(fmt::format("sample {} of source {}, audio {}", ref.sample->index,
                                            ref.sample->source, ref.audio->sample_audio));
    }
    batch.encoded_audios.push_back(ref.index);
  }
  return Status::OK();
}

}  // namespace

Result<Batch> AssembleBatch(std::span<const std::vector<RenderedSample>> packs,
                            std::span<const plan::PackCp* const> cps,
                            const AssembleOptions& options, const PixelFiller& fill,
                            const AudioFiller& fill_audio) {
  if (cps.size() != packs.size()) {
    return Status::Internal("{} packs but {} cp stages", packs.size(), cps.size());
  }
  Batch batch;
  batch.cp_rank = options.cp_rank;
  batch.position_rows = options.mrope ? 3 : 1;
  batch.patch_dim = options.patch_dim;
  batch.cu_seqlens.push_back(0);
  batch.cu_seqlens_padded.push_back(0);

  // Per-token arrays of this rank's shard, built pack by pack; M-RoPE rows kept apart until
  // the end so position_ids is [3, T] contiguous.
  std::vector<int32_t> pos_t, pos_h, pos_w;
  std::vector<EncodedRef> encoded;
  std::vector<EncodedAudio> encoded_audio;
  int32_t unpadded_base = 0, padded_base = 0, local_base = 0, image_base = 0, audio_base = 0;
  const uint32_t cp = cps.empty() ? 1 : cps.front()->split.cp;
  MicroStepRouting vision(cp), audio(cp);

  for (size_t p = 0; p < packs.size(); ++p) {
    const std::vector<RenderedSample>& samples = packs[p];
    if (samples.empty()) continue;  // a pack whose samples were all dropped
    const cp::ThdSplit& split = cps[p]->split;
    MMPT_ASSIGN_OR_RETURN(PackMedia media, CheckPack(samples, *cps[p], options, p));
    batch.cp = split.cp;
    batch.pad_multiple = split.pad_multiple;
    for (const RenderedSample& sample : samples) {
      batch.sample_source.push_back(sample.source);
      batch.sample_index.push_back(sample.index);
    }
    PackArrays full = FillPack(samples, split, options);
    MMPT_ASSIGN_OR_RETURN(
        std::vector<uint32_t> shard,
        cp::PartitionedIndices(split.cu_seqlens_padded, split.cp, options.cp_rank));
    for (uint32_t index : shard) {
      batch.tokens.push_back(full.tokens[index]);
      batch.labels.push_back(full.labels[index]);
      batch.loss_mask.push_back(full.loss_mask[index]);
      pos_t.push_back(full.t[index]);
      if (options.mrope) {
        pos_h.push_back(full.h[index]);
        pos_w.push_back(full.w[index]);
      }
    }
    for (size_t s = 0; s < samples.size(); ++s) {
      batch.cu_seqlens.push_back(unpadded_base + static_cast<int32_t>(split.cu_seqlens[s + 1]));
      batch.cu_seqlens_padded.push_back(padded_base +
                                        static_cast<int32_t>(split.cu_seqlens_padded[s + 1]));
      batch.max_seqlen = std::max<int32_t>(
          batch.max_seqlen,
          static_cast<int32_t>(split.cu_seqlens_padded[s + 1] - split.cu_seqlens_padded[s]));
    }

    // Routed at CP 1 too (every segment this rank's own), so a trainer writes image and audio
    // rows at the positions the plan gives, the same way at every CP size.
    std::vector<uint32_t> rows;
    for (const auto& ref : media.items) rows.push_back(ref.second->token_count);
    for (size_t k : vision.Append(cps[p]->vision, rows, options.cp_rank, image_base, local_base)) {
      encoded.push_back({static_cast<uint32_t>(p), media.items[k].first, media.items[k].second,
                         image_base + static_cast<int32_t>(k)});
    }
    rows.clear();
    for (const auto& ref : media.audios) rows.push_back(cp::Rows(*ref.second));
    for (size_t k : audio.Append(cps[p]->audio, rows, options.cp_rank, audio_base, local_base)) {
      encoded_audio.push_back({static_cast<uint32_t>(p), media.audios[k].first,
                               media.audios[k].second, audio_base + static_cast<int32_t>(k)});
    }
    unpadded_base += static_cast<int32_t>(split.cu_seqlens.back());
    padded_base += static_cast<int32_t>(split.padded_tokens());
    local_base += static_cast<int32_t>(split.padded_tokens() / split.cp);
    image_base += static_cast<int32_t>(media.items.size());
    audio_base += static_cast<int32_t>(media.audios.size());
  }
  if (batch.cu_seqlens.size() == 1) {
    return Status::InvalidArgument("micro-step has no samples to assemble");
  }
  MMPT_RETURN_IF_ERROR(
      vision.Fill(options.cp_rank,
                  {batch.image_rows, batch.image_encoder, batch.routes, batch.exchange_send_index,
                   batch.exchange_splits, batch.exchange_gather_index, batch.exchange_positions}));
  MMPT_RETURN_IF_ERROR(audio.Fill(
      options.cp_rank, {batch.audio_rows, batch.audio_encoder, batch.audio_routes,
                        batch.audio_exchange_send_index, batch.audio_exchange_splits,
                        batch.audio_exchange_gather_index, batch.audio_exchange_positions}));
  batch.position_ids = std::move(pos_t);
  if (options.mrope) {
    batch.position_ids.insert(batch.position_ids.end(), pos_h.begin(), pos_h.end());
    batch.position_ids.insert(batch.position_ids.end(), pos_w.begin(), pos_w.end());
  }
  MMPT_RETURN_IF_ERROR(FillPixels(encoded, options, fill, batch));
  MMPT_RETURN_IF_ERROR(FillFeatures(encoded_audio, options, fill_audio, batch));
  return batch;
}

}  // namespace mmpt::load
