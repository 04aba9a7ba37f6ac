// The simulated executor's background loop. Each iteration: take cancellations and new requests off the
// queue, end cancelled and timed-out requests, validate and activate new ones, schedule a batch, spend the
// iteration's simulated time, advance every scheduled sequence by a prompt chunk or one token, and publish
// responses and statistics.
#include "executor_impl.h"

#include <algorithm>

namespace tensorrt_llm::executor
{

namespace
{

constexpr char kFetchError[] = "Encountered an error when fetching new request: ";
constexpr char kForwardError[] = "Encountered an error in forwardAsync function: ";

double millisecondsBetween(sim::TimePoint from, sim::TimePoint to)
{
    return std::chrono::duration<double, std::milli>(to - from).count();
}

/// True when prompt + generated ends with `word` (a stop sequence may start inside the prompt).
bool endsWithWord(VecTokens const& prompt, VecTokens const& generated, VecTokens const& word)
{
    std::size_t const total = prompt.size() + generated.size();
    if (word.empty() || word.size() > total)
    {
        return false;
    }
    for (std::size_t i = 0; i < word.size(); ++i)
    {
        std::size_t const index = total - word.size() + i;
        TokenIdType const token = index < prompt.size() ? prompt[index] : generated[index - prompt.size()];
        if (token != word[i])
        {
            return false;
        }
    }
    return true;
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

void Executor::Impl::executionLoop()
{
    while (true)
    {
        std::vector<Response> responses;
        try
        {
            IterationInput input;
            if (!waitForWork(input, responses))
            {
                break;
            }
            runIteration(input, responses);
        }
        catch (std::exception const& e)
        {
            failEverything(kForwardError + std::string(e.what()), responses);
        }
        catch (...)
        {
            failEverything(kForwardError + std::string("unknown exception"), responses);
        }
        // The iteration's KV-cache events become visible to readers at its end.
        mKvEvents->flush();
    }
}

void Executor::Impl::failEverything(std::string const& message, std::vector<Response>& responses) noexcept
{
    // As in TensorRT-LLM, an error inside an iteration fails the active requests, not the executor. Should even
    // that fail (memory exhausted), the loop carries on rather than take the process down.
    try
    {
        failRequests(message, [](sim::Sequence const&) { return true; }, responses);
        publish(responses);
        recordStats(sim::BatchPlan{}, IterationCounters{}, 0, 0.0, SequenceList{});
    }
    catch (...)
    {
    }
}

void Executor::Impl::runIteration(IterationInput& input, std::vector<Response>& responses)
{
    auto const iterStart = mClock.now();
    bool const wasActive = !mActive.empty();
    IterationCounters counters;
    SequenceList finished;
    // RequestStats' scheduled and paused describe this iteration only (TensorRT-LLM reports the requests its
    // scheduler picked or paused in the iteration): clear last iteration's before anything ends this one early.
    for (auto const& sequence : mActive)
    {
        sequence->scheduled = false;
        sequence->paused = false;
    }
    terminateActive(input.cancelledActive, iterStart, responses, finished);
    activate(input.fetched, iterStart, counters, responses);

    auto const& faults = mSim.faults;
    std::size_t failed = 0;
    if (faults.failAllFromIteration && mIteration >= *faults.failAllFromIteration)
    {
        std::string const message = kForwardError + std::string("simulated forward failure at iteration ")
                                    + std::to_string(mIteration) + " (simulation.json faults.fail_all_from_iteration)";
        failed += failRequests(message, [](sim::Sequence const&) { return true; }, responses);
    }
    if (faults.failPromptToken)
    {
        TokenIdType const token = *faults.failPromptToken;
        std::string const message = kForwardError + std::string("simulated failure of a request whose prompt ")
                                    + "contains token " + std::to_string(token)
                                    + " (simulation.json faults.fail_prompt_token)";
        failed += failRequests(
            message,
            [token](sim::Sequence const& sequence)
            {
                auto const& prompt = sequence.request->prompt;
                return !sequence.everScheduled && std::find(prompt.begin(), prompt.end(), token) != prompt.end();
            },
            responses);
    }
    // Terminations and rejections do not wait for the forward pass.
    publish(responses);
    if (mActive.empty())
    {
        if (wasActive || failed > 0)
        {
            // The last active requests ended without another forward pass: report the now idle executor.
            recordStats(sim::BatchPlan{}, counters, 0, 0.0, finished);
        }
        return;
    }

    std::vector<sim::Sequence*> order;
    for (auto const& sequence : mActive)
    {
        order.push_back(sequence.get());
    }
    auto const numActive = static_cast<SizeType32>(order.size());
    sim::BatchPlan const plan = mScheduler.schedule(order);
    for (sim::Sequence* sequence : plan.scheduled)
    {
        if (!sequence->everScheduled)
        {
            sequence->everScheduled = true;
            sequence->perf.timingMetrics.firstScheduledTime = iterStart;
        }
    }

    // The simulated forward pass: a fixed time when simulation.json sets iteration_ms, else the timing model's.
    double const simulatedMs
        = mSim.iterationMs ? *mSim.iterationMs : mTiming.iteration(sim::describeBatch(plan)).totalMs;
    double const stallMs = faults.stallIteration && *faults.stallIteration == mIteration ? faults.stallMs : 0.0;
    auto const iterEnd = mClock.spend(iterStart, simulatedMs, stallMs);
    for (sim::Sequence* sequence : plan.scheduled)
    {
        advance(*sequence, iterEnd);
    }
    collectResults(responses, finished);
    recordStats(plan, counters, numActive, simulatedMs + stallMs, finished);
    publish(responses);
    ++mIteration;
    if (mActive.empty())
    {
        // Like TensorRT-LLM, when the active list empties, one more entry shows the idle executor (nothing active,
        // nothing scheduled). It carries the next iteration's number, which the next forward pass reuses.
        recordStats(sim::BatchPlan{}, IterationCounters{}, 0, 0.0, SequenceList{});
    }
}

bool Executor::Impl::waitForWork(IterationInput& input, std::vector<Response>& responses)
{
    std::unique_lock<std::mutex> lock(mQueueMutex);
    while (true)
    {
        if (mActive.empty())
        {
            // Idle: sleep until a request, a cancellation or shutdown arrives (no polling).
            mLoopIdle = true;
            mQueueCv.wait(lock, [this]() { return !mQueue.empty() || !mCancelled.empty() || mStopRequested; });
            mLoopIdle = false;
        }
        terminateQueued(mClock.now(), responses);
        for (auto const& sequence : mActive)
        {
            if (mCancelled.count(sequence->request->id) > 0)
            {
                input.cancelledActive.insert(sequence->request->id);
            }
        }
        // Ids neither queued nor active belong to finished or unknown requests: cancelling them is a no-op.
        mCancelled.clear();
        fetchRequests(input);
        if (!mActive.empty() || !input.fetched.empty())
        {
            return true;
        }
        if (!responses.empty())
        {
            lock.unlock();
            publish(responses);
            lock.lock();
        }
        if (mStopRequested && mQueue.empty())
        {
            return false;
        }
    }
}

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

void Executor::Impl::fetchRequests(IterationInput& input)
{
    // Like TensorRT-LLM, requests leave the queue only while there is room among the active requests (a
    // request counts once per sequence). An idle executor always takes the head, however many it needs.
    SizeType32 const room = mSettings.maxNumActiveRequests - static_cast<SizeType32>(mActive.size());
    SizeType32 taken = 0;
    while (!mQueue.empty())
    {
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

void Executor::Impl::terminateActive(std::unordered_set<IdType> const& cancelled, sim::TimePoint now,
    std::vector<Response>& responses, SequenceList& finished)
{
    for (auto const& sequence : mActive)
    {
        auto const& request = *sequence->request;
        std::optional<FinishReason> reason;
        if (cancelled.count(request.id) > 0)
        {
            reason = FinishReason::kCANCELLED;
        }
        else if (request.deadline && now >= *request.deadline)
        {
            reason = FinishReason::kTIMED_OUT;
        }
        if (!reason)
        {
            continue;
        }
        sequence->terminate(*reason);
        if (auto result = sim::makeResult(*sequence))
        {
            responses.emplace_back(request.id, std::move(*result), request.clientId);
        }
    }
    retireFinished(finished);
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
        counters.queueLatencyMs += millisecondsBetween(queued.enqueueTime, now);
        for (SizeType32 index = 0; index < state->numSequences; ++index)
        {
            IdType const id = index == 0 ? queued.id : queued.childIds.at(index - 1);
            auto sequence = makeSequence(state, index, id, mArrivalCounter++);
            sequence->perf.timingMetrics.arrivalTime = now;
            insertActive(std::move(sequence));
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
    auto const vocab = mEngine.vocabSizePadded();
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
    SizeType32 const neededBlocks = mPool.blocksFor(promptLength, promptLength + state.maxNewTokens, state.beamWidth);
    if (neededBlocks > mPool.totalBlocks())
    {
        return "The request needs " + std::to_string(neededBlocks) + " KV-cache blocks (prompt "
               + std::to_string(promptLength) + " + maxTokens " + std::to_string(state.maxNewTokens)
               + " tokens) but the KV cache holds only " + std::to_string(mPool.totalBlocks()) + " blocks of "
               + std::to_string(mPool.tokensPerBlock()) + " tokens.";
    }
    return std::nullopt;
}

template <typename Select>
std::size_t Executor::Impl::failRequests(
    std::string const& message, Select const& select, std::vector<Response>& responses)
{
    std::unordered_set<IdType> failed;
    for (auto const& sequence : mActive)
    {
        if (select(*sequence) && failed.insert(sequence->request->id).second)
        {
            responses.emplace_back(sequence->request->id, message, sequence->request->clientId);
        }
    }
    if (failed.empty())
    {
        return 0;
    }
    // An error Response is terminal: all of the request's sequences leave without Results.
    for (auto it = mActive.begin(); it != mActive.end();)
    {
        if (failed.count((*it)->request->id) > 0)
        {
            // A failed request's blocks are not trusted for reuse.
            mPool.release(**it, false);
            it = mActive.erase(it);
        }
        else
        {
            ++it;
        }
    }
    return failed.size();
}

void Executor::Impl::advance(sim::Sequence& sequence, sim::TimePoint iterEnd)
{
    auto const& request = *sequence.request;
    auto& perf = sequence.perf;
    perf.iter = mIteration;
    perf.kvCacheMetrics.numTotalAllocatedBlocks = sequence.allocTotalBlocks;
    perf.kvCacheMetrics.numNewAllocatedBlocks = sequence.allocNewBlocks;
    perf.kvCacheMetrics.numReusedBlocks = sequence.reusedBlocks;
    perf.kvCacheMetrics.numMissedBlocks = sequence.missedBlocks;
    perf.kvCacheMetrics.kvCacheHitRate = sim::hitRate(sequence.reusedBlocks, sequence.missedBlocks);

    if (sequence.state == sim::SequenceState::kContext)
    {
        sequence.contextPosition += sequence.chunkTokens;
        if (sequence.contextPosition < sequence.contextLength)
        {
            return;
        }
        // Its prompt blocks are reusable from now on, while it generates.
        mPool.storeContext(sequence);
        // The iteration that completes the prompt also samples the first token.
        sequence.state = sim::SequenceState::kGeneration;
    }

    ++sequence.decodingIter;
    if (!perf.firstIter)
    {
        perf.firstIter = mIteration;
        perf.timingMetrics.firstTokenTime = iterEnd;
    }
    std::vector<sim::TokenGenerator::Step> steps;
    for (std::size_t beam = 0; beam < sequence.generated.size(); ++beam)
    {
        steps.push_back(mTokens.next(sequence, beam));
    }
    // Beam 0 decides when the sequence ends; the other beams follow it.
    if (request.endId >= 0 && steps[0].token == request.endId && sequence.numGenerated() >= request.minTokens)
    {
        sequence.finish(FinishReason::kEND_ID);
    }
    else
    {
        for (std::size_t beam = 0; beam < steps.size(); ++beam)
        {
            sequence.generated[beam].push_back(steps[beam].token);
            sequence.logProbs[beam].push_back(steps[beam].logProb);
        }
        bool const stopped = std::any_of(request.stopWords.begin(), request.stopWords.end(),
            [&](VecTokens const& word) { return endsWithWord(request.prompt, sequence.generated[0], word); });
        if (stopped)
        {
            sequence.finish(FinishReason::kSTOP_WORDS);
        }
        else if (sequence.numGenerated() >= request.maxNewTokens)
        {
            sequence.finish(FinishReason::kLENGTH);
        }
    }
    if (sequence.isFinished())
    {
        perf.lastIter = mIteration;
        perf.timingMetrics.lastTokenTime = iterEnd;
    }
}

void Executor::Impl::collectResults(std::vector<Response>& responses, SequenceList& finished)
{
    for (auto const& sequence : mActive)
    {
        if (auto result = sim::makeResult(*sequence))
        {
            responses.emplace_back(sequence->request->id, std::move(*result), sequence->request->clientId);
        }
    }
    retireFinished(finished);
}

void Executor::Impl::retireFinished(SequenceList& finished)
{
    for (auto it = mActive.begin(); it != mActive.end();)
    {
        if ((*it)->isFinished())
        {
            mPool.release(**it, true);
            finished.push_back(std::move(*it));
            it = mActive.erase(it);
        }
        else
        {
            ++it;
        }
    }
}

void Executor::Impl::insertActive(std::unique_ptr<sim::Sequence> sequence)
{
    auto const position = std::upper_bound(mActive.begin(), mActive.end(), sequence,
        [](std::unique_ptr<sim::Sequence> const& a, std::unique_ptr<sim::Sequence> const& b)
        { return sim::schedulesBefore(*a, *b); });
    mActive.insert(position, std::move(sequence));
}

void Executor::Impl::recordStats(sim::BatchPlan const& plan, IterationCounters const& counters, SizeType32 numActive,
    double iterLatencyMs, SequenceList const& finished)
{
    std::vector<RequestStats> queuedStats;
    SizeType32 numQueued = 0;
    {
        std::lock_guard<std::mutex> lock(mQueueMutex);
        numQueued = static_cast<SizeType32>(mQueue.size());
        if (mRequestStats.enabled())
        {
            for (auto const& queued : mQueue)
            {
                RequestStats stats{};
                stats.id = queued.id;
                stats.stage = RequestStage::kQUEUED;
                queuedStats.push_back(stats);
            }
        }
    }

    if (mIterationStats.enabled())
    {
        IterationStats stats{};
        stats.timestamp = sim::formatTimestamp(mClock.systemNow());
        stats.iter = mIteration;
        stats.iterLatencyMS = iterLatencyMs;
        stats.newActiveRequestsQueueLatencyMS = counters.queueLatencyMs;
        stats.numNewActiveRequests = counters.newActive;
        stats.numActiveRequests = numActive;
        stats.numQueuedRequests = numQueued;
        stats.numCompletedRequests = static_cast<SizeType32>(finished.size());
        stats.maxNumActiveRequests = mSettings.maxNumActiveRequests;
        stats.maxBatchSizeStatic = mEngine.maxBatchSize;
        stats.maxBatchSizeTunerRecommended = 0;
        stats.maxBatchSizeRuntime = mSettings.maxBatchSize;
        stats.maxNumTokensStatic = mEngine.maxNumTokens;
        stats.maxNumTokensTunerRecommended = 0;
        stats.maxNumTokensRuntime = mSettings.maxNumTokens;
        stats.gpuMemUsage = mSettings.memory.gpu;
        stats.cpuMemUsage = mSettings.memory.cpu;
        stats.pinnedMemUsage = mSettings.memory.pinned;

        KvCacheStats kv{};
        kv.maxNumBlocks = mPool.totalBlocks();
        kv.freeNumBlocks = mPool.freeBlocks();
        kv.usedNumBlocks = mPool.usedBlocks();
        kv.tokensPerBlock = mPool.tokensPerBlock();
        kv.allocTotalBlocks = mPool.allocTotalBlocks();
        kv.allocNewBlocks = mPool.allocNewBlocks();
        kv.reusedBlocks = mPool.reusedBlocks();
        kv.missedBlocks = mPool.missedBlocks();
        kv.cacheHitRate = sim::hitRate(kv.reusedBlocks, kv.missedBlocks);
        stats.kvCacheStats = kv;

        InflightBatchingStats batch{};
        batch.numScheduledRequests = static_cast<SizeType32>(plan.scheduled.size());
        batch.numContextRequests = plan.numContextRequests;
        batch.numGenRequests = plan.numGenerationRequests;
        batch.numPausedRequests = plan.numPausedRequests;
        batch.numCtxTokens = plan.numContextTokens;
        batch.microBatchId = 0;
        batch.avgNumDecodedTokensPerIter = 1.f;
        stats.inflightBatchingStats = batch;
        mIterationStats.push(std::move(stats));
    }

    if (mRequestStats.enabled())
    {
        RequestStatsPerIteration perIteration{mIteration, {}};
        auto const describe = [](sim::Sequence const& sequence)
        {
            RequestStats stats{};
            stats.id = sequence.id;
            stats.stage = sequence.isFinished()                            ? RequestStage::kGENERATION_COMPLETE
                          : sequence.state == sim::SequenceState::kContext ? RequestStage::kCONTEXT_IN_PROGRESS
                                                                           : RequestStage::kGENERATION_IN_PROGRESS;
            stats.contextPrefillPosition = sequence.contextPosition;
            stats.numGeneratedTokens = sequence.numGenerated();
            stats.avgNumDecodedTokensPerIter = sequence.decodingIter > 0 ? 1.f : 0.f;
            stats.scheduled = sequence.scheduled;
            stats.paused = sequence.paused;
            stats.allocTotalBlocksPerRequest = sequence.allocTotalBlocks;
            stats.allocNewBlocksPerRequest = sequence.allocNewBlocks;
            stats.reusedBlocksPerRequest = sequence.reusedBlocks;
            stats.missedBlocksPerRequest = sequence.missedBlocks;
            stats.kvCacheHitRatePerRequest = sim::hitRate(sequence.reusedBlocks, sequence.missedBlocks);
            return stats;
        };
        for (auto const& sequence : mActive)
        {
            perIteration.requestStats.push_back(describe(*sequence));
        }
        for (auto const& stats : queuedStats)
        {
            perIteration.requestStats.push_back(stats);
        }
        for (auto const& sequence : finished)
        {
            perIteration.requestStats.push_back(describe(*sequence));
        }
        mRequestStats.push(std::move(perIteration));
    }
}

void Executor::Impl::publish(std::vector<Response>& responses)
{
    if (responses.empty())
    {
        return;
    }
    {
        std::lock_guard<std::mutex> lock(mResponsesMutex);
        for (auto& response : responses)
        {
            mReady.push_back(std::move(response));
        }
    }
    responses.clear();
    mResponsesCv.notify_all();
}

} // namespace tensorrt_llm::executor
