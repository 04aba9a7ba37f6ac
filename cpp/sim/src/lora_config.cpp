// LoraConfig and PeftCacheConfig of the simulated executor, and the Request / ExecutorConfig accessors that carry
// them. LoraConfig checks its tensors on construction, as TensorRT-LLM's does.
#include "tensorrt_llm/executor/executor.h"

#include <stdexcept>
#include <utility>

namespace tensorrt_llm::executor
{

namespace
{

void check(bool condition, char const* message)
{
    if (!condition)
    {
        throw std::invalid_argument(message);
    }
}

} // namespace

LoraConfig::LoraConfig(IdType taskId, std::optional<Tensor> weights, std::optional<Tensor> config)
    : mTaskId(taskId)
    , mWeights(std::move(weights))
    , mConfig(std::move(config))
{
    if (mWeights || mConfig)
    {
        check(mWeights.has_value() && mConfig.has_value(),
            "Request for LoRA inference must have both lora weights and lora config");
        check(mWeights->getShape().size() == 2, "Expected weights tensor to have 2 dimensions");
        check(mConfig->getShape().size() == 2, "Expected config tensor to have 2 dimensions");
        check(mConfig->getMemoryType() == MemoryType::kCPU || mConfig->getMemoryType() == MemoryType::kCPU_PINNED,
            "Expected lora config to be in CPU memory");
        check(mWeights->getMemoryType() == MemoryType::kCPU || mWeights->getMemoryType() == MemoryType::kCPU_PINNED,
            "Expected lora weights to be in CPU memory");
        check(mConfig->getDataType() == DataType::kINT32, "Expected lora config tensor to have type kINT32");
        check(mConfig->getShape()[1] == 3, "Expected lora config tensor to have 3 columns");
        check(mWeights->getShape()[0] == mConfig->getShape()[0],
            "Expected lora weights and lora config to have the same number of rows");
    }
}

IdType LoraConfig::getTaskId() const
{
    return mTaskId;
}

std::optional<Tensor> LoraConfig::getWeights() const
{
    return mWeights;
}

std::optional<Tensor> LoraConfig::getConfig() const
{
    return mConfig;
}

std::optional<LoraConfig> Request::getLoraConfig() const
{
    return mLoraConfig;
}

void Request::setLoraConfig(LoraConfig const& loraConfig)
{
    mLoraConfig = loraConfig;
}

PeftCacheConfig::PeftCacheConfig(SizeType32 numHostModuleLayer, SizeType32 numDeviceModuleLayer,
    SizeType32 optimalAdapterSize, SizeType32 maxAdapterSize, SizeType32 numPutWorkers, SizeType32 numEnsureWorkers,
    SizeType32 numCopyStreams, SizeType32 maxPagesPerBlockHost, SizeType32 maxPagesPerBlockDevice,
    std::optional<float> const& deviceCachePercent, std::optional<size_t> const& hostCacheSize,
    std::optional<std::string> const& loraPrefetchDir)
    : mNumHostModuleLayer(numHostModuleLayer)
    , mNumDeviceModuleLayer(numDeviceModuleLayer)
    , mOptimalAdapterSize(optimalAdapterSize)
    , mMaxAdapterSize(maxAdapterSize)
    , mNumPutWorkers(numPutWorkers)
    , mNumEnsureWorkers(numEnsureWorkers)
    , mNumCopyStreams(numCopyStreams)
    , mMaxPagesPerBlockHost(maxPagesPerBlockHost)
    , mMaxPagesPerBlockDevice(maxPagesPerBlockDevice)
    , mDeviceCachePercent(deviceCachePercent)
    , mHostCacheSize(hostCacheSize)
    , mLoraPrefetchDir(loraPrefetchDir)
{
}

SizeType32 PeftCacheConfig::getNumHostModuleLayer() const
{
    return mNumHostModuleLayer;
}

SizeType32 PeftCacheConfig::getNumDeviceModuleLayer() const
{
    return mNumDeviceModuleLayer;
}

SizeType32 PeftCacheConfig::getOptimalAdapterSize() const
{
    return mOptimalAdapterSize;
}

SizeType32 PeftCacheConfig::getMaxAdapterSize() const
{
    return mMaxAdapterSize;
}

std::optional<FloatType> PeftCacheConfig::getDeviceCachePercent() const
{
    return mDeviceCachePercent;
}

std::optional<size_t> PeftCacheConfig::getHostCacheSize() const
{
    return mHostCacheSize;
}

std::optional<std::string> PeftCacheConfig::getLoraPrefetchDir() const
{
    return mLoraPrefetchDir;
}

std::optional<PeftCacheConfig> ExecutorConfig::getPeftCacheConfig() const
{
    return mPeftCacheConfig;
}

void ExecutorConfig::setPeftCacheConfig(PeftCacheConfig const& peftCacheConfig)
{
    mPeftCacheConfig = peftCacheConfig;
}

} // namespace tensorrt_llm::executor
