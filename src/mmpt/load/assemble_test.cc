#include <gtest/gtest.h>

#include <map>
#include <numeric>
#include <set>

#include "mmpt/cp/thd_split.h"
#include "mmpt/load/assemble.h"
#include "mmpt/load/mrope.h"
#include "mmpt/plan/cp_stage.h"

namespace mmpt::load {
namespace {

// A text-only sample whose tokens are base, base+1, ... and all carry loss.
RenderedSample Text(uint64_t index, uint32_t length, int32_t base) {
  RenderedSample s;
  s.index = index;
  s.tokens.resize(length);
  std::iota(s.tokens.begin(), s.tokens.end(), base);
  s.has_loss.assign(length, 1);
  return s;
}

// A sample: `before` text tokens, one image of grid 1×gh×gw (merge 2), `after` text tokens.
RenderedSample WithImage(uint64_t index, uint32_t before, uint32_t gh, uint32_t gw,
                         uint32_t after) {
  const uint32_t image_tokens = gh * gw / 4;
  RenderedSample s = Text(index, before + image_tokens + after, 1000);
  for (uint32_t i = 0; i < image_tokens; ++i) {
    s.tokens[before + i] = 7;  // image pad
    s.has_loss[before + i] = 0;
  }
  s.visuals.push_back({before, image_tokens, 1, gh, gw, 0});
  return s;
}

// A video of grid gt×gh×gw (merge 2) at `second_per_grid_t`, appended to `s` after `before`
// more text tokens (video pad 8).
void AddVideo(RenderedSample& s, uint32_t before, uint32_t gt, uint32_t gh, uint32_t gw,
              float second_per_grid_t, uint32_t sample_image) {
  s.tokens.insert(s.tokens.end(), before, 1);
  s.has_loss.insert(s.has_loss.end(), before, 1);
  const uint32_t start = static_cast<uint32_t>(s.tokens.size());
  const uint32_t tokens = gt * gh * gw / 4;
  s.tokens.insert(s.tokens.end(), tokens, 8);
  s.has_loss.insert(s.has_loss.end(), tokens, 0);
  s.visuals.push_back({start, tokens, gt, gh, gw, sample_image, true, second_per_grid_t});
}

// An audio clip of `tokens` LLM tokens and `frames` mel frames, appended to `s` after `before`
// more text tokens (audio pad 9).
void AddAudio(RenderedSample& s, uint32_t before, uint32_t tokens, uint32_t frames,
              uint32_t sample_audio) {
  s.tokens.insert(s.tokens.end(), before, 1);
  s.has_loss.insert(s.has_loss.end(), before, 1);
  const uint32_t start = static_cast<uint32_t>(s.tokens.size());
  s.tokens.insert(s.tokens.end(), tokens, 9);
  s.has_loss.insert(s.has_loss.end(), tokens, 0);
  s.audios.push_back({start, tokens, frames, frames * 160, sample_audio});
}

// The cp stage of each pack as the planner makes it (plan::PlanPackCp), from the rendered
// samples: items cost their token count; images first, then videos (plan/cp_stage.h).
std::vector<plan::PackCp> PlanCp(const std::vector<std::vector<RenderedSample>>& packs,
                                 uint32_t cp) {
  std::vector<plan::PackCp> out;
  for (const std::vector<RenderedSample>& samples : packs) {
    plan::PackCpInput input;
    std::vector<uint32_t>& lengths = input.lengths;
    std::vector<cp::CpImage>&images = input.images, &audio = input.audio;
    for (bool videos : {false, true}) {
      uint32_t start = 0;
      for (const RenderedSample& sample : samples) {
        for (const RenderedVisual& image : sample.visuals) {
          if (image.video != videos) continue;
          images.push_back({start + image.token_start, image.token_count,
                            static_cast<double>(image.token_count)});
        }
        start += static_cast<uint32_t>(sample.tokens.size());
      }
    }
    uint32_t start = 0;
    for (const RenderedSample& sample : samples) {
      lengths.push_back(static_cast<uint32_t>(sample.tokens.size()));
      for (const RenderedAudio& clip : sample.audios) {
        audio.push_back(
            {start + clip.token_start, clip.token_count, static_cast<double>(clip.token_count)});
      }
      start += static_cast<uint32_t>(sample.tokens.size());
    }
    auto made = lengths.empty()
                    ? Result<plan::PackCp>(plan::PackCp{})
                    : plan::PlanPackCp(plan::Layout{.cp = cp}, input, cp::VisionPolicy::kCost);
    EXPECT_TRUE(made.ok()) << made.status().ToString();
    out.push_back(made.ok() ? std::move(*made) : plan::PackCp{});
  }
  return out;
}

// Assemble `packs` split over `cp` ranks as the plan splits them.
Result<Batch> Assemble(const std::vector<std::vector<RenderedSample>>& packs, uint32_t cp,
                       const AssembleOptions& options, const PixelFiller& fill,
                       const AudioFiller& fill_audio = nullptr) {
  const std::vector<plan::PackCp> cps = PlanCp(packs, cp);
  std::vector<const plan::PackCp*> pointers;
  for (const plan::PackCp& c : cps) pointers.push_back(&c);
  return AssembleBatch(packs, pointers, options, fill, fill_audio);
}

Status FillWithImageId(uint32_t, const RenderedSample& s, const RenderedVisual& image,
                       std::span<float> out) {
  std::fill(out.begin(), out.end(), static_cast<float>(s.index * 100 + image.sample_image));
  return Status::OK();
}

TEST(Assemble, LabelsShiftWithinSubsequencesAndPaddingHasNoLoss) {
  std::vector<std::vector<RenderedSample>> packs = {{Text(0, 5, 10), Text(1, 3, 20)}};
  packs[0][1].has_loss = {0, 0, 1};  // only the last token is a target
  AssembleOptions options;
  options.mrope = false;
  options.pad_token_id = -1;
  auto batch = Assemble(packs, 1, options, FillWithImageId);
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  // Pad multiple 2 (2·CP): 5 → 6, 3 → 4.
  EXPECT_EQ(batch->cu_seqlens, (std::vector<int32_t>{0, 5, 8}));
  EXPECT_EQ(batch->cu_seqlens_padded, (std::vector<int32_t>{0, 6, 10}));
  EXPECT_EQ(batch->max_seqlen, 6);
  EXPECT_EQ(batch->tokens, (std::vector<int32_t>{10, 11, 12, 13, 14, -1, 20, 21, 22, -1}));
  EXPECT_EQ(batch->labels,
            (std::vector<int32_t>{11, 12, 13, 14, -100, -100, -100, 22, -100, -100}));
  for (size_t i = 0; i < batch->labels.size(); ++i) {
    EXPECT_EQ(batch->loss_mask[i], batch->labels[i] == kIgnoreLabel ? 0.0f : 1.0f) << i;
  }
  EXPECT_EQ(batch->position_ids, (std::vector<int32_t>{0, 1, 2, 3, 4, 5, 0, 1, 2, 3}));
  EXPECT_EQ(batch->position_rows, 1u);
  EXPECT_TRUE(batch->pixel_values.empty());
  EXPECT_EQ(batch->sample_index, (std::vector<uint64_t>{0, 1}));
}

TEST(Assemble, APlansExtraPaddingLengthensItsSubsequence) {
  // The plan pads the first sample 2 tokens beyond the pad multiple (plan::SamplePadding):
  // 5 → 6 + 2, then 3 → 4; the padding is pad tokens without loss, positions run on.
  std::vector<std::vector<RenderedSample>> packs = {{Text(0, 5, 10), Text(1, 3, 20)}};
  plan::PackCpInput input;
  input.lengths = {5, 3};
  input.padding = {2, 0};
  auto cp = plan::PlanPackCp(plan::Layout{}, input, cp::VisionPolicy::kCost);
  ASSERT_TRUE(cp.ok()) << cp.status().ToString();
  const plan::PackCp* pointers[] = {&*cp};
  AssembleOptions options;
  options.mrope = false;
  options.pad_token_id = -1;
  auto batch = AssembleBatch(packs, pointers, options, FillWithImageId, nullptr);
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  EXPECT_EQ(batch->cu_seqlens, (std::vector<int32_t>{0, 5, 8}));
  EXPECT_EQ(batch->cu_seqlens_padded, (std::vector<int32_t>{0, 8, 12}));
  EXPECT_EQ(batch->tokens, (std::vector<int32_t>{10, 11, 12, 13, 14, -1, -1, -1, 20, 21, 22, -1}));
  EXPECT_EQ(batch->labels,
            (std::vector<int32_t>{11, 12, 13, 14, -100, -100, -100, -100, 21, 22, -100, -100}));
  EXPECT_EQ(batch->position_ids, (std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3}));
}

TEST(Assemble, MropeFollowsQwen2VlRopeIndex) {
  // 2 text tokens, an image of 4×6 patches (2×3 merged tokens), 3 text tokens.
  RenderedSample s = WithImage(0, 2, 4, 6, 3);
  std::vector<int32_t> t(11 + 1), h(12), w(12);
  MropePositions(s, 2, 0.0f, 1, t, h, w);
  EXPECT_EQ(t, (std::vector<int32_t>{0, 1, 2, 2, 2, 2, 2, 2, 5, 6, 7, 8}));
  EXPECT_EQ(h, (std::vector<int32_t>{0, 1, 2, 2, 2, 3, 3, 3, 5, 6, 7, 8}));
  EXPECT_EQ(w, (std::vector<int32_t>{0, 1, 2, 3, 4, 2, 3, 4, 5, 6, 7, 8}));

  // Two images back to back: the second starts one past the first's largest position.
  RenderedSample two = WithImage(0, 1, 2, 2, 0);
  two.tokens.push_back(7);
  two.has_loss.push_back(0);
  two.visuals.push_back({2, 1, 1, 2, 2, 1});
  std::vector<int32_t> t2(3), h2(3), w2(3);
  MropePositions(two, 2, 0.0f, 0, t2, h2, w2);
  EXPECT_EQ(t2, (std::vector<int32_t>{0, 1, 2}));
}

// Qwen2.5-VL's get_rope_index: a video's temporal row is ⌊f · second_per_grid_t ·
// tokens_per_second⌋ (float32); Qwen2-VL's (tokens_per_second 0) is f. Rows and columns as an
// image's; the text after it continues one past its largest position.
TEST(Assemble, MropeAlignsVideoTimeAsQwen25Vl) {
  RenderedSample s = Text(0, 0, 0);
  AddVideo(s, 1, 3, 2, 4, 1.25f, 0);  // 3 grid steps of 1×2 merged tokens, at 1.6 fps
  s.tokens.push_back(5);
  s.has_loss.push_back(1);
  const size_t n = s.tokens.size();
  ASSERT_EQ(n, 8u);
  std::vector<int32_t> t(n), h(n), w(n);
  MropePositions(s, 2, 2.0f, 0, t, h, w);
  EXPECT_EQ(t, (std::vector<int32_t>{0, 1, 1, 3, 3, 6, 6, 7}));  // 1 + {0, 2, 5}
  EXPECT_EQ(h, (std::vector<int32_t>{0, 1, 1, 1, 1, 1, 1, 7}));
  EXPECT_EQ(w, (std::vector<int32_t>{0, 1, 2, 1, 2, 1, 2, 7}));
  MropePositions(s, 2, 0.0f, 0, t, h, w);
  EXPECT_EQ(t, (std::vector<int32_t>{0, 1, 1, 2, 2, 3, 3, 4}));
  EXPECT_EQ(w.back(), 4);
}

// A video with its sound track (Qwen2.5-Omni, audio in video): text before it as usual, the
// block's positions media::AudioInVideoPositions' from one past the text, the text after it
// where those end; the block's groups and parts are not placed again.
TEST(Assemble, MropeWritesAVideoWithItsSoundTrackAsOneBlock) {
  const media::AudioInVideoRule rule = media::AudioInVideoRuleOf("qwen2.5-omni", 25).ValueOrDie();
  const media::AudioInVideo item{3, 1, 2, 1.0f, 75};  // runs: 4 video, 50 audio, 2 video, 25
  RenderedSample s = Text(0, 0, 0);
  s.tokens.assign(88, 1);
  s.has_loss.assign(88, 0);
  s.sound_tracks.push_back({2, rule, item});
  for (uint32_t start : {4u, 6u, 58u}) {
    s.visuals.push_back({start, 2, 1, 2, 4, 0, true, 1.0f});
  }
  s.audios.push_back({8, 50, 200, 32000, 1});
  s.audios.push_back({60, 25, 100, 16000, 1});
  std::vector<int32_t> t(89), h(89), w(89);
  MropePositions(s, 2, 25.0f, 1, t, h, w);
  const std::vector<std::pair<size_t, int32_t>> want_t = {
      {1, 1},   {2, 2},   {3, 2},   {4, 3},   {6, 28},  {8, 3},   {57, 52},
      {58, 53}, {60, 53}, {84, 77}, {85, 78}, {86, 78}, {87, 79}, {88, 80}};
  for (auto [i, p] : want_t) EXPECT_EQ(t[i], p) << "token " << i;
  EXPECT_EQ(w[5], 4);  // group 0's second column
  EXPECT_EQ(h[8], 3);  // audio on all three rows
}

// A pack's vision items are its images, then its videos (the plan's order): the routing and
// the encoded indices count them so; each kind's pixels and grids stay apart.
TEST(Assemble, VideosFollowTheImagesOfTheirPackWithTheirOwnPixels) {
  RenderedSample a = Text(5, 0, 0);
  AddVideo(a, 2, 4, 4, 4, 1.0f, 0);  // 16 tokens
  a.tokens.insert(a.tokens.end(), {1, 7, 1});
  a.has_loss.insert(a.has_loss.end(), {1, 0, 1});
  a.visuals.push_back({static_cast<uint32_t>(a.tokens.size()) - 2, 1, 1, 2, 2, 1});
  std::vector<std::vector<RenderedSample>> packs = {{a, WithImage(6, 3, 4, 4, 2)}};
  AssembleOptions options;
  options.patch_dim = 2;
  options.tokens_per_second = 2;
  auto batch = Assemble(packs, 1, options, FillWithImageId);
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  EXPECT_EQ(batch->image_rows, (std::vector<int32_t>{1, 4, 16}));
  EXPECT_EQ(batch->encoded_images, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(batch->encoded_videos, (std::vector<int32_t>{2}));
  EXPECT_EQ(batch->image_grid_thw, (std::vector<int32_t>{1, 2, 2, 1, 4, 4}));
  EXPECT_EQ(batch->video_grid_thw, (std::vector<int32_t>{4, 4, 4}));
  EXPECT_EQ(batch->second_per_grid_ts, (std::vector<float>{1.0f}));
  ASSERT_EQ(batch->pixel_values.size(), (4u + 16u) * 2);
  EXPECT_EQ(batch->pixel_values.front(), 501.0f);  // sample 5's image (media 1)
  EXPECT_EQ(batch->pixel_values.back(), 600.0f);   // sample 6's image
  ASSERT_EQ(batch->num_video_patches(), 64u);
  for (float v : batch->pixel_values_videos) ASSERT_EQ(v, 500.0f);
  // The video's rows land on its pad tokens (local offset 2 of the pack).
  bool routed = false;
  for (const RouteSegment& seg : batch->routes) {
    if (seg.image != 2) continue;
    EXPECT_EQ(seg.local_offset, 2);
    EXPECT_EQ(seg.row_count, 16);
    routed = true;
  }
  EXPECT_TRUE(routed);
  // Time-aligned positions: grid step f of the video sits at t = 2 + 2f.
  EXPECT_EQ(batch->position_ids[2 + 4], 4);
  EXPECT_EQ(batch->position_ids[2 + 15], 8);
}

// Features: the clip's id (sample index × 100 + media index) on its frames, -1 past them.
Status FillWithAudioId(uint32_t, const RenderedSample& s, const RenderedAudio& audio,
                       uint32_t frames, std::span<float> features, std::span<int32_t> mask) {
  for (size_t i = 0; i < features.size(); ++i) {
    features[i] = i % frames < audio.valid_frames
                      ? static_cast<float>(s.index * 100 + audio.sample_audio)
                      : -1.0f;
  }
  for (uint32_t f = 0; f < frames; ++f) mask[f] = f < audio.valid_frames ? 1 : 0;
  return Status::OK();
}

TEST(Assemble, AudioClipsGetTheirFeaturesAndThePlansAudioRouting) {
  RenderedSample a = Text(4, 3, 10);
  AddAudio(a, 0, 10, 40, 0);
  a.tokens.insert(a.tokens.end(), {1, 2});
  a.has_loss.insert(a.has_loss.end(), {1, 1});
  RenderedSample b = WithImage(5, 2, 4, 4, 1);  // an image, then a clip
  AddAudio(b, 3, 6, 25, 1);
  const std::vector<std::vector<RenderedSample>> packs = {{a, b}};
  AssembleOptions options;
  options.patch_dim = 1;
  options.mel_bins = 2;
  // CP 1: both clips here, padded to the longer one; audio tokens take text positions.
  auto whole = Assemble(packs, 1, options, FillWithImageId, FillWithAudioId);
  ASSERT_TRUE(whole.ok()) << whole.status().ToString();
  EXPECT_EQ(whole->audio_rows, (std::vector<int32_t>{10, 6}));
  EXPECT_EQ(whole->encoded_audios, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(whole->encoded_images, (std::vector<int32_t>{0}));
  ASSERT_EQ(whole->feature_frames, 40u);
  EXPECT_EQ(whole->mel_bins, 2u);
  ASSERT_EQ(whole->input_features.size(), 2u * 2 * 40);
  EXPECT_EQ(whole->input_features[0], 400.0f);
  EXPECT_EQ(whole->input_features[2 * 40 + 24], 501.0f);  // sample 5's clip, its last frame
  EXPECT_EQ(whole->input_features[2 * 40 + 25], -1.0f);   // then padding
  EXPECT_EQ(std::accumulate(whole->feature_attention_mask.begin(),
                            whole->feature_attention_mask.end(), 0),
            65);
  const int32_t t = static_cast<int32_t>(whole->tokens.size());
  for (int32_t i = 0; i < 15; ++i) {  // sample 4: text, 10 audio tokens, text
    for (int32_t row = 0; row < 3; ++row) EXPECT_EQ(whole->position_ids[row * t + i], i);
  }
  // A preset whose encoder runs over its whole window pads every clip to it.
  options.audio_window_frames = 50;
  auto windowed = Assemble(packs, 1, options, FillWithImageId, FillWithAudioId);
  ASSERT_TRUE(windowed.ok()) << windowed.status().ToString();
  EXPECT_EQ(windowed->feature_frames, 50u);
  EXPECT_EQ(windowed->input_features.size(), 2u * 2 * 50);
  options.audio_window_frames = 0;

  // CP 2: each clip encoded by one rank, every audio row consumed once, on an audio pad.
  std::map<int32_t, int> encoded;
  std::vector<Batch> shards;
  for (uint32_t r = 0; r < 2; ++r) {
    options.cp_rank = r;
    auto batch = Assemble(packs, 2, options, FillWithImageId, FillWithAudioId);
    ASSERT_TRUE(batch.ok()) << batch.status().ToString();
    for (int32_t clip : batch->encoded_audios) ++encoded[clip];
    EXPECT_EQ(batch->input_features.size(),
              batch->encoded_audios.size() * 2 * batch->feature_frames);
    shards.push_back(std::move(*batch));
  }
  EXPECT_EQ(encoded, (std::map<int32_t, int>{{0, 1}, {1, 1}}));
  EXPECT_EQ(shards[0].audio_routes, shards[1].audio_routes);
  std::map<int32_t, int32_t> rows_consumed;
  for (const RouteSegment& seg : shards[0].audio_routes) {
    rows_consumed[seg.image] += seg.row_count;
    for (int32_t k = 0; k < seg.row_count; ++k) {
      EXPECT_EQ(shards[seg.consumer].tokens[seg.local_offset + k], 9);
    }
  }
  EXPECT_EQ(rows_consumed, (std::map<int32_t, int32_t>{{0, 10}, {1, 6}}));
  // Without an audio filler a micro-step with clips is an error naming the clip.
  options.cp_rank = 0;
  auto unfilled = Assemble(packs, 1, options, FillWithImageId);
  ASSERT_FALSE(unfilled.ok());
  EXPECT_NE(unfilled.status().message().find("audio 0"), std::string::npos)
      << unfilled.status().ToString();
}

TEST(Assemble, MropeBatchRowsAndImages) {
  std::vector<std::vector<RenderedSample>> packs = {{WithImage(3, 2, 4, 6, 3)}};
  AssembleOptions options;
  options.patch_dim = 2;
  auto batch = Assemble(packs, 1, options, FillWithImageId);
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  ASSERT_EQ(batch->position_rows, 3u);
  ASSERT_EQ(batch->position_ids.size(), 3u * 12);
  EXPECT_EQ(batch->position_ids[12 + 5], 3);  // h row, first token of the image's 2nd row
  EXPECT_EQ(batch->image_grid_thw, (std::vector<int32_t>{1, 4, 6}));
  EXPECT_EQ(batch->num_patches(), 24u);
  EXPECT_EQ(batch->pixel_values.front(), 300.0f);
  // No label ever points at an image pad token.
  for (int32_t label : batch->labels) EXPECT_NE(label, 7);
}

TEST(Assemble, CpShardsCoverThePackAndEncodeEachImageOnce) {
  std::vector<std::vector<RenderedSample>> packs = {
      {WithImage(0, 5, 4, 4, 9), Text(1, 7, 50), WithImage(2, 1, 8, 4, 2)},
      {WithImage(3, 3, 4, 8, 3)}};
  const uint32_t cp = 2;
  AssembleOptions full_options;
  full_options.patch_dim = 1;
  auto whole = Assemble(packs, 1, full_options, FillWithImageId);  // CP 1 pads to 2 as well
  ASSERT_TRUE(whole.ok());

  std::map<int32_t, int> encode_count;
  std::vector<Batch> shards;
  for (uint32_t r = 0; r < cp; ++r) {
    AssembleOptions options = full_options;
    options.cp_rank = r;
    auto batch = Assemble(packs, cp, options, FillWithImageId);
    ASSERT_TRUE(batch.ok()) << batch.status().ToString();
    for (int32_t image : batch->encoded_images) ++encode_count[image];
    EXPECT_EQ(batch->image_grid_thw.size(), 3 * batch->encoded_images.size());
    shards.push_back(std::move(*batch));
  }
  EXPECT_EQ(encode_count.size(), 3u);
  for (auto [image, count] : encode_count) EXPECT_EQ(count, 1) << image;
  EXPECT_EQ(shards[0].routes, shards[1].routes);
  EXPECT_EQ(shards[0].cu_seqlens, shards[1].cu_seqlens);

  // Reassemble every token from the shards through TE's partitioned indices (pad multiple 4).
  const auto& padded = shards[0].cu_seqlens_padded;
  const uint32_t total = static_cast<uint32_t>(padded.back());
  std::vector<int32_t> tokens(total, -999), labels(total, -999);
  for (uint32_t r = 0; r < cp; ++r) {
    std::vector<uint32_t> cu(padded.begin(), padded.end());
    auto indices = cp::PartitionedIndices(cu, cp, r);
    ASSERT_TRUE(indices.ok());
    ASSERT_EQ(indices->size(), shards[r].tokens.size());
    for (size_t i = 0; i < indices->size(); ++i) {
      tokens[(*indices)[i]] = shards[r].tokens[i];
      labels[(*indices)[i]] = shards[r].labels[i];
    }
  }
  // Against the unsplit sequences: every real token in place, in sub-sequence order.
  for (size_t s = 0; s + 1 < shards[0].cu_seqlens.size(); ++s) {
    const int32_t length = shards[0].cu_seqlens[s + 1] - shards[0].cu_seqlens[s];
    const int32_t whole_base = whole->cu_seqlens_padded[s];
    for (int32_t i = 0; i < length; ++i) {
      EXPECT_EQ(tokens[padded[s] + i], whole->tokens[whole_base + i]);
      EXPECT_EQ(labels[padded[s] + i], whole->labels[whole_base + i]);
    }
  }
  // Every consumed row lands on an image pad token of its consumer.
  for (const RouteSegment& seg : shards[0].routes) {
    for (int32_t k = 0; k < seg.row_count; ++k) {
      EXPECT_EQ(shards[seg.consumer].tokens[seg.local_offset + k], 7);
    }
  }
}

TEST(Assemble, BadSamplesAreRejectedWithTheirName) {
  RenderedSample s = WithImage(42, 2, 4, 6, 3);
  s.visuals[0].grid_w = 5;
  std::vector<std::vector<RenderedSample>> packs = {{s}};
  auto batch = Assemble(packs, 1, {}, FillWithImageId);
  ASSERT_FALSE(batch.ok());
  EXPECT_NE(batch.status().message().find("sample 42"), std::string::npos);

  std::vector<std::vector<RenderedSample>> none = {{}};
  EXPECT_FALSE(Assemble(none, 1, {}, FillWithImageId).ok());

  packs = {{WithImage(5, 2, 4, 6, 3)}};
  auto failing = Assemble(
      packs, 1, {}, [](uint32_t, const RenderedSample&, const RenderedVisual&, std::span<float>) {
        return Status::Corrupt("bad pixels");
      });
  ASSERT_FALSE(failing.ok());
  EXPECT_NE(failing.status().message().find("sample 5"), std::string::npos);
  EXPECT_NE(failing.status().message().find("bad pixels"), std::string::npos);
}

TEST(Assemble, SamplesThatDifferFromThePlansSplitAreAnInternalError) {
  std::vector<std::vector<RenderedSample>> packs = {{Text(0, 5, 10), Text(1, 3, 20)}};
  const std::vector<plan::PackCp> cps = PlanCp(packs, 2);
  const plan::PackCp* pointer = &cps[0];
  packs[0][1] = Text(1, 4, 20);  // renders one token longer than planned
  auto batch = AssembleBatch(packs, std::span(&pointer, 1), {}, FillWithImageId);
  ASSERT_FALSE(batch.ok());
  EXPECT_EQ(batch.status().code(), StatusCode::kInternal);
  EXPECT_NE(batch.status().message().find("sample 1"), std::string::npos);
}

}  // namespace
}  // namespace mmpt::load
