#include "mmpt/store/zip_writer.h"

#include <zip.h>

#include <memory>

#include "mmpt/core/mapped_file.h"

namespace mmpt::store {
namespace {

// 2020-01-01 00:00:00 UTC: any fixed time keeps archives reproducible.
constexpr time_t kFixedMtime = 1577836800;

std::string ZipErrorText(zip_t* archive) { return zip_strerror(archive); }

}  // namespace

Status WriteStoredZip(const std::string& path, std::span<const ZipInput> entries) {
  if (entries.empty()) {
    // libzip removes archives left without entries; write the 22-byte end record ourselves.
    std::string end(22, '\0');
    end[0] = 'P';
    end[1] = 'K';
    end[2] = 5;
    end[3] = 6;
    return WriteFileAtomic(path, end);
  }
  int error_code = 0;
  zip_t* archive = zip_open(path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &error_code);
  if (archive == nullptr) {
    zip_error_t error;
    zip_error_init_with_code(&error, error_code);
    Status status = Status::IOError("{}: cannot create zip: {}", path, zip_error_strerror(&error));
    zip_error_fini(&error);
    return status;
  }
  auto fail = [&](std::string_view what, const std::string& entry) {
    Status status = Status::IOError("{}: {} '{}': {}", path, what, entry, ZipErrorText(archive));
    zip_discard(archive);
    return status;
  };
  for (const ZipInput& input : entries) {
    zip_source_t* source = zip_source_buffer(archive, input.data.data(), input.data.size(), 0);
    if (source == nullptr) return fail("cannot add", input.name);
    zip_int64_t index = zip_file_add(archive, input.name.c_str(), source, ZIP_FL_ENC_UTF_8);
    if (index < 0) {
      zip_source_free(source);
      return fail("cannot add", input.name);
    }
    if (zip_set_file_compression(archive, static_cast<zip_uint64_t>(index), ZIP_CM_STORE, 0) != 0 ||
        zip_file_set_mtime(archive, static_cast<zip_uint64_t>(index), kFixedMtime, 0) != 0) {
      return fail("cannot set STORED/mtime on", input.name);
    }
  }
  if (zip_close(archive) != 0) {
    Status status = Status::IOError("{}: cannot write zip: {}", path, ZipErrorText(archive));
    zip_discard(archive);
    return status;
  }
  return Status::OK();
}

}  // namespace mmpt::store
