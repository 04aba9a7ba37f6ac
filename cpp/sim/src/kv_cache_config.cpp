// The simulated KvCacheConfig: KV-cache capacity, block reuse and event settings, checked as TensorRT-LLM
// checks them.
#include "tensorrt_llm/executor/executor.h"

#include "value_checks.h"

namespace tensorrt_llm::executor
{

namespace
{

using sim::check;
using sim::checkAtLeast;

} // namespace

KvCacheConfig::KvCacheConfig(bool enableBlockReuse, std::optional<SizeType32> const& maxTokens)
    : mEnableBlockReuse(enableBlockReuse)
    , mMaxTokens(checkAtLeast(maxTokens, 0, "maxTokens >= 0"))
{
}

bool KvCacheConfig::getEnableBlockReuse() const
{
    return mEnableBlockReuse;
}

std::optional<SizeType32> KvCacheConfig::getMaxTokens() const
{
    return mMaxTokens;
}

std::optional<FloatType> KvCacheConfig::getFreeGpuMemoryFraction() const
{
    return mFreeGpuMemoryFraction;
}

std::optional<std::size_t> KvCacheConfig::getHostCacheSize() const
{
    return mHostCacheSize;
}

std::size_t KvCacheConfig::getEventBufferMaxSize() const
{
    return mEventBufferMaxSize;
}

bool KvCacheConfig::getEnablePartialReuse() const
{
    return mEnablePartialReuse;
}

void KvCacheConfig::setEnableBlockReuse(bool enableBlockReuse)
{
    mEnableBlockReuse = enableBlockReuse;
}

void KvCacheConfig::setMaxTokens(std::optional<SizeType32> maxTokens)
{
    mMaxTokens = checkAtLeast(maxTokens, 0, "maxTokens >= 0");
}

void KvCacheConfig::setFreeGpuMemoryFraction(FloatType freeGpuMemoryFraction)
{
    check(freeGpuMemoryFraction >= 0.f && freeGpuMemoryFraction <= 1.f,
        "freeGpuMemoryFraction >= 0 && freeGpuMemoryFraction <= 1");
    mFreeGpuMemoryFraction = freeGpuMemoryFraction;
}

void KvCacheConfig::setHostCacheSize(std::size_t hostCacheSize)
{
    mHostCacheSize = hostCacheSize;
}

void KvCacheConfig::setEventBufferMaxSize(std::size_t eventBufferMaxSize)
{
    mEventBufferMaxSize = eventBufferMaxSize;
}

void KvCacheConfig::setEnablePartialReuse(bool enablePartialReuse)
{
    mEnablePartialReuse = enablePartialReuse;
}

bool KvCacheConfig::getCopyOnPartialReuse() const
{
    return mCopyOnPartialReuse;
}

void KvCacheConfig::setCopyOnPartialReuse(bool copyOnPartialReuse)
{
    mCopyOnPartialReuse = copyOnPartialReuse;
}

} // namespace tensorrt_llm::executor
