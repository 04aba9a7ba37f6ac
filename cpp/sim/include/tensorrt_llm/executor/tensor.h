// Simulated executor: the part of TensorRT-LLM's `tensorrt_llm/executor/tensor.h` that the trtllm shim uses
// (host tensors for LoRA adapters), with the same names and signatures as the 1.1/1.2 header. Written for
// this project; it declares nothing the real header lacks.
#pragma once

#include "tensorrt_llm/executor/types.h"

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>

namespace tensorrt_llm::executor
{

namespace detail
{
using DimType64 = int64_t;
} // namespace detail

/// A view of a tensor's dimensions (the real class is an ArrayView over the same element type).
class Shape
{
public:
    using DimType64 = detail::DimType64;
    using size_type = std::size_t;

    Shape()
        : mData(nullptr)
        , mSize(0)
    {
    }

    Shape(DimType64 const* data, size_type size)
        : mData(data)
        , mSize(size)
    {
    }

    // A view of the list, like the real class: valid for the full expression that builds it
    // (Tensor::cpu copies the dimensions).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winit-list-lifetime"
#endif
    Shape(std::initializer_list<DimType64> dims) // NOLINT(*-explicit-constructor)
        : mData(dims.begin())
        , mSize(dims.size())
    {
    }
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

    [[nodiscard]] size_type size() const
    {
        return mSize;
    }

    [[nodiscard]] DimType64 const& operator[](size_type index) const
    {
        return mData[index];
    }

    [[nodiscard]] DimType64 const* begin() const
    {
        return mData;
    }

    [[nodiscard]] DimType64 const* end() const
    {
        return mData + mSize;
    }

private:
    DimType64 const* mData;
    size_type mSize;
};

class Tensor
{
public:
    /// Allocates a host tensor of `shape` holding `dataType` elements (zeroed).
    static Tensor cpu(DataType dataType, Shape shape = {});

    Tensor() noexcept = default;
    ~Tensor() = default;
    Tensor(Tensor const& other) noexcept = default;
    Tensor(Tensor&& other) noexcept = default;
    Tensor& operator=(Tensor const& other) noexcept = default;
    Tensor& operator=(Tensor&& other) noexcept = default;

    [[nodiscard]] void* getData();
    [[nodiscard]] void const* getData() const;
    [[nodiscard]] DataType getDataType() const;
    [[nodiscard]] MemoryType getMemoryType() const;
    [[nodiscard]] Shape getShape() const;
    [[nodiscard]] std::size_t getSize() const;
    [[nodiscard]] std::size_t getSizeInBytes() const;

    explicit operator bool() const
    {
        return static_cast<bool>(mTensor);
    }

private:
    struct Storage;
    explicit Tensor(std::shared_ptr<Storage> tensor);

    std::shared_ptr<Storage> mTensor;
};

} // namespace tensorrt_llm::executor
