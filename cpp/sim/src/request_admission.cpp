// Request admission of the simulated executor's loop: ends queued requests that were cancelled or timed out
// before they started, takes new requests off the queue, validates them against the engine's limits and
// activates them as sequences.
#include "executor_impl.h"

#include <algorithm>
#include <chrono>
#include <variant>

namespace tensorrt_llm::executor
{

namespace
{

constexpr char kFetchError[] = "Encountered an error when fetching new request: ";

double millisecondsBetween(sim::TimePoint from, sim::TimePoint to)
{
    return std::chrono::duration<double, std::milli>(to - from).count();
}

std::vector<VecTokens> nonEmptyWords(std::optional<std::list<VecTokens>> const& words)
{
    std::vector<VecTokens> out;
    if (words)
    {
        for (auto const& word : *words)
        {
            if (!word.empty())
            {
                out.push_back(word);
            }
        }
    }
    return out;
}

std::unique_ptr<sim::Sequence> makeSequence(
    std::shared_ptr<sim::RequestState> const& state, SizeType32 index, IdType id, std::uint64_t arrivalOrder)
{
    auto sequence = std::make_unique<sim::Sequence>();
    sequence->request = state;
    sequence->id = id;
    sequence->sequenceIndex = index;
    sequence->arrivalOrder = arrivalOrder;
    sequence->contextLength = static_cast<SizeType32>(state->prompt.size());
    auto const beams = static_cast<std::size_t>(state->beamWidth);
    sequence->generated.assign(beams, VecTokens{});
    sequence->logProbs.assign(beams, VecLogProbs{});
    sequence->finishReasons.assign(beams, FinishReason::kNOT_FINISHED);
    return sequence;
}

} // namespace

void Executor::Impl::terminateQueued(sim::TimePoint now, std::vector<Response>& responses)
{
    for (auto it = mQueue.begin(); it != mQueue.end();)
    {
        std::optional<FinishReason> reason;
        if (mCancelled.erase(it->id) > 0)
        {
            reason = FinishReason::kCANCELLED;
        }
        else if (auto const allotted = it->request.getAllottedTimeMs(); allotted && now - it->enqueueTime >= *allotted)
        {
            reason = FinishReason::kTIMED_OUT;
        }
        if (!reason)
        {
            ++it;
            continue;
        }
        // The request never ran: each of its sequences gets a final Result with no generated tokens.
        auto state = std::make_shared<sim::RequestState>();
        validate(*it, *state);
        for (SizeType32 index = 0; index < state->numSequences; ++index)
        {
            auto sequence = makeSequence(state, index, index == 0 ? it->id : it->childIds.at(index - 1), 0);
            sequence->terminate(*reason);
            if (auto result = sim::makeResult(*sequence))
            {
                responses.emplace_back(it->id, std::move(*result), state->clientId);
            }
        }
        mQueuedSequences -= it->numSequences;
        it = mQueue.erase(it);
    }
}

void Executor::Impl::fetchRequests(IterationInput& input, std::optional<sim::TimePoint> arrivedBy)
{
    // Like TensorRT-LLM, requests leave the queue only while there is room among the active requests (a
    // request counts once per sequence). An idle executor always takes the head, however many it needs.
    SizeType32 const room = mSettings.maxNumActiveRequests - static_cast<SizeType32>(mActive.size());
    SizeType32 taken = 0;
    while (!mQueue.empty())
    {
        // Only requests that arrived by the iteration's start, when it is decided before fetching (real clock,
        // scheduled arrivals); the queue is in arrival order.
        if (arrivedBy && mQueue.front().enqueueTime > *arrivedBy)
        {
            break;
        }
        SizeType32 const needed = mQueue.front().numSequences;
        bool const idle = mActive.empty() && input.fetched.empty();
        if (taken + needed > room && !idle)
        {
            break;
        }
        taken += needed;
        mQueuedSequences -= needed;
        input.fetched.push_back(std::move(mQueue.front()));
        mQueue.pop_front();
    }
}

void Executor::Impl::activate(std::vector<QueuedRequest>& fetched, sim::TimePoint now, IterationCounters& counters,
    std::vector<Response>& responses)
{
    for (auto& queued : fetched)
    {
        auto state = std::make_shared<sim::RequestState>();
        if (auto const error = validate(queued, *state))
        {
            responses.emplace_back(queued.id, kFetchError + *error, queued.request.getClientId());
            continue;
        }
        // ---- LoRA: cache the adapter's weights, or find it cached; a failure ends only this request ----
        if (auto const lora = queued.request.getLoraConfig())
        {
            auto use = mLora.admit(*lora);
            if (auto const* error = std::get_if<std::string>(&use))
            {
                responses.emplace_back(queued.id, kFetchError + *error, queued.request.getClientId());
                continue;
            }
            auto const& admitted = std::get<sim::LoraUse>(use);
            state->loraTaskId = admitted.taskId;
            state->loraFlopsPerToken = admitted.cost.flopsPerToken;
            state->loraWeightBytes = admitted.cost.weightBytes;
            // Pinned in the host cache until the request's last sequence leaves; the device copy (and its
            // bytes) comes when the scheduler starts the request.
            state->loraPin = admitted.pin;
        }
        // Guided decoding: one matcher per sequence, compiled before any sequence starts.
        std::vector<std::unique_ptr<sim::GrammarState>> grammars;
        if (state->guided)
        {
            try
            {
                for (SizeType32 index = 0; index < state->numSequences; ++index)
                {
                    grammars.push_back(mGrammar->compile(*state->guided));
                }
            }
            catch (std::exception const& e)
            {
                responses.emplace_back(queued.id, kFetchError + std::string(e.what()), queued.request.getClientId());
                continue;
            }
        }
        counters.queueLatencyMs += millisecondsBetween(queued.enqueueTime, now);
        for (SizeType32 index = 0; index < state->numSequences; ++index)
        {
            IdType const id = index == 0 ? queued.id : queued.childIds.at(index - 1);
            auto sequence = makeSequence(state, index, id, mArrivalCounter++);
            if (!grammars.empty())
            {
                sequence->grammar = std::move(grammars.at(static_cast<std::size_t>(index)));
            }
            // A scheduled request arrived at its stamp, which may lie before the iteration that admits it.
            sequence->perf.timingMetrics.arrivalTime = queued.scheduled ? queued.enqueueTime : now;
            if (state->requestType == RequestType::REQUEST_TYPE_GENERATION_ONLY)
            {
                // It waits for its KV cache before it decodes (cache_transceiver.h).
                mTransceiver.addIncoming(std::move(sequence), queued.request);
            }
            else
            {
                insertActive(std::move(sequence));
            }
            ++counters.newActive;
        }
    }
}

std::optional<std::string> Executor::Impl::validate(QueuedRequest const& queued, sim::RequestState& state) const
{
    Request const& request = queued.request;
    auto const sampling = request.getSamplingConfig();
    auto const output = request.getOutputConfig();

    state.id = queued.id;
    state.clientId = request.getClientId();
    state.enqueueTime = queued.enqueueTime;
    state.priority = request.getPriority();
    state.prompt = request.getInputTokenIds();
    state.promptHash = sim::hashTokens(state.prompt);
    state.maxNewTokens = request.getMaxTokens();
    state.streaming = request.getStreaming();
    state.beamWidth = sampling.getBeamWidth();
    state.numReturnBeams = sampling.getNumReturnBeams();
    state.numSequences = queued.numSequences;
    // Streaming beam search always returns whole beams, as in TensorRT-LLM.
    state.returnAllGeneratedTokens = request.getReturnAllGeneratedTokens() || (state.streaming && state.beamWidth > 1);
    state.excludeInputFromOutput = output.excludeInputFromOutput;
    state.returnLogProbs = output.returnLogProbs;
    state.returnPerfMetrics = output.returnPerfMetrics;
    state.endId = request.getEndId().value_or(-1);
    state.minTokens = sampling.getMinTokens().value_or(1);
    state.seed = sampling.getSeed();
    state.stopWords = nonEmptyWords(request.getStopWords());
    state.badWords = nonEmptyWords(request.getBadWords());
    if (auto const allotted = request.getAllottedTimeMs())
    {
        state.deadline = queued.enqueueTime + *allotted;
    }
    state.sequenceFinal.assign(static_cast<std::size_t>(state.numSequences), false);

    auto const promptLength = static_cast<SizeType32>(state.prompt.size());
    auto const vocab = mEngine.vocabSizePadded;
    if (state.beamWidth > mSettings.maxBeamWidth)
    {
        return "Requested beam width (" + std::to_string(state.beamWidth) + ") exceeds the maximum beam width ("
               + std::to_string(mSettings.maxBeamWidth) + ") the executor was configured with (engine max_beam_width "
               + std::to_string(mEngine.maxBeamWidth) + ").";
    }
    if (promptLength == 0)
    {
        return std::string("Input token ids are empty: a request needs a prompt of at least one token.");
    }
    if (state.endId < -1 || state.endId >= vocab)
    {
        return "EndId (" + std::to_string(state.endId) + ") is not within acceptable range [-1, "
               + std::to_string(vocab) + ").";
    }
    if (promptLength > mEngine.maxInputLen)
    {
        return "Prompt length (" + std::to_string(promptLength) + ") exceeds maximum input length ("
               + std::to_string(mEngine.maxInputLen)
               + "). Set log level to info and check TRTGptModel logs for how maximum input length is set";
    }
    for (std::size_t i = 0; i < state.prompt.size(); ++i)
    {
        if (state.prompt[i] < 0 || state.prompt[i] >= vocab)
        {
            return "Token id (" + std::to_string(state.prompt[i]) + ") at prompt position " + std::to_string(i)
                   + " is out of the vocabulary range [0, " + std::to_string(vocab) + ").";
        }
    }
    if (state.maxNewTokens < 1)
    {
        return "maxTokens (" + std::to_string(state.maxNewTokens) + ") must be greater than 0.";
    }
    if (!mSettings.scheduler.chunkedContext && promptLength > mSettings.maxNumTokens)
    {
        return "Prompt length (" + std::to_string(promptLength)
               + ") exceeds the maximum number of tokens per iteration (" + std::to_string(mSettings.maxNumTokens)
               + ") and chunked context is disabled; enable chunked context or lower the prompt length.";
    }
    if (output.returnGenerationLogits && !mSettings.gatherGenerationLogits)
    {
        return std::string("To return generation logits, gather_generation_logits must be enabled in ExecutorConfig");
    }
    if (output.returnContextLogits && !mEngine.gatherContextLogits)
    {
        return std::string("Return context logit need to build engine with gather_context_logits");
    }
    // Like TensorRT-LLM, an over-long request is clamped, not rejected.
    state.maxNewTokens = std::max<SizeType32>(1, std::min(state.maxNewTokens, mEngine.maxSeqLen - promptLength));
    if (state.streaming && mSettings.scheduler.policy != CapacitySchedulerPolicy::kGUARANTEED_NO_EVICT
        && !mSettings.scheduler.chunkedContext && promptLength + state.maxNewTokens - 1 > mEngine.maxInputLen)
    {
        return std::string("Request sequence length is potentially greater than max input length. This cannot be run "
                           "unless streaming is disabled, context chunking is enabled or the GUARANTEED_NO_EVICT "
                           "scheduling policy is used");
    }
    if (auto error = mSpeculator.admit(request, state))
    {
        return error;
    }
    SizeType32 const neededBlocks = mPool.blocksFor(promptLength, promptLength + state.maxNewTokens, state.beamWidth);
    if (neededBlocks > mPool.totalBlocks())
    {
        return "The request needs " + std::to_string(neededBlocks) + " KV-cache blocks (prompt "
               + std::to_string(promptLength) + " + maxTokens " + std::to_string(state.maxNewTokens)
               + " tokens) but the KV cache holds only " + std::to_string(mPool.totalBlocks()) + " blocks of "
               + std::to_string(mPool.tokensPerBlock()) + " tokens.";
    }
    // Guided decoding
    state.guided = request.getGuidedDecodingParams();
    if (state.guided && !mGrammar)
    {
        return std::string("Guided decoding is not enabled: the executor was created without a GuidedDecodingConfig "
                           "(set one in the ExecutorConfig to send guided requests).");
    }
    if (state.guided && state.beamWidth > 1)
    {
        return "Guided decoding supports beam width 1 only, the request asks for " + std::to_string(state.beamWidth)
               + ".";
    }
    // Disaggregated serving: the request type, and a generation-only request's handoff.
    return mTransceiver.admit(request, state);
}

} // namespace tensorrt_llm::executor
