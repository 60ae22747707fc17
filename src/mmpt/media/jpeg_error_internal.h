#pragma once

// libjpeg's error handling for the decoder and the encoder: libjpeg reports a fatal error by
// calling error_exit, which here formats the message and longjmps back to the caller's setjmp.
// Code between setjmp and the library may hold only trivially destructible locals.

#include <csetjmp>
#include <cstdio>

#include <jpeglib.h>

namespace mmpt::media::internal {

struct JpegError {
  jpeg_error_mgr mgr;
  jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

/// Install as `mgr.error_exit`: keep libjpeg's message in the JpegError, then jump back.
[[noreturn]] inline void JpegErrorExit(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<JpegError*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  longjmp(err->jump, 1);
}

}  // namespace mmpt::media::internal
