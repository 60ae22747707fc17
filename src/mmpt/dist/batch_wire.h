#pragma once

// A Batch as bytes, for handing it to ranks that did not load it (dist/replica.h): a field
// mask, the scalars, and each array 64-byte aligned, so a reader views the arrays in place
// (a shared-memory slot, a received buffer) with no copy. A sender chooses the fields, so a
// pipeline stage receives only what it consumes. The fields are load/batch_view.h's table.

#include <cstddef>
#include <cstdint>
#include <span>

#include "mmpt/core/status.h"
#include "mmpt/load/batch_view.h"

namespace mmpt::dist {

using load::BatchView;

/// Bytes EncodeBatch writes for `fields` of `view` (kShapeFields is always added).
uint64_t EncodedSize(const BatchView& view, uint32_t fields);
/// Write `fields` of `view` into `out` (exactly EncodedSize bytes, 64-byte aligned for the
/// readers to view it in place).
void EncodeBatch(const BatchView& view, uint32_t fields, std::span<std::byte> out);
/// View encoded bytes (8-byte aligned at least; the arrays point into `bytes`). Errors:
/// Corrupt naming what is wrong (magic, version, an array out of bounds or of a size that
/// disagrees with the token count), for any input bytes.
Result<BatchView> DecodeBatch(std::span<const std::byte> bytes);

}  // namespace mmpt::dist
