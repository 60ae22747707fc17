#pragma once

// Temporary directories for tests. Every test process gets one folder of its own under the
// system temp directory, made by mkdtemp (a name no other process has, whatever its PID or PID
// namespace, even once its PID is reused), and removed when the process exits. A test's
// directories live inside it: CTest runs suites as parallel processes, and cases may share a
// name.

#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <string>

namespace mmpt::test_util {

/// This process's folder under the system temp directory (made on first use).
inline const std::filesystem::path& ProcessTempDir() {
  struct Folder {
    std::filesystem::path path;
    Folder() {
      std::string name = (std::filesystem::temp_directory_path() / "mmpt_test_XXXXXX").string();
      if (::mkdtemp(name.data()) == nullptr) {
        std::perror(name.c_str());
        std::abort();
      }
      path = name;
    }
    ~Folder() {
      std::error_code error;
      std::filesystem::remove_all(path, error);
    }
  };
  static const Folder folder;
  return folder.path;
}

/// A fresh, empty directory `name` inside this process's folder (emptied when it exists).
inline std::string FreshDir(const std::string& name) {
  const std::filesystem::path dir = ProcessTempDir() / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

/// The path of `name` inside this process's folder (nothing is created).
inline std::string TempPath(const std::string& name) { return (ProcessTempDir() / name).string(); }

}  // namespace mmpt::test_util
