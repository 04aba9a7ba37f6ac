// Sequence bookkeeping and Result construction (see sequence.h).
#include "sequence.h"

#include <algorithm>
#include <numeric>

namespace tensorrt_llm::executor::sim
{

SizeType32 Sequence::tokensAfterStep() const
{
    if (state == SequenceState::kContext)
    {
        return contextPosition + chunkTokens;
    }
    // A generation step writes the KV entry of the token generated last, and of the draft tokens it verifies.
    return static_cast<SizeType32>(request->prompt.size()) + numGenerated() + stepDraftTokens;
}

SizeType32 Sequence::maxTotalTokens() const
{
    return static_cast<SizeType32>(request->prompt.size()) + request->maxNewTokens + request->draftReserve;
}

void Sequence::finish(FinishReason reason)
{
    state = SequenceState::kFinished;
    std::fill(finishReasons.begin(), finishReasons.end(), reason);
}

void Sequence::terminate(FinishReason reason)
{
    for (auto& tokens : generated)
    {
        tokens.clear();
    }
    for (auto& values : logProbs)
    {
        values.clear();
    }
    finish(reason);
}

bool schedulesBefore(Sequence const& sequence, Sequence const& other)
{
    if (sequence.request->priority != other.request->priority)
    {
        return sequence.request->priority > other.request->priority;
    }
    return sequence.arrivalOrder < other.arrivalOrder;
}

std::optional<Result> makeResult(Sequence& sequence)
{
    RequestState& request = *sequence.request;
    bool const finished = sequence.isFinished();
    if (!finished && !(request.streaming && sequence.state == SequenceState::kGeneration))
    {
        return std::nullopt;
    }
    std::size_t const generatedCount = sequence.generated.at(0).size();
    if (!finished && generatedCount <= sequence.sentTokens)
    {
        return std::nullopt;
    }

    Result result{};
    result.sequenceIndex = sequence.sequenceIndex;
    result.isSequenceFinal = finished;
    request.sequenceFinal.at(static_cast<std::size_t>(sequence.sequenceIndex)) = finished;
    result.isFinal = std::all_of(request.sequenceFinal.begin(), request.sequenceFinal.end(), [](bool f) { return f; });

    auto const beams = static_cast<std::size_t>(request.numReturnBeams);
    result.outputTokenIds.resize(beams);
    for (std::size_t beam = 0; beam < beams; ++beam)
    {
        VecTokens const& tokens = sequence.generated.at(beam);
        VecTokens& out = result.outputTokenIds[beam];
        if (!request.streaming)
        {
            if (!request.excludeInputFromOutput)
            {
                out = request.prompt;
            }
            out.insert(out.end(), tokens.begin(), tokens.end());
        }
        else if (request.returnAllGeneratedTokens)
        {
            out = tokens;
        }
        else if (tokens.size() > sequence.sentTokens)
        {
            out.assign(tokens.begin() + static_cast<std::ptrdiff_t>(sequence.sentTokens), tokens.end());
        }
    }

    if (request.returnLogProbs)
    {
        VecLogProbs cumulative;
        std::vector<VecLogProbs> perToken;
        for (std::size_t beam = 0; beam < beams; ++beam)
        {
            VecLogProbs const& values = sequence.logProbs.at(beam);
            cumulative.push_back(std::accumulate(values.begin(), values.end(), 0.f));
            perToken.push_back(values);
        }
        result.cumLogProbs = std::move(cumulative);
        result.logProbs = std::move(perToken);
    }

    result.finishReasons.assign(
        sequence.finishReasons.begin(), sequence.finishReasons.begin() + static_cast<std::ptrdiff_t>(beams));
    result.decodingIter = sequence.decodingIter;
    result.avgDecodedTokensPerIter = sequence.decodingIter > 0
        ? static_cast<float>(sequence.numGenerated()) / static_cast<float>(sequence.decodingIter)
        : 0.f;
    if (request.returnPerfMetrics)
    {
        result.requestPerfMetrics = sequence.perf;
        auto& spec = result.requestPerfMetrics->speculativeDecoding;
        spec.totalDraftTokens = sequence.totalDraftTokens;
        spec.totalAcceptedDraftTokens = sequence.acceptedDraftTokens;
        spec.acceptanceRate = sequence.totalDraftTokens > 0
            ? static_cast<float>(sequence.acceptedDraftTokens) / static_cast<float>(sequence.totalDraftTokens)
            : 0.f;
    }
    sequence.sentTokens = generatedCount;
    return result;
}

} // namespace tensorrt_llm::executor::sim
