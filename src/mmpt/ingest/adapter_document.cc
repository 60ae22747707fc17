// Interleaved document formats: mmc4 and OBELICS.
#include <algorithm>

#include "mmpt/ingest/adapter_internal.h"

namespace mmpt::ingest::internal {

Status ParseMmc4(const object& obj, store::Sample& sample) {
  MMPT_ASSIGN_OR_RETURN(simdjson::dom::array text_list, RequiredArray(obj, "text_list"));
  std::vector<std::string_view> texts;
  for (element item : text_list) {
    std::string_view text;
    if (item.get_string().get(text) != simdjson::SUCCESS) {
      return Status::InvalidArgument("text_list[{}] is not a string", texts.size());
    }
    texts.push_back(text);
  }
  // Images go before the sentence they are matched to (OpenFlamingo's placement), in the
  // order of image_info among images matched to the same sentence.
  std::vector<std::pair<uint64_t, store::MediaRef>> images;
  element info_value;
  if (obj.at_key("image_info").get(info_value) == simdjson::SUCCESS && !info_value.is_null()) {
    simdjson::dom::array image_info;
    if (info_value.get_array().get(image_info) != simdjson::SUCCESS) {
      return Status::InvalidArgument("field \"image_info\" is not an array");
    }
    for (element item : image_info) {
      size_t index = images.size();
      object info;
      if (item.get_object().get(info) != simdjson::SUCCESS) {
        return Status::InvalidArgument("image_info[{}] is not an object", index);
      }
      element matched;
      uint64_t position = 0;
      if (info.at_key("matched_text_index").get(matched) != simdjson::SUCCESS ||
          matched.get_uint64().get(position) != simdjson::SUCCESS) {
        return Status::InvalidArgument("image_info[{}] has no integer \"matched_text_index\"",
                                       index);
      }
      if (position >= texts.size()) {
        return Status::InvalidArgument(
            "image_info[{}].matched_text_index {} is past text_list's {} entries", index, position,
            texts.size());
      }
      auto media = ParseMediaRef(item);
      if (!media.ok()) return media.status().WithContext(fmt::format("image_info[{}]", index));
      images.emplace_back(position, std::move(*media));
    }
  }
  std::stable_sort(images.begin(), images.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  size_t next_image = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    while (next_image < images.size() && images[next_image].first == i) {
      AppendMedia(std::move(images[next_image++].second), "", sample);
    }
    AppendDocumentText(texts[i], " ", sample);
  }
  return Status::OK();
}

Status ParseObelics(const object& obj, store::Sample& sample) {
  MMPT_ASSIGN_OR_RETURN(simdjson::dom::array texts, RequiredArray(obj, "texts"));
  MMPT_ASSIGN_OR_RETURN(simdjson::dom::array images, RequiredArray(obj, "images"));
  if (texts.size() != images.size()) {
    return Status::InvalidArgument("\"texts\" has {} entries but \"images\" has {}", texts.size(),
                                   images.size());
  }
  auto text_it = texts.begin();
  auto image_it = images.begin();
  for (size_t i = 0; i < texts.size(); ++i, ++text_it, ++image_it) {
    element text_value = *text_it;
    element image_value = *image_it;
    bool has_text = !text_value.is_null();
    bool has_image = !image_value.is_null();
    if (has_text == has_image) {
      return Status::InvalidArgument(
          "position {}: exactly one of texts[{}] and images[{}] must "
          "be non-null",
          i, i, i);
    }
    if (has_image) {
      auto media = ParseMediaRef(image_value);
      if (!media.ok()) return media.status().WithContext(fmt::format("images[{}]", i));
      AppendMedia(std::move(*media), "", sample);
      continue;
    }
    std::string_view text;
    if (text_value.get_string().get(text) != simdjson::SUCCESS) {
      return Status::InvalidArgument("texts[{}] is not a string", i);
    }
    AppendDocumentText(text, "\n\n", sample);
  }
  return Status::OK();
}

}  // namespace mmpt::ingest::internal
