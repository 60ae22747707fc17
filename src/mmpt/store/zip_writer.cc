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
  // The archive is built in memory and written by WriteFileAtomic (a temporary file of its own,
  // then a rename): libzip never touches `path`, whose state (absent, an older shard, a file
  // another writer is renaming into place) then cannot make it open the archive read-only.
  zip_error_t error;
  zip_error_init(&error);
  zip_source_t* buffer = zip_source_buffer_create(nullptr, 0, 0, &error);
  auto libzip_error = [&](std::string_view what) {
    Status status = Status::IOError("{}: {}: {}", path, what, zip_error_strerror(&error));
    zip_error_fini(&error);
    return status;
  };
  if (buffer == nullptr) return libzip_error("cannot create zip");
  zip_source_keep(buffer);  // kept past zip_close, to read the archive back
  std::unique_ptr<zip_source_t, decltype(&zip_source_free)> owned(buffer, zip_source_free);
  zip_t* archive = zip_open_from_source(buffer, ZIP_TRUNCATE, &error);
  if (archive == nullptr) return libzip_error("cannot create zip");
  zip_error_fini(&error);
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
  zip_stat_t stat;
  zip_stat_init(&stat);
  if (zip_source_stat(buffer, &stat) != 0 || (stat.valid & ZIP_STAT_SIZE) == 0 ||
      zip_source_open(buffer) != 0) {
    return Status::IOError("{}: cannot read the archive back: {}", path,
                           zip_error_strerror(zip_source_error(buffer)));
  }
  std::string bytes(stat.size, '\0');
  const zip_int64_t read = zip_source_read(buffer, bytes.data(), stat.size);
  zip_source_close(buffer);
  if (read != static_cast<zip_int64_t>(stat.size)) {
    return Status::IOError("{}: cannot read the archive back: {}", path,
                           zip_error_strerror(zip_source_error(buffer)));
  }
  return WriteFileAtomic(path, bytes);
}

}  // namespace mmpt::store
