// Simulated executor: the part of TensorRT-LLM's `tensorrt_llm/runtime/common.h` that the executor header uses
// (the token types of KV-cache events), declared with the same names and types as the 1.1/1.2 headers.
// Written for this project; it declares nothing the real header lacks.
#pragma once

#include <cstdint>
#include <vector>

namespace tensorrt_llm::runtime
{

using SizeType32 = std::int32_t;
using SizeType64 = std::int64_t;
using TokenIdType = std::int32_t;
using LoraTaskIdType = std::uint64_t;
using TokenExtraIdType = std::uint64_t;
using VecTokenExtraIds = std::vector<TokenExtraIdType>;

/// A token as the KV cache keys it: the id plus an extra id (non-zero only for prompt-tuning tokens).
struct UniqueToken
{
    TokenIdType tokenId;
    TokenExtraIdType tokenExtraId;

    bool operator==(UniqueToken const& other) const noexcept
    {
        return tokenId == other.tokenId && tokenExtraId == other.tokenExtraId;
    }
};

using VecUniqueTokens = std::vector<UniqueToken>;

} // namespace tensorrt_llm::runtime
