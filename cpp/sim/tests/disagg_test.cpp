// Tests of the simulated cache transceiver (disaggregated serving) through the public Executor: a context-only
// request ends after its first token with ContextPhaseParams whose serialized state a generation-only request on
// another executor decodes from; the context side holds the blocks until they are taken, cancelled or expired;
// unknown, mismatched and corrupt handoffs are refused. Links the transfer model's stand-in (1 ms per transfer).
//
// Build: c++ -std=c++17 -O1 -pthread -I cpp/sim/include cpp/sim/src/*.cpp cpp/sim/tests/disagg_test.cpp
#include "tensorrt_llm/executor/executor.h"

#include "../src/engine_config.h"
#include "../src/sim_config.h"
#include "../src/timing_model.h"
#include "test_harness.h"

#include <chrono>
#include <filesystem>
#include <numeric>
#include <string>
#include <thread>
#include <unistd.h>

namespace tle = tensorrt_llm::executor;
namespace sim = tensorrt_llm::executor::sim;
namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace
{

fs::path gTempRoot;

/// A 2-layer engine described to the stand-in loader (2 ms iterations, 64k KV tokens), `layers` layers.
fs::path makeEngine(int layers = 2)
{
    static int counter = 0;
    fs::path const dir = gTempRoot / ("engine-" + std::to_string(counter++));
    sim::EngineConfig engine;
    engine.vocabSizePadded = 1000;
    engine.hiddenSize = 256;
    engine.numLayers = layers;
    engine.numAttentionHeads = 4;
    engine.numKvHeads = 2;
    engine.headSize = 64;
    engine.intermediateSize = 512;
    engine.maxInputLen = 256;
    engine.maxSeqLen = 512;
    engine.maxBatchSize = 8;
    engine.maxBeamWidth = 1;
    engine.maxNumTokens = 1024;
    engine.tokensPerBlock = 16;
    sim::SimConfig config;
    config.iterationMs = 2;
    config.kvCacheMaxTokens = 65536;
    sim::describeStandInEngine(dir, engine, config);
    return dir;
}

tle::ExecutorConfig withTransceiver(std::optional<int> timeoutMs = std::nullopt)
{
    tle::ExecutorConfig config;
    config.setCacheTransceiverConfig(tle::CacheTransceiverConfig(std::nullopt, std::nullopt, timeoutMs));
    return config;
}

std::unique_ptr<tle::Executor> makeExecutor(fs::path const& dir, tle::ExecutorConfig const& config)
{
    return std::make_unique<tle::Executor>(dir, tle::ModelType::kDECODER_ONLY, config);
}

tle::Request request(int length, int maxTokens, tle::RequestType type)
{
    tle::VecTokens tokens(static_cast<std::size_t>(length));
    std::iota(tokens.begin(), tokens.end(), 1);
    tle::Request out(tokens, maxTokens, false);
    tle::OutputConfig output;
    output.excludeInputFromOutput = true;
    output.returnPerfMetrics = true;
    out.setOutputConfig(output);
    out.setRequestType(type);
    return out;
}

/// The terminal response of `id` (awaited for up to 5 s).
tle::Response terminal(tle::Executor& executor, tle::IdType id)
{
    auto const deadline = Clock::now() + 5s;
    while (Clock::now() < deadline)
    {
        for (auto& response : executor.awaitResponses(id, 20ms))
        {
            if (response.hasError() || response.getResult().isFinal)
            {
                return response;
            }
        }
    }
    throw test::Failure("no terminal response");
}

int usedBlocks(tle::Executor& executor)
{
    int used = -1;
    for (auto const& stats : executor.getLatestIterationStats())
    {
        if (stats.kvCacheStats)
        {
            used = stats.kvCacheStats->usedNumBlocks;
        }
    }
    return used;
}

/// Polls the iteration stats until the used blocks equal `expected` (or 5 s pass); returns the last value seen.
int waitForUsedBlocks(tle::Executor& executor, int expected)
{
    int last = -1;
    auto const deadline = Clock::now() + 5s;
    while (Clock::now() < deadline)
    {
        if (int const used = usedBlocks(executor); used >= 0)
        {
            last = used;
        }
        if (last == expected)
        {
            break;
        }
        std::this_thread::sleep_for(5ms);
    }
    return last;
}

/// A context-only request's final Result (REQUIREs its params).
tle::Result prefill(tle::Executor& context, int length, int maxTokens)
{
    auto const response = terminal(context, context.enqueueRequest(request(length, maxTokens, tle::RequestType::REQUEST_TYPE_CONTEXT_ONLY)));
    REQUIRE(!response.hasError());
    REQUIRE(response.getResult().contextPhaseParams.has_value());
    return response.getResult();
}

tle::Request generationOnly(int length, int maxTokens, tle::ContextPhaseParams const& params)
{
    auto out = request(length, maxTokens, tle::RequestType::REQUEST_TYPE_GENERATION_ONLY);
    // As a process boundary would: only the serialized state travels.
    out.setContextPhaseParams(tle::ContextPhaseParams(
        params.getFirstGenTokens(), params.getReqId(), params.getSerializedState(), params.getDraftTokens()));
    return out;
}

void testDisaggregatedOutputEqualsAggregated()
{
    auto const dir = makeEngine();
    auto context = makeExecutor(dir, withTransceiver());
    auto generation = makeExecutor(dir, withTransceiver());
    auto const aggregated = terminal(*generation, generation->enqueueRequest(request(40, 10, tle::RequestType::REQUEST_TYPE_CONTEXT_AND_GENERATION)));
    REQUIRE(!aggregated.hasError());
    auto const expected = aggregated.getResult().outputTokenIds.at(0);

    auto const contextFinal = prefill(*context, 40, 10);
    CHECK(contextFinal.isFinal);
    CHECK(contextFinal.outputTokenIds.at(0) == tle::VecTokens{expected.at(0)});
    CHECK(contextFinal.finishReasons.at(0) == tle::FinishReason::kNOT_FINISHED);
    auto const& params = *contextFinal.contextPhaseParams;
    CHECK(params.getFirstGenTokens() == tle::VecTokens{expected.at(0)});
    // 40 tokens in blocks of 16: three blocks stay with the context side.
    CHECK(waitForUsedBlocks(*context, 3) == 3);

    auto const decoded = terminal(*generation, generation->enqueueRequest(generationOnly(40, 10, params)));
    REQUIRE(!decoded.hasError());
    CHECK(decoded.getResult().outputTokenIds.at(0) == expected);
    auto const& perf = decoded.getResult().requestPerfMetrics->timingMetrics;
    CHECK(perf.kvCacheTransferEnd > perf.kvCacheTransferStart);
    CHECK(perf.kvCacheSize > 0);
    // Taken: the context side frees its blocks.
    CHECK(waitForUsedBlocks(*context, 0) == 0);

    // A handoff is good once.
    auto const again = terminal(*generation, generation->enqueueRequest(generationOnly(40, 10, params)));
    CHECK(again.hasError() && again.getErrorMsg().find("holds no KV blocks") != std::string::npos);
}

void testParamsCopyAndSerializeTheirState()
{
    std::vector<char> const state{'a', 'b', 'c'};
    tle::ContextPhaseParams const params(tle::VecTokens{7}, 42, state, tle::VecTokens{1, 2});
    tle::ContextPhaseParams copy = params;
    CHECK(copy == params);
    CHECK(copy.getSerializedState() == state);
    CHECK(copy.getState() != params.getState());
    CHECK(copy.getReqId() == 42);
    CHECK(copy.getDraftTokens() == tle::VecTokens({1, 2}));
    tle::ContextPhaseParams const stateless(tle::VecTokens{7}, 42, std::nullopt);
    CHECK(stateless.getSerializedState().empty());
    CHECK(stateless.getState() == nullptr);
}

void testUntakenBlocksAreFreedAfterTheTimeout()
{
    auto const dir = makeEngine();
    auto context = makeExecutor(dir, withTransceiver(100));
    auto const contextFinal = prefill(*context, 40, 10);
    (void) contextFinal;
    auto const start = Clock::now();
    CHECK(waitForUsedBlocks(*context, 3) == 3);
    CHECK(waitForUsedBlocks(*context, 0) == 0);
    CHECK(Clock::now() - start >= 90ms);
}

void testCancellingAHeldContextFreesItsBlocks()
{
    auto const dir = makeEngine();
    auto context = makeExecutor(dir, withTransceiver());
    auto generation = makeExecutor(dir, withTransceiver());
    auto const contextFinal = prefill(*context, 40, 10);
    CHECK(waitForUsedBlocks(*context, 3) == 3);
    context->cancelRequest(contextFinal.contextPhaseParams->getReqId());
    CHECK(waitForUsedBlocks(*context, 0) == 0);
    auto const refused = terminal(*generation, generation->enqueueRequest(generationOnly(40, 10, *contextFinal.contextPhaseParams)));
    CHECK(refused.hasError() && refused.getErrorMsg().find("KV cache handoff refused") != std::string::npos);
}

void testMismatchedAndCorruptHandoffsAreRefused()
{
    auto context = makeExecutor(makeEngine(2), withTransceiver());
    auto other = makeExecutor(makeEngine(3), withTransceiver());
    auto const contextFinal = prefill(*context, 40, 10);
    auto const mismatched = terminal(*other, other->enqueueRequest(generationOnly(40, 10, *contextFinal.contextPhaseParams)));
    CHECK(mismatched.hasError() && mismatched.getErrorMsg().find("does not pair") != std::string::npos);

    auto corrupt = request(40, 10, tle::RequestType::REQUEST_TYPE_GENERATION_ONLY);
    corrupt.setContextPhaseParams(tle::ContextPhaseParams(tle::VecTokens{5}, 1, std::vector<char>{'x', 'y'}, std::nullopt));
    auto const refused = terminal(*other, other->enqueueRequest(corrupt));
    CHECK(refused.hasError() && refused.getErrorMsg().find("KV cache handoff is corrupt") != std::string::npos);

    // Without a transceiver, neither kind of request runs.
    auto plain = makeExecutor(makeEngine(2), tle::ExecutorConfig());
    auto const noTransceiver = terminal(*plain, plain->enqueueRequest(request(8, 4, tle::RequestType::REQUEST_TYPE_CONTEXT_ONLY)));
    CHECK(noTransceiver.hasError() && noTransceiver.getErrorMsg().find("CacheTransceiverConfig") != std::string::npos);
}

void testCancellingAGenerationRequestEndsWithZeroTokens()
{
    auto const dir = makeEngine();
    auto context = makeExecutor(dir, withTransceiver());
    auto generation = makeExecutor(dir, withTransceiver());
    auto const contextFinal = prefill(*context, 40, 400);
    auto const& params = *contextFinal.contextPhaseParams;
    auto const id = generation->enqueueRequest(generationOnly(40, 400, params));
    generation->cancelRequest(id);
    auto const response = terminal(*generation, id);
    REQUIRE(!response.hasError());
    CHECK(response.getResult().finishReasons.at(0) == tle::FinishReason::kCANCELLED);
    CHECK(response.getResult().outputTokenIds.at(0).empty());
    // A cancel before the transfer began leaves the handoff good (the context side still holds the blocks); one
    // during or after it frees them. Either way they go once a generation request has taken them.
    if (waitForUsedBlocks(*context, 0) != 0)
    {
        auto const second = terminal(*generation, generation->enqueueRequest(generationOnly(40, 8, params)));
        CHECK(!second.hasError());
        CHECK(waitForUsedBlocks(*context, 0) == 0);
    }
    CHECK(waitForUsedBlocks(*generation, 0) <= 0);
}

} // namespace

int main()
{
    gTempRoot = fs::temp_directory_path() / ("trtllm-disagg-test-" + std::to_string(::getpid()));
    fs::create_directories(gTempRoot);
    int const code = test::runAll({
        {"disaggregated output equals aggregated", testDisaggregatedOutputEqualsAggregated},
        {"params copy and serialize their state", testParamsCopyAndSerializeTheirState},
        {"untaken blocks are freed after the timeout", testUntakenBlocksAreFreedAfterTheTimeout},
        {"cancelling a held context frees its blocks", testCancellingAHeldContextFreesItsBlocks},
        {"mismatched and corrupt handoffs are refused", testMismatchedAndCorruptHandoffsAreRefused},
        {"cancelling a generation request ends with zero tokens", testCancellingAGenerationRequestEndsWithZeroTokens},
    });
    std::error_code ignored;
    fs::remove_all(gTempRoot, ignored);
    return code;
}
