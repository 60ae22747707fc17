#include "mmpt/text/chat_template.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "mmpt/core/scoped_env.h"
#include "mmpt/core/temp_dir_test_util.h"

namespace mmpt::text {
namespace {

const Tokenizer& Qwen3() {
  static std::unique_ptr<Tokenizer> tokenizer = [] {
    auto loaded = LoadTokenizer(FindTokenizer().ValueOrDie());
    if (!loaded.ok()) {
      ADD_FAILURE() << loaded.status().ToString() << " (run scripts/install-deps.sh)";
      std::abort();
    }
    return std::move(loaded).ValueOrDie();
  }();
  return *tokenizer;
}

const ChatRenderer& QwenVl() {
  static const ChatRenderer* renderer = [] {
    auto chat = ChatTemplate::Load("qwen_vl");
    if (!chat.ok()) std::abort();
    return new ChatRenderer(ChatRenderer::Create(*std::move(chat), Qwen3()).ValueOrDie());
  }();
  return *renderer;
}

ChatPiece Text(std::string_view role, uint32_t turn, std::string_view text) {
  return {role, turn, PieceKind::kText, text};
}
ChatPiece Image(std::string_view role, uint32_t turn) {
  return {role, turn, PieceKind::kImage, {}};
}
ChatPiece Video(std::string_view role, uint32_t turn) {
  return {role, turn, PieceKind::kVideo, {}};
}
ChatPiece Audio(std::string_view role, uint32_t turn) {
  return {role, turn, PieceKind::kAudio, {}};
}

RenderedText Render(const std::vector<ChatPiece>& pieces) {
  RenderedText out;
  Status status = QwenVl().Render(pieces, &out);
  EXPECT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(out.target.size(), out.ids.size());
  return out;
}

std::vector<TokenId> Encode(std::string_view text) { return Qwen3().Encode(text).ValueOrDie(); }

std::string Decode(const RenderedText& rendered, bool targets) {
  std::vector<TokenId> ids;
  for (size_t i = 0; i < rendered.ids.size(); ++i) {
    if (rendered.target[i] == targets) ids.push_back(rendered.ids[i]);
  }
  return Qwen3().Decode(ids).ValueOrDie();
}

// Qwen3-VL's template is Qwen2-VL's without the default system turn: a conversation starts with
// its first turn, and a system turn it has is kept.
TEST(ChatTemplateTest, Qwen3VlHasNoDefaultSystemTurn) {
  auto chat = ChatTemplate::Load("qwen3_vl");
  ASSERT_TRUE(chat.ok()) << chat.status().ToString();
  EXPECT_FALSE(chat->default_system.has_value());
  auto renderer = ChatRenderer::Create(*std::move(chat), Qwen3());
  ASSERT_TRUE(renderer.ok());
  for (const bool system : {false, true}) {
    std::vector<ChatPiece> pieces = {Image("user", 1), Text("user", 1, "What is it?"),
                                     Text("assistant", 2, "A cat.")};
    if (system) pieces.insert(pieces.begin(), Text("system", 0, "Be terse."));
    RenderedText out;
    ASSERT_TRUE(renderer->Render(pieces, &out).ok());
    const std::string head = system ? "<|im_start|>system\nBe terse.<|im_end|>\n" : "";
    EXPECT_EQ(Qwen3().Decode(out.ids).ValueOrDie(),
              head +
                  "<|im_start|>user\n<|vision_start|><|vision_end|>What is it?<|im_end|>\n"
                  "<|im_start|>assistant\nA cat.<|im_end|>\n");
    EXPECT_EQ(Decode(out, true), "A cat.<|im_end|>\n");
  }
}

// The ids are those of the whole string the Jinja template writes (image pads left out), the
// images sit right after their start markers, and the targets are the assistant's turns.
TEST(ChatTemplateTest, QwenVlRendersLikeTheTemplateText) {
  const RenderedText rendered = Render({
      Image("user", 0),
      Text("user", 0, "What is in this picture?"),
      Image("user", 0),
      Text("assistant", 1, "Two cats on a sofa."),
      Text("user", 2, "And the colour?"),
      Text("assistant", 3, "Grey and white."),
  });
  const std::string text =
      "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
      "<|im_start|>user\n<|vision_start|><|vision_end|>What is in this picture?"
      "<|vision_start|><|vision_end|><|im_end|>\n"
      "<|im_start|>assistant\nTwo cats on a sofa.<|im_end|>\n"
      "<|im_start|>user\nAnd the colour?<|im_end|>\n"
      "<|im_start|>assistant\nGrey and white.<|im_end|>\n";
  EXPECT_EQ(rendered.ids, Encode(text));
  const TokenId start = *Qwen3().TokenToId("<|vision_start|>");
  ASSERT_EQ(rendered.media_positions.size(), 2u);
  for (uint32_t position : rendered.media_positions) {
    ASSERT_GT(position, 0u);
    EXPECT_EQ(rendered.ids[position - 1], start);
  }
  EXPECT_EQ(Decode(rendered, true), "Two cats on a sofa.<|im_end|>\nGrey and white.<|im_end|>\n");
  EXPECT_EQ(QwenVl().pad_id(PieceKind::kImage), *Qwen3().TokenToId("<|image_pad|>"));
}

// Qwen2-VL's template writes a video as <|vision_start|><|video_pad|>...<|vision_end|>: the same
// markers as an image, its own pad.
TEST(ChatTemplateTest, QwenVlRendersAVideoWithItsOwnPad) {
  const RenderedText rendered = Render({Video("user", 0), Text("user", 0, "What happens?"),
                                        Image("user", 0), Text("assistant", 1, "A cat jumps.")});
  EXPECT_EQ(rendered.ids, Encode("<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
                                 "<|im_start|>user\n<|vision_start|><|vision_end|>What happens?"
                                 "<|vision_start|><|vision_end|><|im_end|>\n"
                                 "<|im_start|>assistant\nA cat jumps.<|im_end|>\n"));
  ASSERT_EQ(rendered.media_positions.size(), 2u);
  EXPECT_EQ(QwenVl().pad_id(PieceKind::kVideo), *Qwen3().TokenToId("<|video_pad|>"));
  EXPECT_NE(QwenVl().pad_id(PieceKind::kVideo), QwenVl().pad_id(PieceKind::kImage));
}

// Qwen3-VL writes each temporal group of a video as "<t seconds>" and the group's own markers:
// each group is an item; the first timestamp is encoded with the text before it (':' and '<'
// make one pre-token), the others alone; timestamps are never targets. `.1f` rounds the
// double's exact value, halves to even, as Python's format does.
TEST(ChatTemplateTest, Qwen3VlWritesEachVideoGroupAfterItsTimestamp) {
  auto chat = ChatTemplate::Load("qwen3_vl");
  ASSERT_TRUE(chat.ok()) << chat.status().ToString();
  ASSERT_TRUE(chat->video.has_value());
  EXPECT_EQ(chat->video->Timestamp(0.25), "<0.2 seconds>");
  EXPECT_EQ(chat->video->Timestamp(0.75), "<0.8 seconds>");
  EXPECT_EQ(chat->video->Timestamp(0.35), "<0.3 seconds>");    // 0.34999… in binary
  EXPECT_EQ(chat->video->Timestamp(12.05), "<12.1 seconds>");  // 12.050000000000000711
  auto renderer = ChatRenderer::Create(*std::move(chat), Qwen3());
  ASSERT_TRUE(renderer.ok());
  const std::vector<double> seconds = {0.25, 1.5, 2.96};
  ChatPiece video = Video("assistant", 1);
  video.group_seconds = seconds;
  RenderedText out;
  const std::vector<ChatPiece> pieces = {Text("user", 0, "Show it"), Text("assistant", 1, "Watch:"),
                                         video, Text("assistant", 1, "Done.")};
  ASSERT_TRUE(renderer->Render(pieces, &out).ok());
  EXPECT_EQ(out.ids, Encode("<|im_start|>user\nShow it<|im_end|>\n<|im_start|>assistant\nWatch:"
                            "<0.2 seconds><|vision_start|><|vision_end|>"
                            "<1.5 seconds><|vision_start|><|vision_end|>"
                            "<3.0 seconds><|vision_start|><|vision_end|>Done.<|im_end|>\n"));
  ASSERT_EQ(out.media_positions.size(), 3u);
  EXPECT_EQ(out.media_items, std::vector<uint32_t>{3});
  const TokenId start = *Qwen3().TokenToId("<|vision_start|>");
  for (uint32_t position : out.media_positions) EXPECT_EQ(out.ids[position - 1], start);
  // ':<' is one token: it belongs to the later piece, the timestamp, so it is no target.
  EXPECT_EQ(Decode(out, true), "WatchDone.<|im_end|>\n");
  // A video with no sampled groups cannot be written; a malformed timestamp is refused.
  const std::vector<ChatPiece> unsampled = {Video("user", 0)};
  EXPECT_EQ(renderer->Render(unsampled, &out).code(), StatusCode::kInvalidArgument);
  for (const char* bad : {"<{:.1f}{:.1f}>", "<{} seconds>", "<{:.1e} s>", "none"}) {
    const std::string json = fmt::format(
        R"({{"name": "t", "roles": {{}}, "image": {{"start": "a", "pad": "b", "end": "c"}},
            "video": {{"start": "a", "pad": "b", "end": "c", "timestamp": "{}"}}}})",
        bad);
    EXPECT_EQ(ChatTemplate::Parse(json, "t.json").status().code(), StatusCode::kCorrupt) << bad;
  }
}

// A template's "audio" markers: a clip renders as its start and end markers with its pads
// between (Qwen2.5-Omni's <|audio_bos|> <|AUDIO|>... <|audio_eos|>; Qwen3's tokenizer lacks
// those, so this template borrows three of its special tokens).
TEST(ChatTemplateTest, AnAudioClipRendersWithItsOwnMarkersAndPad) {
  auto chat = ChatTemplate::Parse(
      R"({"name":"speech","roles":{"user":{"prefix":"<|im_start|>user\n","suffix":"<|im_end|>\n"}},)"
      R"("image":{"start":"<|vision_start|>","pad":"<|image_pad|>","end":"<|vision_end|>"},)"
      R"("audio":{"start":"<|object_ref_start|>","pad":"<|box_start|>","end":"<|object_ref_end|>"}})",
      "speech.json");
  ASSERT_TRUE(chat.ok()) << chat.status().ToString();
  auto renderer = ChatRenderer::Create(*std::move(chat), Qwen3());
  ASSERT_TRUE(renderer.ok()) << renderer.status().ToString();
  RenderedText out;
  ASSERT_TRUE(
      renderer
          ->Render(std::vector<ChatPiece>{Audio("user", 0), Text("user", 0, "Transcribe it.")},
                   &out)
          .ok());
  EXPECT_EQ(out.ids, Encode("<|im_start|>user\n<|object_ref_start|><|object_ref_end|>"
                            "Transcribe it.<|im_end|>\n"));
  EXPECT_EQ(out.media_positions, (std::vector<uint32_t>{static_cast<uint32_t>(
                                     Encode("<|im_start|>user\n<|object_ref_start|>").size())}));
  EXPECT_EQ(renderer->pad_id(PieceKind::kAudio), *Qwen3().TokenToId("<|box_start|>"));
  // A template without "audio" names what it lacks; so does a tokenizer without Omni's tokens.
  Status no_audio = QwenVl().Render(std::vector<ChatPiece>{Audio("user", 0)}, &out);
  ASSERT_FALSE(no_audio.ok());
  EXPECT_NE(no_audio.message().find("qwen_vl has no \"audio\" markers"), std::string::npos)
      << no_audio.ToString();
  auto omni = ChatRenderer::Create(ChatTemplate::Load("qwen_omni").ValueOrDie(), Qwen3());
  ASSERT_FALSE(omni.ok());
  EXPECT_NE(omni.status().message().find("the tokenizer has no token '<|IMAGE|>'"),
            std::string::npos)
      << omni.status().ToString();
}

// A video with its sound track (audio in video): its items, all at one position, between the
// video's and the audio's start markers and the audio's and the video's end markers.
TEST(ChatTemplateTest, AVideoWithItsSoundTrackRendersBetweenBothMarkers) {
  auto chat = ChatTemplate::Parse(
      R"({"name":"av","roles":{"user":{"prefix":"<|im_start|>user\n","suffix":"<|im_end|>\n"}},)"
      R"("image":{"start":"<|vision_start|>","pad":"<|image_pad|>","end":"<|vision_end|>"},)"
      R"("video":{"start":"<|vision_start|>","pad":"<|video_pad|>","end":"<|vision_end|>"},)"
      R"("audio":{"start":"<|object_ref_start|>","pad":"<|box_start|>","end":"<|object_ref_end|>"}})",
      "av.json");
  ASSERT_TRUE(chat.ok()) << chat.status().ToString();
  auto renderer = ChatRenderer::Create(*std::move(chat), Qwen3());
  ASSERT_TRUE(renderer.ok()) << renderer.status().ToString();
  ChatPiece video = Video("user", 0);
  video.sound_items = 3;
  RenderedText out;
  ASSERT_TRUE(renderer->Render(std::vector<ChatPiece>{video, Text("user", 0, "What?")}, &out).ok());
  EXPECT_EQ(out.ids, Encode("<|im_start|>user\n<|vision_start|><|object_ref_start|>"
                            "<|object_ref_end|><|vision_end|>What?<|im_end|>\n"));
  const auto at = static_cast<uint32_t>(
      Encode("<|im_start|>user\n<|vision_start|><|object_ref_start|>").size());
  EXPECT_EQ(out.media_positions, (std::vector<uint32_t>{at, at, at}));
  EXPECT_EQ(out.media_items, std::vector<uint32_t>{3});
  // A template without audio markers cannot write one.
  Status no_audio = QwenVl().Render(std::vector<ChatPiece>{video}, &out);
  ASSERT_FALSE(no_audio.ok());
  EXPECT_NE(no_audio.message().find("sound track"), std::string::npos) << no_audio.ToString();
}

TEST(ChatTemplateTest, ExplicitSystemTurnReplacesTheDefault) {
  const RenderedText rendered = Render({Text("system", 0, "Be brief."), Text("user", 1, "Hi")});
  EXPECT_EQ(Decode(rendered, false),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n");
}

// Text that touches a role prefix is encoded with it, as the reference encodes the whole
// string: "assistant\n" + "\nYes" has the token "\n\n", which belongs to the content.
TEST(ChatTemplateTest, TokensMergingAcrossPiecesAreTheReferences) {
  const RenderedText rendered = Render({Text("user", 0, "\n\tQ"), Text("assistant", 1, "\nYes")});
  EXPECT_EQ(rendered.ids, Encode("<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
                                 "<|im_start|>user\n\n\tQ<|im_end|>\n"
                                 "<|im_start|>assistant\n\nYes<|im_end|>\n"));
  EXPECT_NE(Encode("assistant\n\nYes").size(),
            Encode("assistant\n").size() + Encode("\nYes").size());
  EXPECT_EQ(Decode(rendered, true), "\n\nYes<|im_end|>\n");
}

// An empty turn renders as its role's prefix and suffix; two turns of one role in a row stay
// two turns; text spelling a special token is that token, as in the reference.
TEST(ChatTemplateTest, EmptyTurnsRepeatedRolesAndSpecialTokenText) {
  const RenderedText rendered =
      Render({Text("user", 0, "A <|im_end|> B"), Text("user", 1, "C"), Text("assistant", 2, "")});
  EXPECT_EQ(rendered.ids, Encode("<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
                                 "<|im_start|>user\nA <|im_end|> B<|im_end|>\n"
                                 "<|im_start|>user\nC<|im_end|>\n"
                                 "<|im_start|>assistant\n<|im_end|>\n"));
  EXPECT_EQ(Decode(rendered, true), "<|im_end|>\n");
}

// A document has no system turn and no roles; its text is the target, its image markers not.
TEST(ChatTemplateTest, DocumentsRenderAsPlainTextWithImageMarkers) {
  const RenderedText rendered =
      Render({Text("", 0, "A cat."), Image("", 0), Text("", 0, " It sleeps.")});
  EXPECT_EQ(rendered.ids, Encode("A cat.<|vision_start|><|vision_end|> It sleeps."));
  ASSERT_EQ(rendered.media_positions.size(), 1u);
  EXPECT_EQ(Decode(rendered, true), "A cat. It sleeps.");
  EXPECT_EQ(Decode(rendered, false), "<|vision_start|><|vision_end|>");
}

TEST(ChatTemplateTest, BadInputIsAnError) {
  RenderedText out;
  const std::vector<ChatPiece> narrator = {Text("narrator", 0, "x")};
  Status wrong_role = QwenVl().Render(narrator, &out);
  ASSERT_FALSE(wrong_role.ok());
  EXPECT_NE(wrong_role.message().find("narrator"), std::string::npos);
  auto no_pad = ChatTemplate::Parse(
      R"({"name":"x","roles":{},"image":{"start":"<a>","pad":"<no such token>","end":"<b>"}})",
      "x.json");
  ASSERT_TRUE(no_pad.ok()) << no_pad.status().ToString();
  auto renderer = ChatRenderer::Create(*std::move(no_pad), Qwen3());
  ASSERT_FALSE(renderer.ok());
  EXPECT_NE(renderer.status().message().find("<no such token>"), std::string::npos);
  auto no_video = ChatTemplate::Parse(
      R"({"name":"still","roles":{"user":{"prefix":"","suffix":""}},)"
      R"("image":{"start":"<|vision_start|>","pad":"<|image_pad|>","end":"<|vision_end|>"}})",
      "still.json");
  ASSERT_TRUE(no_video.ok()) << no_video.status().ToString();
  auto still = ChatRenderer::Create(*std::move(no_video), Qwen3());
  ASSERT_TRUE(still.ok()) << still.status().ToString();
  const std::vector<ChatPiece> video = {Video("user", 0)};
  Status no_markers = still->Render(video, &out);
  ASSERT_FALSE(no_markers.ok());
  EXPECT_NE(no_markers.message().find("still has no \"video\""), std::string::npos)
      << no_markers.ToString();
  EXPECT_EQ(ChatTemplate::Load("no_such_template").status().code(), StatusCode::kNotFound);
  auto malformed = ChatTemplate::Parse(R"({"name":"x","roles":{"user":{"prefix":1}}})", "bad.json");
  ASSERT_FALSE(malformed.ok());
  EXPECT_NE(malformed.status().message().find("roles.user"), std::string::npos)
      << malformed.status().ToString();
}

// Templates are found by name in presets/chat of mmpt's data directory, as every preset is:
// $MMPT_HOME points both elsewhere.
TEST(ChatTemplateTest, LoadsByNameFromTheDataDirectoryOfMmptHome) {
  const std::filesystem::path home = test_util::FreshDir("chat_template");
  std::filesystem::create_directories(home / "presets" / "chat");
  std::ofstream(home / "presets" / "chat" / "mine.json")
      << R"({"name":"mine","roles":{"user":{"prefix":"U:","suffix":"\n"}},)"
      << R"("image":{"start":"<s>","pad":"<p>","end":"</s>"}})";
  ScopedEnv env("MMPT_HOME", home.c_str());
  auto mine = ChatTemplate::Load("mine");
  ASSERT_TRUE(mine.ok()) << mine.status().ToString();
  EXPECT_EQ(mine->roles.at("user").prefix, "U:");
  auto missing = ChatTemplate::Load("qwen_vl");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find(home.string()), std::string::npos)
      << missing.status().ToString();
  std::filesystem::remove_all(home);
}

}  // namespace
}  // namespace mmpt::text
