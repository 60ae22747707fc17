#include "mmpt/ingest/webdataset.h"

#include <archive.h>
#include <archive_entry.h>
#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <array>

#include "mmpt/ingest/adapter_internal.h"

namespace mmpt::ingest {
namespace {

bool EndsWith(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

std::string_view Basename(std::string_view member) {
  size_t slash = member.rfind('/');
  return slash == std::string_view::npos ? member : member.substr(slash + 1);
}

// The extension after the first dot of the basename, lowercased ("000123.Left.JPG" → "left.jpg").
std::string Extension(std::string_view member) {
  std::string_view base = Basename(member);
  size_t dot = base.find('.');
  std::string ext(dot == std::string_view::npos ? std::string_view() : base.substr(dot + 1));
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext;
}

bool IsImageExtension(std::string_view ext) {
  std::string_view last = ext.substr(ext.rfind('.') + 1);  // npos + 1 == 0: the whole extension
  return last == "jpg" || last == "jpeg" || last == "png" || last == "webp";
}

bool IsUtf8(std::string_view text) { return simdjson::validate_utf8(text.data(), text.size()); }

}  // namespace

bool IsWebDatasetPath(std::string_view path) {
  return EndsWith(path, ".tar") || EndsWith(path, ".tar.gz") || EndsWith(path, ".tgz");
}

std::string_view WebDatasetKey(std::string_view member) {
  std::string_view base = Basename(member);
  size_t dot = base.find('.');
  if (dot == std::string_view::npos || dot == 0) return {};
  return member.substr(0, member.size() - base.size() + dot);
}

struct WdsReader::Impl {
  archive* reader = nullptr;
  std::string file;
  // The first member of the next sample: the archive's current entry, its data not yet read
  // (the next call decides whether to read or skip it).
  std::optional<std::string> pending;
  archive_entry* pending_entry = nullptr;
  std::string last_member;  // for errors between members
  bool done = false;

  ~Impl() {
    if (reader != nullptr) archive_read_free(reader);
  }

  Status Error(std::string_view member) const {
    const char* text = archive_error_string(reader);
    std::string where = member.empty() ? file : fmt::format("{}:{}", file, member);
    if (member.empty() && !last_member.empty()) where += fmt::format(" (after {})", last_member);
    return Status::Corrupt("{}: truncated or corrupt tar: {}", where,
                           text != nullptr ? text : "unknown libarchive error");
  }

  // Read the current entry's data into `member` (or only skip it); a member above the limit is
  // skipped and marked with `error`.
  Status TakeData(archive_entry* entry, WdsMember& member, bool with_data) {
    if (!with_data) {
      return archive_read_data_skip(reader) == ARCHIVE_OK ? Status::OK() : Error(member.name);
    }
    Status read = ReadData(entry, member.name, member.bytes);
    if (read.code() != StatusCode::kInvalidArgument) return read;
    member.error = read.message();  // a bad sample, not a bad archive
    return Status::OK();
  }

  // Read the current member's data into `out`, or skip it past the limit (InvalidArgument).
  Status ReadData(archive_entry* entry, std::string_view name, std::string& out) {
    if (archive_entry_size_is_set(entry) &&
        static_cast<uint64_t>(archive_entry_size(entry)) > kMaxWdsMemberBytes) {
      out.clear();
      return archive_read_data_skip(reader) == ARCHIVE_OK
                 ? Status::InvalidArgument("{} bytes exceed the limit of {} bytes a member",
                                           archive_entry_size(entry), kMaxWdsMemberBytes)
                 : Error(name);
    }
    std::array<char, 1 << 16> block;
    while (true) {
      la_ssize_t n = archive_read_data(reader, block.data(), block.size());
      if (n < 0) return Error(name);
      if (n == 0) return Status::OK();
      if (out.size() + static_cast<size_t>(n) > kMaxWdsMemberBytes) {
        out.clear();
        return Status::InvalidArgument("more than {} bytes, the limit a member",
                                       kMaxWdsMemberBytes);
      }
      out.append(block.data(), static_cast<size_t>(n));
    }
  }
};

WdsReader::WdsReader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
WdsReader::~WdsReader() = default;

Result<std::unique_ptr<WdsReader>> WdsReader::Open(std::span<const std::byte> bytes,
                                                   std::string file) {
  auto impl = std::make_unique<Impl>();
  impl->file = std::move(file);
  impl->reader = archive_read_new();
  if (impl->reader == nullptr) return Status::Internal("{}: libarchive: out of memory", impl->file);
  archive_read_support_filter_gzip(impl->reader);
  archive_read_support_format_tar(impl->reader);
  archive_read_support_format_empty(impl->reader);
  if (archive_read_open_memory(impl->reader, bytes.data(), bytes.size()) != ARCHIVE_OK) {
    return impl->Error("");
  }
  return std::unique_ptr<WdsReader>(new WdsReader(std::move(impl)));
}

Result<std::optional<WdsSample>> WdsReader::Next(bool with_data) {
  Impl& s = *impl_;
  WdsSample sample;
  if (s.pending) {
    WdsMember member{std::move(*s.pending), {}, {}};
    s.pending.reset();
    MMPT_RETURN_IF_ERROR(s.TakeData(s.pending_entry, member, with_data));
    sample.key = std::string(WebDatasetKey(member.name));
    sample.members.push_back(std::move(member));
  }
  while (!s.done) {
    archive_entry* entry = nullptr;
    int r = archive_read_next_header(s.reader, &entry);
    if (r == ARCHIVE_EOF) {
      s.done = true;
      break;
    }
    if (r != ARCHIVE_OK && r != ARCHIVE_WARN) return s.Error("");
    const char* path = archive_entry_pathname(entry);
    if (archive_entry_filetype(entry) != AE_IFREG || path == nullptr) continue;
    WdsMember member{path, {}, {}};
    s.last_member = member.name;
    if (!IsUtf8(member.name)) {
      return Status::Corrupt("{}: a member path is not UTF-8 (after {})", s.file,
                             sample.members.empty() ? "the start" : sample.members.back().name);
    }
    std::string_view key = WebDatasetKey(member.name);
    if (key.empty()) continue;
    if (!sample.members.empty() && key != sample.key) {
      s.pending = std::move(member.name);
      s.pending_entry = entry;
      break;
    }
    if (sample.members.empty()) sample.key = std::string(key);
    MMPT_RETURN_IF_ERROR(s.TakeData(entry, member, with_data));
    sample.members.push_back(std::move(member));
  }
  if (sample.members.empty()) return std::optional<WdsSample>();
  return std::optional<WdsSample>(std::move(sample));
}

Result<store::Sample> WdsToSample(WdsSample& wds, std::string_view file,
                                  std::vector<std::string>* images) {
  auto fail = [&](const WdsMember& member, const Status& status) {
    return Status(status.code(), fmt::format("{}:{}: {}", file, member.name, status.message()));
  };
  if (wds.members.empty()) return Status::InvalidArgument("{}: a sample with no members", file);
  store::Sample sample;
  sample.key = wds.key;
  images->clear();
  const WdsMember* txt = nullptr;
  const WdsMember* json = nullptr;
  for (WdsMember& member : wds.members) {
    if (!member.error.empty()) return fail(member, Status::InvalidArgument("{}", member.error));
    const std::string ext = Extension(member.name);
    if (IsImageExtension(ext)) {
      store::MediaRef media;
      media.path = member.name;
      internal::AppendMedia(std::move(media), "user", sample);
      images->push_back(std::move(member.bytes));
    } else if (ext == "txt" && txt == nullptr) {
      txt = &member;
    } else if (ext == "json" && json == nullptr) {
      json = &member;
    }
  }
  const WdsMember& first = wds.members.front();
  if (images->empty()) {
    return fail(
        first, Status::InvalidArgument("sample '{}' has no image (jpg, jpeg, png, webp)", wds.key));
  }
  std::string caption;
  if (txt != nullptr) {
    if (!IsUtf8(txt->bytes)) return fail(*txt, Status::Corrupt("the caption is not UTF-8"));
    std::string_view text = txt->bytes;
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.remove_suffix(1);
    caption = std::string(text);
  }
  if (caption.empty() && json != nullptr) {
    static thread_local simdjson::dom::parser parser;
    simdjson::dom::element doc;
    if (auto error = parser.parse(json->bytes.data(), json->bytes.size(), true).get(doc)) {
      return fail(*json, Status::Corrupt("not valid JSON: {}", simdjson::error_message(error)));
    }
    simdjson::dom::object obj;
    if (doc.get_object().get(obj) != simdjson::SUCCESS) {
      return fail(*json, Status::InvalidArgument("not a JSON object"));
    }
    for (std::string_view field : {"caption", "text", "txt"}) {
      auto value = internal::OptionalString(obj, field);
      if (!value.ok()) return fail(*json, value.status());
      if (*value && !(*value)->empty()) {
        caption = std::string(**value);
        break;
      }
    }
  }
  if (caption.empty()) {
    return fail(first, Status::InvalidArgument(
                           "sample '{}' has no caption: no non-empty {}.txt, nor a \"caption\", "
                           "\"text\" or \"txt\" string in {}.json",
                           wds.key, Basename(wds.key), Basename(wds.key)));
  }
  store::Segment text;
  text.role = "assistant";
  text.turn = 1;
  text.text = std::move(caption);
  sample.segments.push_back(std::move(text));
  if (Status valid = store::ValidateSample(sample); !valid.ok()) return fail(first, valid);
  return sample;
}

Result<std::string> WriteWebDatasetTar(std::span<const WdsMember> members, bool gzip) {
  std::string out;
  std::unique_ptr<archive, int (*)(archive*)> writer(archive_write_new(), archive_write_free);
  auto check = [&](int r) {
    return r == ARCHIVE_OK
               ? Status::OK()
               : Status::Internal("writing a tar: {}", archive_error_string(writer.get()) != nullptr
                                                           ? archive_error_string(writer.get())
                                                           : "libarchive error");
  };
  MMPT_RETURN_IF_ERROR(check(archive_write_set_format_pax_restricted(writer.get())));
  if (gzip) MMPT_RETURN_IF_ERROR(check(archive_write_add_filter_gzip(writer.get())));
  auto append = [](archive*, void* client, const void* buffer, size_t size) -> la_ssize_t {
    static_cast<std::string*>(client)->append(static_cast<const char*>(buffer), size);
    return static_cast<la_ssize_t>(size);
  };
  MMPT_RETURN_IF_ERROR(check(archive_write_open(writer.get(), &out, nullptr, append, nullptr)));
  for (const WdsMember& member : members) {
    std::unique_ptr<archive_entry, void (*)(archive_entry*)> entry(archive_entry_new(),
                                                                   archive_entry_free);
    archive_entry_set_pathname(entry.get(), member.name.c_str());
    archive_entry_set_size(entry.get(), static_cast<la_int64_t>(member.bytes.size()));
    archive_entry_set_filetype(entry.get(), AE_IFREG);
    archive_entry_set_perm(entry.get(), 0644);
    MMPT_RETURN_IF_ERROR(check(archive_write_header(writer.get(), entry.get())));
    if (archive_write_data(writer.get(), member.bytes.data(), member.bytes.size()) !=
        static_cast<la_ssize_t>(member.bytes.size())) {
      return check(ARCHIVE_FATAL);
    }
  }
  MMPT_RETURN_IF_ERROR(check(archive_write_close(writer.get())));
  return out;
}

}  // namespace mmpt::ingest
