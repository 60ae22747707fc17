#pragma once

// Test helper: open an HTML file in headless Chromium (Debian's `chromium`), dump its DOM and
// take a screenshot, and measure how much of the screenshot is not blank.

#include <png.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <fmt/format.h>

#include "mmpt/core/status.h"
#include "mmpt/core/subprocess.h"

namespace mmpt::app::testing_browser {

inline constexpr char kChromiumFlags[] =
    "--headless --no-sandbox --disable-gpu --no-first-run --disable-background-networking "
    "--disable-component-update --disable-sync";

/// Chromium's DOM of `html_path` after loading (--dump-dom). Errors: NotFound when chromium is
/// not installed (scripts/install-deps.sh installs it), Internal when it fails.
inline Result<std::string> DumpDom(const std::string& html_path, const std::string& profile_dir) {
  if (std::system("command -v chromium >/dev/null 2>&1") != 0) {
    return Status::NotFound("chromium is not installed: run scripts/install-deps.sh");
  }
  return RunCommand(
      fmt::format("timeout 120 chromium {} --user-data-dir={} --dump-dom "
                  "'file://{}' 2>/dev/null",
                  kChromiumFlags, profile_dir, html_path));
}

/// Screenshot `html_path` at `width`×`height` into `png_path`. Errors: as DumpDom.
inline Status Screenshot(const std::string& html_path, const std::string& profile_dir,
                         const std::string& png_path, int width, int height) {
  if (std::system("command -v chromium >/dev/null 2>&1") != 0) {
    return Status::NotFound("chromium is not installed: run scripts/install-deps.sh");
  }
  auto out =
      RunCommand(fmt::format("timeout 120 chromium {} --user-data-dir={} --hide-scrollbars "
                             "--window-size={},{} --screenshot='{}' 'file://{}' 2>&1",
                             kChromiumFlags, profile_dir, width, height, png_path, html_path));
  return out.ok() ? Status::OK() : out.status();
}

/// Fraction of the pixels of the PNG at `path` that are not (near) white.
/// Errors: IOError when libpng cannot read it.
inline Result<double> InkFraction(const std::string& path) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_file(&image, path.c_str())) {
    return Status::IOError("{}: {}", path, image.message);
  }
  image.format = PNG_FORMAT_RGB;
  std::string pixels(PNG_IMAGE_SIZE(image), '\0');
  if (!png_image_finish_read(&image, nullptr, pixels.data(), 0, nullptr)) {
    return Status::IOError("{}: {}", path, image.message);
  }
  size_t ink = 0;
  const size_t count = size_t{image.width} * image.height;
  for (size_t i = 0; i < count; ++i) {
    const auto* p = reinterpret_cast<const unsigned char*>(pixels.data()) + 3 * i;
    if (p[0] < 235 || p[1] < 235 || p[2] < 235) ++ink;
  }
  return count > 0 ? static_cast<double>(ink) / count : 0.0;
}

}  // namespace mmpt::app::testing_browser
