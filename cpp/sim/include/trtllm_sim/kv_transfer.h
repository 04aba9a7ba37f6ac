// Simulator-only: the link the simulated executor's disaggregated KV transfers cross. TensorRT-LLM has no such
// setting (its transfers take what the hardware gives); the shim sets it only in the simulated build, to replace
// simulation.json's `kv_transfer` with the command line's or ExecutorConfig's choice.
#pragma once

#include "tensorrt_llm/executor/executor.h"

namespace trtllm_sim
{

/// A link's figures per GPU and direction: nominal bandwidth (GB/s), setup latency per transfer (µs), and the
/// fraction of the bandwidth a transfer achieves.
struct KvLinkFigures
{
    double bandwidthGbS;
    double latencyUs;
    double efficiency;
};

/// Sets the link KV transfers into `executor` cross from now on. Throws std::invalid_argument for an executor the
/// simulator did not create or figures out of range.
void setKvLink(tensorrt_llm::executor::Executor const& executor, KvLinkFigures const& link);

} // namespace trtllm_sim
