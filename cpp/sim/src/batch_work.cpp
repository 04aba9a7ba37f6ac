// The work of one planned iteration (timing_model.h): what the scheduler chose, reduced to the sums the Rust
// timing model prices.
#include "timing_model.h"

#include "scheduler.h"

#include <algorithm>
#include <limits>

namespace tensorrt_llm::executor::sim
{

void BatchWork::addContext(double newTokens, double pastTokens, bool samples)
{
    tokens += newTokens;
    contextTokens += newTokens;
    sampledRows += samples ? 1.0 : 0.0;
    // Causal attention: the i-th new token (1-based) sees the cached context and i new tokens.
    contextPairs += newTokens * pastTokens + newTokens * (newTokens + 1.0) / 2.0;
    kvTokensWritten += newTokens;
}

void BatchWork::addGeneration(double pastTokens, double beamWidth)
{
    tokens += beamWidth;
    sampledRows += beamWidth;
    attentionPairs += beamWidth * (pastTokens + 1.0);
    kvTokensRead += beamWidth * pastTokens;
    kvTokensWritten += beamWidth;
}

void BatchWork::addVerification(double pastTokens, double draftTokens)
{
    double const rows = 1.0 + draftTokens;
    tokens += rows;
    sampledRows += rows;
    attentionPairs += rows * pastTokens + rows * (rows + 1.0) / 2.0;
    kvTokensRead += pastTokens;
    kvTokensWritten += rows;
}

BatchWork describeBatch(BatchPlan const& plan, SizeType32 attentionWindow)
{
    BatchWork work;
    // A sliding window (0: none) bounds the cached tokens each new token attends to.
    double const window = attentionWindow > 0 ? attentionWindow : std::numeric_limits<double>::infinity();
    auto const attended = [window](double past) { return std::min(std::max(0.0, past), window); };
    std::vector<IdType> adapters;
    for (Sequence const* sequence : plan.scheduled)
    {
        // ---- LoRA: the adapter's FLOPs for this sequence's rows, its weights once per distinct adapter ----
        if (auto const& task = sequence->request->loraTaskId)
        {
            double const rows = sequence->state == SequenceState::kContext
                ? static_cast<double>(sequence->chunkTokens)
                : static_cast<double>(sequence->request->beamWidth);
            work.loraFlops += rows * sequence->request->loraFlopsPerToken;
            if (std::find(adapters.begin(), adapters.end(), *task) == adapters.end())
            {
                adapters.push_back(*task);
                work.loraWeightBytes += sequence->request->loraWeightBytes;
            }
        }
        if (sequence->state == SequenceState::kContext)
        {
            bool const samples = sequence->contextPosition + sequence->chunkTokens >= sequence->contextLength;
            work.addContext(sequence->chunkTokens, attended(sequence->contextPosition), samples);
            if (samples && sequence->request->speculative)
            {
                // Medusa / Eagle: the first drafts come from the prompt's last hidden state.
                work.drafterRequests += 1.0;
            }
            if (samples && sequence->stepDraftTokens > 0)
            {
                // Draft-target: the drafts ride along with the prompt's last chunk.
                work.addContext(sequence->stepDraftTokens, sequence->contextPosition + sequence->chunkTokens, true);
            }
        }
        else if (sequence->stepDraftTokens > 0)
        {
            // The drafter proposes the next step's drafts from this step's hidden state.
            work.drafterRequests += 1.0;
            double const past = static_cast<double>(sequence->request->prompt.size()) + sequence->numGenerated() - 1;
            work.addVerification(attended(past), sequence->stepDraftTokens);
        }
        else
        {
            // Every token but the last generated one is in the cache; the last one is this step's input.
            double const past = static_cast<double>(sequence->request->prompt.size()) + sequence->numGenerated() - 1;
            work.addGeneration(attended(past), sequence->request->beamWidth);
        }
    }
    return work;
}

} // namespace tensorrt_llm::executor::sim
