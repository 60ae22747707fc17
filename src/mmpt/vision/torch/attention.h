#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

namespace mmpt::vision {

/// Attention of q, k, v [rows, heads, head_dim] within the segments `cu_seqlens` (row offsets,
/// first 0, last rows): a row attends to the rows of its segment only, so time and memory grow
/// with Σ segment², never rows². Consecutive segments of one length are computed as one batch.
/// Softmax runs in fp32; the result has q's type, [rows, heads, head_dim].
///
/// `keep_probabilities` true: plain autograd, which keeps each segment's attention matrix for
/// the backward pass. False: a memory-efficient kernel that keeps q, k, v, the output and one
/// log-sum-exp per row and head, and recomputes the probabilities chunk by chunk in the backward
/// pass (selective recomputation), so no segment² matrix outlives a chunk.
at::Tensor VarlenAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                           const std::vector<int64_t>& cu_seqlens, bool keep_probabilities);

}  // namespace mmpt::vision
