// Simulated executor: the name of TensorRT-LLM's `tensorrt_llm/executor/tensor.h` Tensor class, which optional
// request fields (draft logits) are declared with. The simulator never holds tensor data: the shim only ever
// passes std::nullopt where a Tensor is accepted.
#pragma once

namespace tensorrt_llm::executor
{

/// A tensor handle. Empty here: the simulator has no device memory.
class Tensor
{
public:
    Tensor() noexcept = default;
};

} // namespace tensorrt_llm::executor
