#include "mmpt/text/chat_template.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "mmpt/core/scoped_env.h"

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

std::vector<ChatTurn> Conversation() {
  return {
      {"user", {ChatSegment::Image(), ChatSegment::Text("What is in this picture?"), ChatSegment::Image()}},
      {"assistant", {ChatSegment::Text("Two cats on a sofa.")}},
      {"user", {ChatSegment::Text("And the colour?")}},
      {"assistant", {ChatSegment::Text("Grey and white.")}},
  };
}

TEST(ChatTemplateTest, QwenVlRendersLikeTheTemplateText) {
  auto chat = ChatTemplate::Load("qwen_vl");
  ASSERT_TRUE(chat.ok()) << chat.status().ToString();
  auto rendered = RenderConversation(*chat, Qwen3(), Conversation(), {4, 2});
  ASSERT_TRUE(rendered.ok()) << rendered.status().ToString();
  // The same conversation as the Jinja template writes it, encoded as one string.
  const std::string text =
      "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
      "<|im_start|>user\n<|vision_start|><|image_pad|><|image_pad|><|image_pad|><|image_pad|><|vision_end|>"
      "What is in this picture?<|vision_start|><|image_pad|><|image_pad|><|vision_end|><|im_end|>\n"
      "<|im_start|>assistant\nTwo cats on a sofa.<|im_end|>\n"
      "<|im_start|>user\nAnd the colour?<|im_end|>\n"
      "<|im_start|>assistant\nGrey and white.<|im_end|>\n";
  auto expected = Qwen3().Encode(text);
  ASSERT_TRUE(expected.ok());
  EXPECT_EQ(rendered->ids, *expected);
  ASSERT_EQ(rendered->image_pad.size(), rendered->ids.size());
  ASSERT_EQ(rendered->loss.size(), rendered->ids.size());
  EXPECT_EQ(rendered->images, 2u);

  const TokenId pad = *Qwen3().TokenToId("<|image_pad|>");
  std::vector<TokenId> loss_ids;
  size_t pads = 0;
  for (size_t i = 0; i < rendered->ids.size(); ++i) {
    EXPECT_EQ(rendered->image_pad[i] != 0, rendered->ids[i] == pad) << i;
    pads += rendered->image_pad[i];
    if (rendered->loss[i]) loss_ids.push_back(rendered->ids[i]);
  }
  EXPECT_EQ(pads, 6u);
  auto loss_text = Qwen3().Decode(loss_ids);
  ASSERT_TRUE(loss_text.ok());
  EXPECT_EQ(*loss_text, "Two cats on a sofa.<|im_end|>\nGrey and white.<|im_end|>\n");
}

TEST(ChatTemplateTest, ExplicitSystemTurnReplacesTheDefault) {
  auto chat = ChatTemplate::Load("qwen_vl");
  ASSERT_TRUE(chat.ok());
  auto rendered = RenderConversation(*chat, Qwen3(), {{"system", {ChatSegment::Text("Be brief.")}}}, {});
  ASSERT_TRUE(rendered.ok());
  auto text = Qwen3().Decode(rendered->ids);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, "<|im_start|>system\nBe brief.<|im_end|>\n");
}

TEST(ChatTemplateTest, BadInputIsAnError) {
  auto chat = ChatTemplate::Load("qwen_vl");
  ASSERT_TRUE(chat.ok());
  auto wrong_count = RenderConversation(*chat, Qwen3(), Conversation(), {4});
  ASSERT_FALSE(wrong_count.ok());
  EXPECT_EQ(wrong_count.status().code(), StatusCode::kInvalidArgument);
  auto wrong_role = RenderConversation(*chat, Qwen3(), {{"narrator", {ChatSegment::Text("x")}}}, {});
  ASSERT_FALSE(wrong_role.ok());
  EXPECT_NE(wrong_role.status().message().find("narrator"), std::string::npos);
  EXPECT_EQ(ChatTemplate::Load("no_such_template").status().code(), StatusCode::kNotFound);
  auto malformed = ChatTemplate::Parse(R"({"name":"x","roles":{"user":{"prefix":1}}})", "bad.json");
  ASSERT_FALSE(malformed.ok());
  EXPECT_NE(malformed.status().message().find("roles.user"), std::string::npos) << malformed.status().ToString();
}

// Templates are found by name in presets/chat of mmpt's data directory, as every preset is:
// $MMPT_HOME points both elsewhere.
TEST(ChatTemplateTest, LoadsByNameFromTheDataDirectoryOfMmptHome) {
  const auto home = std::filesystem::temp_directory_path() / "mmpt_chat_template_test";
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
  EXPECT_NE(missing.status().message().find(home.string()), std::string::npos) << missing.status().ToString();
  std::filesystem::remove_all(home);
}

}  // namespace
}  // namespace mmpt::text
