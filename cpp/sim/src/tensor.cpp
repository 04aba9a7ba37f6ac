// Host tensors of the simulated executor: an owned, zeroed byte buffer with a data type and a shape. Copies share
// the buffer, as the real Tensor shares its ITensor.
#include "tensorrt_llm/executor/tensor.h"

#include <stdexcept>
#include <string>
#include <vector>

namespace tensorrt_llm::executor
{

struct Tensor::Storage
{
    DataType dataType{DataType::kUNKNOWN};
    std::vector<detail::DimType64> dims;
    std::vector<unsigned char> bytes;
    std::size_t elements{0};
};

namespace
{

std::size_t elementSize(DataType type)
{
    switch (type)
    {
    case DataType::kBOOL:
    case DataType::kUINT8:
    case DataType::kINT8:
    case DataType::kFP8: return 1;
    case DataType::kBF16:
    case DataType::kFP16: return 2;
    case DataType::kINT32:
    case DataType::kFP32: return 4;
    case DataType::kINT64: return 8;
    case DataType::kUNKNOWN: break;
    }
    throw std::invalid_argument("Tensor::cpu: unsupported data type " + std::to_string(static_cast<int>(type)));
}

} // namespace

Tensor::Tensor(std::shared_ptr<Storage> tensor)
    : mTensor(std::move(tensor))
{
}

Tensor Tensor::cpu(DataType dataType, Shape shape)
{
    auto storage = std::make_shared<Storage>();
    storage->dataType = dataType;
    storage->dims.assign(shape.begin(), shape.end());
    std::size_t elements = 1;
    for (auto const dim : storage->dims)
    {
        if (dim < 0)
        {
            throw std::invalid_argument("Tensor::cpu: negative dimension " + std::to_string(dim));
        }
        elements *= static_cast<std::size_t>(dim);
    }
    storage->elements = elements;
    storage->bytes.assign(elements * elementSize(dataType), 0);
    return Tensor(std::move(storage));
}

void* Tensor::getData()
{
    return mTensor ? mTensor->bytes.data() : nullptr;
}

void const* Tensor::getData() const
{
    return mTensor ? mTensor->bytes.data() : nullptr;
}

DataType Tensor::getDataType() const
{
    return mTensor ? mTensor->dataType : DataType::kUNKNOWN;
}

MemoryType Tensor::getMemoryType() const
{
    return mTensor ? MemoryType::kCPU : MemoryType::kUNKNOWN;
}

Shape Tensor::getShape() const
{
    return mTensor ? Shape(mTensor->dims.data(), mTensor->dims.size()) : Shape();
}

std::size_t Tensor::getSize() const
{
    return mTensor ? mTensor->elements : 0;
}

std::size_t Tensor::getSizeInBytes() const
{
    return mTensor ? mTensor->bytes.size() : 0;
}

} // namespace tensorrt_llm::executor
