// The simulated OrchestratorConfig and ParallelConfig: accepted and kept; the simulator runs on one process.
#include "tensorrt_llm/executor/executor.h"

#include <utility>

namespace tensorrt_llm::executor
{

// ---------------------------------------------------------------------------------------------------------------
// OrchestratorConfig

OrchestratorConfig::OrchestratorConfig(bool isOrchestrator, std::string workerExecutablePath)
    : mIsOrchestrator(isOrchestrator)
    , mWorkerExecutablePath(std::move(workerExecutablePath))
{
}

bool OrchestratorConfig::getIsOrchestrator() const
{
    return mIsOrchestrator;
}

std::string OrchestratorConfig::getWorkerExecutablePath() const
{
    return mWorkerExecutablePath;
}

void OrchestratorConfig::setIsOrchestrator(bool isOrchestrator)
{
    mIsOrchestrator = isOrchestrator;
}

void OrchestratorConfig::setWorkerExecutablePath(std::string const& workerExecutablePath)
{
    mWorkerExecutablePath = workerExecutablePath;
}

// ---------------------------------------------------------------------------------------------------------------
// ParallelConfig

ParallelConfig::ParallelConfig(CommunicationType commType, CommunicationMode commMode,
    std::optional<std::vector<SizeType32>> deviceIds, std::optional<std::vector<SizeType32>> participantIds,
    std::optional<OrchestratorConfig> const& orchestratorConfig)
    : mCommType(commType)
    , mCommMode(commMode)
    , mDeviceIds(std::move(deviceIds))
    , mParticipantIds(std::move(participantIds))
    , mOrchestratorConfig(orchestratorConfig)
{
}

CommunicationMode ParallelConfig::getCommunicationMode() const
{
    return mCommMode;
}

std::optional<std::vector<SizeType32>> ParallelConfig::getDeviceIds() const
{
    return mDeviceIds;
}

std::optional<std::vector<SizeType32>> ParallelConfig::getParticipantIds() const
{
    return mParticipantIds;
}

std::optional<OrchestratorConfig> ParallelConfig::getOrchestratorConfig() const
{
    return mOrchestratorConfig;
}

void ParallelConfig::setCommunicationMode(CommunicationMode mode)
{
    mCommMode = mode;
}

void ParallelConfig::setDeviceIds(std::vector<SizeType32> const& deviceIds)
{
    mDeviceIds = deviceIds;
}

void ParallelConfig::setParticipantIds(std::vector<SizeType32> const& participantIds)
{
    mParticipantIds = participantIds;
}

void ParallelConfig::setOrchestratorConfig(OrchestratorConfig const& orchestratorConfig)
{
    mOrchestratorConfig = orchestratorConfig;
}

} // namespace tensorrt_llm::executor
