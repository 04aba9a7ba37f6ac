// Tests of the simulated TensorRT-LLM executor: a self-contained program (no framework) that describes tiny
// engines to the stand-in loader (timing_bridge.cpp without the Rust bridge, which reads and checks the real
// config.json / simulation.json: src/sim/executor_files.rs, tested in Rust), drives
// tensorrt_llm::executor::Executor through its public API and checks the behaviour the crate relies on. Prints
// "N passed, N failed" and exits non-zero on any failure.
//
// Build: c++ -std=c++17 -O1 -pthread -I cpp/sim/include cpp/sim/src/*.cpp cpp/sim/tests/sim_test.cpp
#include "tensorrt_llm/executor/executor.h"

#include "../src/engine_config.h"
#include "../src/executor_impl.h"
#include "../src/sim_config.h"
#include "../src/timing_model.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <unistd.h>
#include <variant>
#include <vector>

namespace tle = tensorrt_llm::executor;
namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// ---------------------------------------------------------------------------------------------------------------
// A minimal test harness

namespace
{

struct TestFailure : std::runtime_error
{
    using std::runtime_error::runtime_error;
};

int gChecksFailedInTest = 0;

void reportFailure(char const* file, int line, std::string const& what)
{
    ++gChecksFailedInTest;
    std::printf("    FAILED %s:%d: %s\n", file, line, what.c_str());
}

#define CHECK(condition)                                                                                               \
    do                                                                                                                 \
    {                                                                                                                  \
        if (!(condition))                                                                                              \
        {                                                                                                              \
            reportFailure(__FILE__, __LINE__, #condition);                                                             \
        }                                                                                                              \
    } while (false)

#define CHECK_EQ(actual, expected)                                                                                     \
    do                                                                                                                 \
    {                                                                                                                  \
        auto const& actualValue_ = (actual);                                                                           \
        auto const& expectedValue_ = (expected);                                                                       \
        if (!(actualValue_ == expectedValue_))                                                                         \
        {                                                                                                              \
            std::ostringstream message_;                                                                               \
            message_ << #actual << " == " << #expected << " (got " << actualValue_ << ", want " << expectedValue_      \
                     << ")";                                                                                           \
            reportFailure(__FILE__, __LINE__, message_.str());                                                         \
        }                                                                                                              \
    } while (false)

/// Aborts the current test (for preconditions whose failure makes the rest meaningless).
#define REQUIRE(condition)                                                                                             \
    do                                                                                                                 \
    {                                                                                                                  \
        if (!(condition))                                                                                              \
        {                                                                                                              \
            reportFailure(__FILE__, __LINE__, #condition);                                                             \
            throw TestFailure("requirement failed");                                                                   \
        }                                                                                                              \
    } while (false)

/// Runs `body` and checks that it throws an exception of type E whose what() contains `needle`.
template <typename E = std::runtime_error>
bool throwsWith(std::function<void()> const& body, std::string const& needle)
{
    try
    {
        body();
    }
    catch (E const& e)
    {
        if (std::string(e.what()).find(needle) != std::string::npos)
        {
            return true;
        }
        std::printf("    (exception text was: %s)\n", e.what());
        return false;
    }
    catch (...)
    {
        std::printf("    (an exception of another type was thrown)\n");
        return false;
    }
    std::printf("    (nothing was thrown)\n");
    return false;
}

bool contains(std::string const& text, std::string const& needle)
{
    return text.find(needle) != std::string::npos;
}

// ---------------------------------------------------------------------------------------------------------------
// Engine directories

fs::path gTempRoot;

/// simulation.json as the loader hands it over: `iteration_ms`, `time_scale` 1 and `kv_cache_max_tokens`.
tle::sim::SimConfig simulation(double iterationMs, std::optional<std::int64_t> kvCacheMaxTokens = 65536)
{
    tle::sim::SimConfig sim;
    sim.iterationMs = iterationMs;
    sim.kvCacheMaxTokens = kvCacheMaxTokens;
    return sim;
}

struct EngineSpec
{
    int vocabSize = 1000;
    int maxInputLen = 256;
    int maxSeqLen = 512;
    int maxBatchSize = 8;
    int maxBeamWidth = 1;
    int maxNumTokens = 1024;
    int tokensPerBlock = 16;
    bool pagedContextFmha = true;
    /// simulation.json's settings; the defaults are an engine without the file.
    tle::sim::SimConfig sim = simulation(2);
};

/// A Llama-shaped 2-layer engine of `spec`'s limits, described to the stand-in loader under a fresh path.
fs::path makeEngine(EngineSpec const& spec)
{
    static int counter = 0;
    fs::path const dir = gTempRoot / ("engine-" + std::to_string(counter++));
    tle::sim::EngineConfig engine;
    engine.vocabSizePadded = spec.vocabSize;
    engine.hiddenSize = 256;
    engine.numLayers = 2;
    engine.numAttentionHeads = 4;
    engine.numKvHeads = 2;
    engine.headSize = 64;
    engine.intermediateSize = 512;
    engine.maxInputLen = spec.maxInputLen;
    engine.maxSeqLen = spec.maxSeqLen;
    engine.maxBatchSize = spec.maxBatchSize;
    engine.maxBeamWidth = spec.maxBeamWidth;
    engine.maxNumTokens = spec.maxNumTokens;
    engine.tokensPerBlock = spec.tokensPerBlock;
    engine.usePagedContextFmha = spec.pagedContextFmha;
    tle::sim::describeStandInEngine(dir, engine, spec.sim);
    return dir;
}

std::unique_ptr<tle::Executor> makeExecutor(
    EngineSpec const& spec = EngineSpec{}, tle::ExecutorConfig const& config = tle::ExecutorConfig())
{
    return std::make_unique<tle::Executor>(makeEngine(spec), tle::ModelType::kDECODER_ONLY, config);
}

tle::VecTokens prompt(int length, int first = 1)
{
    tle::VecTokens tokens(static_cast<std::size_t>(length));
    std::iota(tokens.begin(), tokens.end(), first);
    return tokens;
}

// ---------------------------------------------------------------------------------------------------------------
// Collecting responses

using ResponsesById = std::map<tle::IdType, std::vector<tle::Response>>;

bool isTerminal(tle::Response const& response)
{
    return response.hasError() || response.getResult().isFinal;
}

/// Awaits until every id in `ids` got its terminal response (or `limit` passes) and returns all responses.
ResponsesById collect(
    tle::Executor& executor, std::vector<tle::IdType> const& ids, std::chrono::milliseconds limit = 5s)
{
    ResponsesById out;
    std::set<tle::IdType> pending(ids.begin(), ids.end());
    auto const deadline = Clock::now() + limit;
    while (!pending.empty() && Clock::now() < deadline)
    {
        for (auto& response : executor.awaitResponses(20ms))
        {
            if (isTerminal(response))
            {
                pending.erase(response.getRequestId());
            }
            out[response.getRequestId()].push_back(std::move(response));
        }
    }
    if (!pending.empty())
    {
        reportFailure(__FILE__, __LINE__, "timed out waiting for " + std::to_string(pending.size()) + " requests");
    }
    return out;
}

/// The last response of a list that must not be empty.
tle::Response const& lastOf(std::vector<tle::Response> const& responses)
{
    REQUIRE(!responses.empty());
    return responses.back();
}

/// The single final Result of a non-streaming request.
tle::Result finalResult(tle::Executor& executor, tle::IdType id)
{
    auto responses = collect(executor, {id})[id];
    REQUIRE(responses.size() == 1);
    REQUIRE(!responses[0].hasError());
    return responses[0].getResult();
}

tle::VecTokens generateOnce(tle::Executor& executor, tle::Request request)
{
    tle::OutputConfig output;
    output.excludeInputFromOutput = true;
    request.setOutputConfig(output);
    auto const result = finalResult(executor, executor.enqueueRequest(request));
    return result.outputTokenIds.at(0);
}

// ---------------------------------------------------------------------------------------------------------------
// Engine description (config.json and simulation.json are read and checked in Rust: src/sim/executor_files.rs)

void testAnEngineWithoutSimulationSettingsRuns()
{
    EngineSpec spec;
    spec.sim = tle::sim::SimConfig{};
    CHECK(!spec.sim.iterationMs); // the timing model decides
    CHECK_EQ(spec.sim.timeScale, 1.0);
    CHECK(!spec.sim.kvCacheMaxTokens); // derived from GPU memory
    CHECK(spec.sim.clock == tle::sim::ClockMode::kReal);
    auto executor = makeExecutor(spec);
    CHECK(executor->canEnqueueRequests());
    CHECK_EQ(generateOnce(*executor, tle::Request(prompt(4), 2)).size(), std::size_t{2});
}

void testVersion()
{
    std::string const version = tle::version();
    CHECK(version.rfind("1.2.0", 0) == 0);
    CHECK(contains(version, "sim"));
}

// ---------------------------------------------------------------------------------------------------------------
// Ids, await, output shape

void testRequestIdsStartAtOneAndIncrease()
{
    auto executor = makeExecutor();
    CHECK_EQ(executor->enqueueRequest(tle::Request(prompt(4), 2)), tle::IdType{1});
    std::vector<tle::Request> batch{tle::Request(prompt(4), 2), tle::Request(prompt(5), 2), tle::Request(prompt(6), 2)};
    auto const ids = executor->enqueueRequests(batch);
    CHECK(ids == (std::vector<tle::IdType>{2, 3, 4}));
    CHECK_EQ(executor->enqueueRequest(tle::Request(prompt(4), 2)), tle::IdType{5});
    auto const responses = collect(*executor, {1, 2, 3, 4, 5});
    CHECK_EQ(responses.size(), std::size_t{5});
}

void testAwaitDrainsTimesOutAndWakesPromptly()
{
    auto executor = makeExecutor();
    auto const start = Clock::now();
    CHECK(executor->awaitResponses(60ms).empty());
    CHECK(Clock::now() - start >= 55ms);

    // A waiter blocked with a long timeout wakes as soon as a response is appended.
    std::atomic<bool> woke{false};
    Clock::time_point wokeAt;
    std::vector<tle::Response> got;
    std::thread waiter(
        [&]()
        {
            got = executor->awaitResponses(5000ms);
            wokeAt = Clock::now();
            woke = true;
        });
    std::this_thread::sleep_for(30ms);
    auto const enqueuedAt = Clock::now();
    auto const id = executor->enqueueRequest(tle::Request(prompt(4), 1));
    waiter.join();
    CHECK(woke.load());
    CHECK(wokeAt - enqueuedAt < 1000ms);
    REQUIRE(got.size() == 1);
    CHECK_EQ(got[0].getRequestId(), id);

    // Without a timeout it blocks until responses are ready, then drains all of them at once.
    auto const ids = executor->enqueueRequests({tle::Request(prompt(4), 1), tle::Request(prompt(5), 1)});
    std::this_thread::sleep_for(50ms);
    auto const all = executor->awaitResponses();
    CHECK_EQ(all.size(), std::size_t{2});
    CHECK_EQ(executor->getNumResponsesReady(), 0);
    (void)ids;
}

void testNonStreamingOutputIsPromptPlusGenerated()
{
    auto executor = makeExecutor();
    auto const input = prompt(10, 100);
    auto const result = finalResult(*executor, executor->enqueueRequest(tle::Request(input, 8)));
    CHECK(result.isFinal);
    CHECK(result.isSequenceFinal);
    REQUIRE(result.outputTokenIds.size() == 1);
    auto const& tokens = result.outputTokenIds[0];
    REQUIRE(tokens.size() == 18);
    CHECK(tle::VecTokens(tokens.begin(), tokens.begin() + 10) == input);
    CHECK(std::all_of(tokens.begin(), tokens.end(), [](int t) { return t >= 0 && t < 1000; }));
    CHECK(result.finishReasons == std::vector<tle::FinishReason>{tle::FinishReason::kLENGTH});
    CHECK_EQ(result.decodingIter, 8);
    CHECK(!result.requestPerfMetrics.has_value());
    CHECK(!result.logProbs.has_value());

    // excludeInputFromOutput drops the prompt; the generated tokens are the same (deterministic).
    auto const generated = generateOnce(*executor, tle::Request(input, 8));
    CHECK(generated == tle::VecTokens(tokens.begin() + 10, tokens.end()));
    // The same request on another executor with the same seed gives the same tokens...
    auto other = makeExecutor();
    CHECK(generateOnce(*other, tle::Request(input, 8)) == generated);
    // ...a different sampling seed or simulation seed gives different ones.
    tle::Request seeded(input, 8);
    seeded.setSamplingConfig(tle::SamplingConfig(
        1, std::nullopt, std::nullopt, std::nullopt, std::nullopt, std::nullopt, tle::RandomSeedType{42}));
    CHECK(generateOnce(*executor, seeded) != generated);
    EngineSpec reseeded;
    reseeded.sim = simulation(2, std::nullopt);
    reseeded.sim.seed = 9;
    auto third = makeExecutor(reseeded);
    CHECK(generateOnce(*third, tle::Request(input, 8)) != generated);
    // clientId is echoed.
    tle::Request withClient(input, 2);
    withClient.setClientId(777);
    auto const id = executor->enqueueRequest(withClient);
    auto responses = collect(*executor, {id})[id];
    REQUIRE(responses.size() == 1);
    CHECK(responses[0].getClientId() == std::optional<tle::IdType>(777));
}

void testStreamingDeltaAndCumulative()
{
    auto executor = makeExecutor();
    auto const input = prompt(12, 7);
    auto const reference = generateOnce(*executor, tle::Request(input, 6));

    auto const id = executor->enqueueRequest(tle::Request(input, 6, true));
    auto const responses = collect(*executor, {id})[id];
    REQUIRE(responses.size() == 6);
    tle::VecTokens streamed;
    for (std::size_t i = 0; i < responses.size(); ++i)
    {
        auto const& result = responses[i].getResult();
        CHECK_EQ(result.outputTokenIds.at(0).size(), std::size_t{1});
        streamed.insert(streamed.end(), result.outputTokenIds.at(0).begin(), result.outputTokenIds.at(0).end());
        bool const last = i + 1 == responses.size();
        CHECK_EQ(result.isFinal, last);
        CHECK(result.finishReasons.at(0) == (last ? tle::FinishReason::kLENGTH : tle::FinishReason::kNOT_FINISHED));
        CHECK_EQ(result.decodingIter, static_cast<int>(i + 1));
    }
    CHECK(streamed == reference);

    tle::Request cumulative(input, 6, true);
    cumulative.setReturnAllGeneratedTokens(true);
    auto const cumulativeId = executor->enqueueRequest(cumulative);
    auto const all = collect(*executor, {cumulativeId})[cumulativeId];
    REQUIRE(all.size() == 6);
    for (std::size_t i = 0; i < all.size(); ++i)
    {
        CHECK(all[i].getResult().outputTokenIds.at(0)
              == tle::VecTokens(reference.begin(), reference.begin() + static_cast<std::ptrdiff_t>(i + 1)));
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Finish reasons and sampling controls

/// The first position >= `from` whose token does not occur earlier in `tokens`.
std::size_t firstFreshPosition(tle::VecTokens const& tokens, std::size_t from)
{
    for (std::size_t i = from; i < tokens.size(); ++i)
    {
        if (std::find(tokens.begin(), tokens.begin() + static_cast<std::ptrdiff_t>(i), tokens[i])
            == tokens.begin() + static_cast<std::ptrdiff_t>(i))
        {
            return i;
        }
    }
    return tokens.size();
}

void testEndIdStopsWithoutTheEndToken()
{
    auto executor = makeExecutor();
    auto const input = prompt(8, 3);
    auto const reference = generateOnce(*executor, tle::Request(input, 20));
    std::size_t const k = firstFreshPosition(reference, 3);
    REQUIRE(k < reference.size());

    tle::Request request(input, 20);
    request.setEndId(reference[k]);
    tle::OutputConfig output;
    output.excludeInputFromOutput = true;
    request.setOutputConfig(output);
    auto const result = finalResult(*executor, executor->enqueueRequest(request));
    CHECK(result.outputTokenIds.at(0)
          == tle::VecTokens(reference.begin(), reference.begin() + static_cast<std::ptrdiff_t>(k)));
    CHECK(result.finishReasons.at(0) == tle::FinishReason::kEND_ID);

    // minTokens beyond that position: the end token is never produced before minTokens tokens.
    tle::Request atLeast(input, 20);
    atLeast.setEndId(reference[k]);
    atLeast.setOutputConfig(output);
    tle::SamplingConfig sampling;
    sampling.setMinTokens(static_cast<int>(k) + 3);
    atLeast.setSamplingConfig(sampling);
    auto const longer = finalResult(*executor, executor->enqueueRequest(atLeast));
    auto const& tokens = longer.outputTokenIds.at(0);
    CHECK(tokens.size() >= k + 3);
    CHECK(std::find(tokens.begin(), tokens.begin() + static_cast<std::ptrdiff_t>(std::min(tokens.size(), k + 3)),
              reference[k])
          == tokens.begin() + static_cast<std::ptrdiff_t>(std::min(tokens.size(), k + 3)));

    // endId -1 never stops early.
    tle::Request never(input, 20);
    never.setEndId(-1);
    CHECK_EQ(generateOnce(*executor, never).size(), std::size_t{20});
}

void testStopWordsIncludeTheStopTokens()
{
    auto executor = makeExecutor();
    auto const input = prompt(8, 40);
    auto const reference = generateOnce(*executor, tle::Request(input, 20));
    std::size_t const k = firstFreshPosition(reference, 4);
    REQUIRE(k < reference.size());
    tle::Request request(input, 20);
    request.setStopWords({{7777}, {reference[k - 1], reference[k]}});
    tle::OutputConfig output;
    output.excludeInputFromOutput = true;
    request.setOutputConfig(output);
    auto const result = finalResult(*executor, executor->enqueueRequest(request));
    auto const& tokens = result.outputTokenIds.at(0);
    CHECK(tokens.size() <= k + 1);
    CHECK(tokens.size() >= 2 && tokens[tokens.size() - 2] == reference[k - 1] && tokens.back() == reference[k]);
    CHECK(result.finishReasons.at(0) == tle::FinishReason::kSTOP_WORDS);
}

void testBadWordsAreNeverEmitted()
{
    auto executor = makeExecutor();
    auto const input = prompt(8, 60);
    auto const reference = generateOnce(*executor, tle::Request(input, 20));
    tle::Request request(input, 20);
    request.setBadWords({{reference[0]}, {reference[3]}});
    auto const tokens = generateOnce(*executor, request);
    CHECK_EQ(tokens.size(), std::size_t{20});
    CHECK(std::find(tokens.begin(), tokens.end(), reference[0]) == tokens.end());
    CHECK(std::find(tokens.begin(), tokens.end(), reference[3]) == tokens.end());
}

void testMaxTokensIsClampedToMaxSeqLen()
{
    EngineSpec spec;
    spec.maxInputLen = 32;
    spec.maxSeqLen = 40;
    auto executor = makeExecutor(spec);
    auto const tokens = generateOnce(*executor, tle::Request(prompt(30), 100));
    CHECK_EQ(tokens.size(), std::size_t{10});
}

void testCancelEndsWithZeroTokens()
{
    EngineSpec spec;
    spec.maxBatchSize = 1;
    auto executor = makeExecutor(spec);
    auto const running = executor->enqueueRequest(tle::Request(prompt(8), 400, true));
    tle::OutputConfig exclude;
    exclude.excludeInputFromOutput = true;
    tle::Request queuedRequest(prompt(8), 400);
    queuedRequest.setOutputConfig(exclude);
    auto const queued = executor->enqueueRequest(queuedRequest);

    // Wait for the first streamed token, then cancel both (one active, one still queued).
    auto first = executor->awaitResponses(running, 2000ms);
    REQUIRE(!first.empty() && !first[0].hasError());
    executor->cancelRequest(running);
    executor->cancelRequest(queued);
    auto responses = collect(*executor, {running, queued});
    auto const& runningFinal = lastOf(responses[running]).getResult();
    CHECK(runningFinal.isFinal);
    CHECK(runningFinal.outputTokenIds.at(0).empty());
    CHECK(runningFinal.finishReasons.at(0) == tle::FinishReason::kCANCELLED);
    CHECK(responses[running].size() < 100);
    REQUIRE(responses[queued].size() == 1);
    auto const& queuedFinal = responses[queued][0].getResult();
    CHECK(queuedFinal.isFinal && queuedFinal.outputTokenIds.at(0).empty());
    CHECK(queuedFinal.finishReasons.at(0) == tle::FinishReason::kCANCELLED);
    // The statistics show the executor idle again, without waiting for another request.
    std::this_thread::sleep_for(10ms);
    auto const stats = executor->getLatestIterationStats();
    REQUIRE(!stats.empty());
    CHECK_EQ(stats.back().numActiveRequests, 0);
    CHECK_EQ(stats.back().numQueuedRequests, 0);
    CHECK_EQ(stats.back().numCompletedRequests, 1);

    // Cancelling drops what was generated: a cumulative stream ends with an empty final, not the tokens so far.
    auto other = makeExecutor();
    tle::Request cumulative(prompt(8), 400, true);
    cumulative.setReturnAllGeneratedTokens(true);
    auto const cumulativeId = other->enqueueRequest(cumulative);
    auto const firstTwo = other->awaitResponses(cumulativeId, 2000ms);
    REQUIRE(!firstTwo.empty() && !firstTwo[0].getResult().outputTokenIds.at(0).empty());
    other->cancelRequest(cumulativeId);
    auto const cumulativeFinal = lastOf(collect(*other, {cumulativeId})[cumulativeId]).getResult();
    CHECK(cumulativeFinal.finishReasons.at(0) == tle::FinishReason::kCANCELLED);
    CHECK(cumulativeFinal.outputTokenIds.at(0).empty());

    // Cancelling a finished or never-issued id is a no-op.
    executor->cancelRequest(running);
    executor->cancelRequest(999999);
    std::this_thread::sleep_for(20ms);
    CHECK(executor->awaitResponses(20ms).empty());
    CHECK(executor->canEnqueueRequests());
}

void testAllottedTimeEndsWithTimedOut()
{
    EngineSpec spec;
    spec.maxBatchSize = 1;
    auto executor = makeExecutor(spec);
    auto const start = Clock::now();
    tle::Request slow(prompt(8), 1000, true);
    slow.setAllottedTimeMs(std::chrono::milliseconds(250));
    auto const active = executor->enqueueRequest(slow);
    // With the only slot busy, this one times out while still queued, long before the active one.
    tle::Request waiting(prompt(8), 5);
    waiting.setAllottedTimeMs(std::chrono::milliseconds(20));
    auto const queued = executor->enqueueRequest(waiting);
    ResponsesById responses;
    std::map<tle::IdType, Clock::duration> finalAfter;
    while (finalAfter.size() < 2 && Clock::now() - start < 5s)
    {
        for (auto& response : executor->awaitResponses(5ms))
        {
            if (isTerminal(response))
            {
                finalAfter[response.getRequestId()] = Clock::now() - start;
            }
            responses[response.getRequestId()].push_back(std::move(response));
        }
    }
    REQUIRE(finalAfter.size() == 2);
    CHECK(finalAfter[queued] >= 20ms);
    CHECK(finalAfter[queued] < 200ms);
    CHECK(finalAfter[active] >= 250ms);
    auto const& activeFinal = lastOf(responses[active]).getResult();
    CHECK(activeFinal.isFinal);
    CHECK(activeFinal.outputTokenIds.at(0).empty());
    CHECK(activeFinal.finishReasons.at(0) == tle::FinishReason::kTIMED_OUT);
    CHECK(responses[active].size() > 10);
    CHECK(responses[active].size() < 1000);
    REQUIRE(responses[queued].size() == 1);
    auto const& queuedFinal = responses[queued][0].getResult();
    CHECK(queuedFinal.finishReasons.at(0) == tle::FinishReason::kTIMED_OUT);
    // Non-streaming: the prompt only, no generated tokens.
    CHECK(queuedFinal.outputTokenIds.at(0) == prompt(8));
}

// ---------------------------------------------------------------------------------------------------------------
// Validation and errors

std::string errorOf(tle::Executor& executor, tle::Request const& request)
{
    auto const id = executor.enqueueRequest(request);
    auto responses = collect(executor, {id})[id];
    REQUIRE(responses.size() == 1);
    REQUIRE(responses[0].hasError());
    bool threw = false;
    try
    {
        (void)responses[0].getResult();
    }
    catch (std::exception const&)
    {
        threw = true;
    }
    CHECK(threw);
    return responses[0].getErrorMsg();
}

void testInvalidRequestsGetErrorResponses()
{
    EngineSpec spec;
    spec.maxInputLen = 16;
    spec.maxSeqLen = 64;
    spec.vocabSize = 100;
    auto executor = makeExecutor(spec);
    std::string const prefix = "Encountered an error when fetching new request: ";

    auto const tooLong = errorOf(*executor, tle::Request(prompt(20), 4));
    CHECK_EQ(tooLong,
        prefix
            + "Prompt length (20) exceeds maximum input length (16). Set log level to info and check TRTGptModel logs "
              "for how maximum input length is set");
    CHECK(contains(errorOf(*executor, tle::Request({}, 4)), prefix));
    tle::Request badEnd(prompt(4), 4);
    badEnd.setEndId(100);
    CHECK_EQ(errorOf(*executor, badEnd), prefix + "EndId (100) is not within acceptable range [-1, 100).");
    CHECK(contains(errorOf(*executor, tle::Request({1, 2, 100}, 4)), "Token id (100) at prompt position 2"));
    CHECK(contains(errorOf(*executor, tle::Request({1, -5}, 4)), "Token id (-5)"));
    CHECK(contains(errorOf(*executor, tle::Request(prompt(4), 0)), "maxTokens (0) must be greater than 0"));
    tle::Request beams(prompt(4), 4);
    beams.setSamplingConfig(tle::SamplingConfig(2));
    CHECK(contains(errorOf(*executor, beams), "beam width (2) exceeds the maximum beam width (1)"));
    tle::Request logits(prompt(4), 4);
    logits.setOutputConfig(tle::OutputConfig(false, false, true));
    CHECK(contains(errorOf(*executor, logits), "gather_generation_logits"));

    // The executor keeps serving after rejections.
    CHECK_EQ(generateOnce(*executor, tle::Request(prompt(4), 3)).size(), std::size_t{3});

    // Configuration errors throw at construction.
    tle::ExecutorConfig wideBeams;
    wideBeams.setMaxBeamWidth(4);
    CHECK(throwsWith([&]() { makeExecutor(spec, wideBeams); }, "max_beam_width"));
    tle::ExecutorConfig staticBatching;
    staticBatching.setBatchingType(tle::BatchingType::kSTATIC);
    CHECK(throwsWith([&]() { makeExecutor(spec, staticBatching); }, "kSTATIC"));
    CHECK(throwsWith([]() { tle::SamplingConfig(0); }, "beamWidth"));
    CHECK(throwsWith([]() { tle::Response(1, std::string()); }, "Error message should not be empty"));
    CHECK(throwsWith([]() { (void)tle::Response(1, tle::Result{}).getErrorMsg(); }, "without error"));
}

void testPromptOverMaxNumTokensWithoutChunking()
{
    EngineSpec spec;
    spec.maxNumTokens = 64;
    tle::ExecutorConfig config;
    config.setEnableChunkedContext(false);
    auto executor = makeExecutor(spec, config);
    CHECK(contains(errorOf(*executor, tle::Request(prompt(100), 4)), "maximum number of tokens per iteration (64)"));
    // The engine lacking paged context FMHA turns chunking off silently, with the same effect.
    spec.pagedContextFmha = false;
    auto noFmha = makeExecutor(spec);
    CHECK(contains(errorOf(*noFmha, tle::Request(prompt(100), 4)), "chunked context is disabled"));
}

// ---------------------------------------------------------------------------------------------------------------
// Multiple sequences, log-probs, perf metrics

void testNumReturnSequences()
{
    auto executor = makeExecutor();
    tle::Request request(prompt(6), 5);
    tle::SamplingConfig sampling;
    sampling.setNumReturnSequences(3);
    request.setSamplingConfig(sampling);
    tle::OutputConfig output;
    output.excludeInputFromOutput = true;
    request.setOutputConfig(output);
    auto const id = executor->enqueueRequest(request);
    // Children take ids too, as in TensorRT-LLM.
    CHECK_EQ(executor->enqueueRequest(tle::Request(prompt(2), 1)), id + 3);
    auto responses = collect(*executor, {id, id + 3})[id];
    REQUIRE(responses.size() == 3);
    std::set<int> indices;
    std::set<tle::VecTokens> distinct;
    int finals = 0;
    for (std::size_t i = 0; i < responses.size(); ++i)
    {
        auto const& result = responses[i].getResult();
        CHECK_EQ(responses[i].getRequestId(), id);
        CHECK(result.isSequenceFinal);
        indices.insert(result.sequenceIndex);
        distinct.insert(result.outputTokenIds.at(0));
        CHECK_EQ(result.outputTokenIds.at(0).size(), std::size_t{5});
        finals += result.isFinal ? 1 : 0;
        CHECK_EQ(result.isFinal, i + 1 == responses.size());
    }
    CHECK_EQ(finals, 1);
    CHECK(indices == (std::set<int>{0, 1, 2}));
    CHECK_EQ(distinct.size(), std::size_t{3});
}

void testLogProbs()
{
    auto executor = makeExecutor();
    tle::Request request(prompt(6), 7);
    request.setOutputConfig(tle::OutputConfig(true));
    auto const result = finalResult(*executor, executor->enqueueRequest(request));
    REQUIRE(result.logProbs.has_value() && result.cumLogProbs.has_value());
    auto const& values = result.logProbs->at(0);
    CHECK_EQ(values.size(), std::size_t{7});
    CHECK(std::all_of(values.begin(), values.end(), [](float v) { return v <= 0.f; }));
    float const sum = std::accumulate(values.begin(), values.end(), 0.f);
    CHECK(std::abs(result.cumLogProbs->at(0) - sum) < 1e-4f);
}

void testPerfMetricsUseSteadyClockAtDequeue()
{
    auto executor = makeExecutor();
    tle::OutputConfig output;
    output.returnPerfMetrics = true;
    tle::Request request(prompt(20), 4, true);
    request.setOutputConfig(output);
    auto const beforeEnqueue = Clock::now();
    auto const id = executor->enqueueRequest(request);
    auto responses = collect(*executor, {id})[id];
    REQUIRE(responses.size() == 4);
    for (auto const& response : responses)
    {
        CHECK(response.getResult().requestPerfMetrics.has_value());
    }
    auto const metrics = *responses.back().getResult().requestPerfMetrics;
    auto const& t = metrics.timingMetrics;
    CHECK(t.arrivalTime >= beforeEnqueue);
    CHECK(t.firstScheduledTime >= t.arrivalTime);
    CHECK(t.firstTokenTime > t.firstScheduledTime);
    CHECK(t.lastTokenTime > t.firstTokenTime);
    CHECK(t.lastTokenTime <= Clock::now());
    // Four tokens, one iteration each at 2 ms. Iterations end at absolute deadlines (a late wake-up delays one
    // step, the next catches up), so the last token comes no earlier than four iterations after the first
    // scheduling, however late the first token was.
    CHECK(t.lastTokenTime - t.firstScheduledTime >= 8ms);
    REQUIRE(metrics.firstIter && metrics.lastIter && metrics.iter);
    CHECK_EQ(*metrics.lastIter - *metrics.firstIter, tle::IterationType{3});
    CHECK_EQ(*metrics.iter, *metrics.lastIter);
    CHECK_EQ(metrics.kvCacheMetrics.numTotalAllocatedBlocks, 2); // 20 + 4 tokens in blocks of 16
    CHECK_EQ(metrics.kvCacheMetrics.numMissedBlocks, 2);
    // The first streamed Result already carries the first-token stamp; the last stamp comes with the final.
    auto const firstMetrics = *responses.front().getResult().requestPerfMetrics;
    CHECK(firstMetrics.timingMetrics.firstTokenTime == t.firstTokenTime);
    CHECK(!firstMetrics.lastIter.has_value());
}

// ---------------------------------------------------------------------------------------------------------------
// Queue limit, shutdown, per-id await

void testMaxQueueSizeThrows()
{
    EngineSpec spec;
    spec.maxBatchSize = 1;
    tle::ExecutorConfig config;
    config.setMaxQueueSize(2);
    auto executor = makeExecutor(spec, config);
    std::vector<tle::Request> three(3, tle::Request(prompt(4), 2));
    CHECK(throwsWith([&]() { (void)executor->enqueueRequests(three); },
        "Maximum queue size of 2 has been reached, please try again later"));

    // One active request (the only batch slot) plus two queued fill the queue; a third queued one overflows.
    auto const running = executor->enqueueRequest(tle::Request(prompt(4), 400, true));
    REQUIRE(!executor->awaitResponses(running, 2000ms).empty());
    auto const queued = executor->enqueueRequests({tle::Request(prompt(4), 2), tle::Request(prompt(4), 2)});
    CHECK(throwsWith([&]() { (void)executor->enqueueRequest(tle::Request(prompt(4), 2)); },
        "Maximum queue size of 2 has been reached, please try again later"));
    executor->cancelRequest(running);
    auto const responses = collect(*executor, {running, queued[0], queued[1]});
    CHECK_EQ(responses.size(), std::size_t{3});
}

void testShutdownDrainsAndThenEverythingThrows()
{
    auto executor = makeExecutor();
    auto const start = Clock::now();
    auto const id = executor->enqueueRequest(tle::Request(prompt(4), 25));
    (void)id;
    executor->shutdown();
    // It waited for the in-flight request: 25 iterations of 2 ms.
    CHECK(Clock::now() - start >= 40ms);
    CHECK(!executor->canEnqueueRequests());
    CHECK(executor->isParticipant());
    executor->shutdown(); // idempotent
    CHECK(throwsWith([&]() { (void)executor->enqueueRequest(tle::Request(prompt(4), 2)); }, "Shutdown called"));
    CHECK(throwsWith([&]() { (void)executor->enqueueRequests({tle::Request(prompt(4), 2)}); }, "Shutdown called"));
    CHECK(throwsWith([&]() { (void)executor->awaitResponses(1ms); }, "Shutdown called"));
    CHECK(throwsWith([&]() { (void)executor->awaitResponses(tle::IdType{1}, 1ms); }, "Shutdown called"));
    CHECK(throwsWith([&]() { (void)executor->getNumResponsesReady(); }, "Shutdown called"));
    CHECK(throwsWith([&]() { executor->cancelRequest(1); }, "Shutdown called"));
    CHECK(throwsWith([&]() { (void)executor->getLatestIterationStats(); }, "Shutdown called"));
    CHECK(throwsWith([&]() { (void)executor->getLatestRequestStats(); }, "Shutdown called"));

    // The destructor shuts down an executor with work in flight without hanging.
    auto busy = makeExecutor();
    (void)busy->enqueueRequest(tle::Request(prompt(4), 5));
    busy.reset();
}

void testPerIdAwaitAndResponseCounts()
{
    auto executor = makeExecutor();
    auto const id = executor->enqueueRequest(tle::Request(prompt(4), 3, true));
    auto const deadline = Clock::now() + 2s;
    while (executor->getNumResponsesReady(id) < 3 && Clock::now() < deadline)
    {
        std::this_thread::sleep_for(2ms);
    }
    CHECK_EQ(executor->getNumResponsesReady(id), 3);
    CHECK_EQ(executor->getNumResponsesReady(id + 1), 0);
    CHECK_EQ(executor->getNumResponsesReady(), 3);
    auto const responses = executor->awaitResponses(id, 100ms);
    CHECK_EQ(responses.size(), std::size_t{3});
    auto const again = executor->awaitResponses(id, 100ms);
    REQUIRE(again.size() == 1);
    CHECK(again[0].hasError());
    CHECK_EQ(again[0].getErrorMsg(), "ReqId " + std::to_string(id) + " has already been processed and was terminated.");
    // An id that is not finished yet simply times out empty.
    CHECK(executor->awaitResponses(id + 100, 10ms).empty());
}

// ---------------------------------------------------------------------------------------------------------------
// Memory per request

void testTerminatedIdsStayBounded()
{
    // Ids end out of order, but only within the window of requests in flight: the set keeps one run per gap.
    tle::sim::IdIntervalSet set;
    std::mt19937 random(7);
    std::size_t const window = 64;
    std::size_t mostRuns = 0;
    for (std::uint64_t base = 1; base <= 100000; base += window)
    {
        std::vector<std::uint64_t> ids(window);
        std::iota(ids.begin(), ids.end(), base);
        std::shuffle(ids.begin(), ids.end(), random);
        for (auto id : ids)
        {
            set.insert(id, id);
            mostRuns = std::max(mostRuns, set.runs());
        }
    }
    CHECK(mostRuns <= window / 2 + 1);
    CHECK_EQ(set.runs(), std::size_t{1});
    CHECK(set.contains(1) && set.contains(100032) && !set.contains(100033) && !set.contains(0));
    set.insert(100040, 100041);
    CHECK_EQ(set.runs(), std::size_t{2});
    set.insert(100033, 100039); // fills the gap exactly
    CHECK_EQ(set.runs(), std::size_t{1});

    // Through the executor: a request with children ends them with it, so no id is left behind as a gap, and a
    // finished id still gets TensorRT-LLM's answer however many requests followed it.
    auto executor = makeExecutor();
    tle::Request pair(prompt(3), 2);
    tle::SamplingConfig sampling;
    sampling.setNumReturnSequences(2);
    pair.setSamplingConfig(sampling);
    std::vector<tle::IdType> ids;
    for (int i = 0; i < 200; ++i)
    {
        ids.push_back(executor->enqueueRequest(i % 2 == 0 ? pair : tle::Request(prompt(3), 2)));
    }
    collect(*executor, ids);
    for (tle::IdType const id : {ids.front(), ids.front() + 1, ids.back()})
    {
        auto const again = executor->awaitResponses(id, 100ms);
        REQUIRE(again.size() == 1);
        CHECK_EQ(again[0].getErrorMsg(),
            "ReqId " + std::to_string(id) + " has already been processed and was terminated.");
    }
    // An id not handed out yet is unknown: it waits and times out empty.
    CHECK(executor->awaitResponses(ids.back() + 5, 10ms).empty());
}

// ---------------------------------------------------------------------------------------------------------------
// Statistics

bool looksLikeTimestamp(std::string const& text)
{
    // "%m-%d-%Y %H:%M:%S.uuuuuu"
    if (text.size() != 26)
    {
        return false;
    }
    std::string const shape = "dd-dd-dddd dd:dd:dd.dddddd";
    for (std::size_t i = 0; i < shape.size(); ++i)
    {
        bool const digit = text[i] >= '0' && text[i] <= '9';
        if ((shape[i] == 'd') != digit || (shape[i] != 'd' && shape[i] != text[i]))
        {
            return false;
        }
    }
    return true;
}

void testIterationStats()
{
    tle::ExecutorConfig config;
    config.setIterStatsMaxIterations(4);
    auto executor = makeExecutor(EngineSpec{}, config);
    auto const id = executor->enqueueRequest(tle::Request(prompt(20), 5));
    (void)finalResult(*executor, id);
    std::this_thread::sleep_for(10ms);
    auto allStats = executor->getLatestIterationStats();
    // Five iterations ran (prompt + first token, then four tokens) and one more entry shows the executor idle;
    // only the latest four entries are kept.
    REQUIRE(allStats.size() == 4);
    CHECK(executor->getLatestIterationStats().empty());
    auto const idle = allStats.back();
    allStats.pop_back();
    auto const& stats = allStats;
    for (std::size_t i = 0; i < stats.size(); ++i)
    {
        auto const& s = stats[i];
        CHECK_EQ(s.iter, tle::IterationType{2 + i});
        CHECK(looksLikeTimestamp(s.timestamp));
        CHECK(s.iterLatencyMS >= 1.5);
        CHECK_EQ(s.numActiveRequests, 1);
        CHECK_EQ(s.numQueuedRequests, 0);
        CHECK_EQ(s.maxNumActiveRequests, 8);
        CHECK_EQ(s.maxBatchSizeStatic, 8);
        CHECK_EQ(s.maxNumTokensRuntime, 1024);
        CHECK(s.gpuMemUsage > 0);
        REQUIRE(s.kvCacheStats && s.inflightBatchingStats);
        CHECK_EQ(s.kvCacheStats->maxNumBlocks, 65536 / 16);
        CHECK_EQ(s.kvCacheStats->tokensPerBlock, 16);
        CHECK_EQ(s.kvCacheStats->reusedBlocks, 0);
        CHECK_EQ(s.inflightBatchingStats->numGenRequests, 1);
        CHECK_EQ(s.inflightBatchingStats->numContextRequests, 0);
        CHECK(!s.staticBatchingStats.has_value());
    }
    CHECK_EQ(stats.back().numCompletedRequests, 1);
    CHECK_EQ(stats.back().kvCacheStats->usedNumBlocks, 0);
    CHECK_EQ(stats.back().kvCacheStats->allocTotalBlocks, 2);
    CHECK_EQ(stats.front().kvCacheStats->usedNumBlocks + stats.front().kvCacheStats->freeNumBlocks, 65536 / 16);
    // The idle entry: nothing active or scheduled, numbered like the next iteration.
    CHECK_EQ(idle.iter, tle::IterationType{5});
    CHECK_EQ(idle.numActiveRequests, 0);
    CHECK_EQ(idle.numCompletedRequests, 0);
    REQUIRE(idle.inflightBatchingStats && idle.kvCacheStats);
    CHECK_EQ(idle.inflightBatchingStats->numScheduledRequests, 0);
    CHECK_EQ(idle.kvCacheStats->freeNumBlocks, 65536 / 16);

    // The first iteration of a request: it is new, its prompt is the context work, and its queue time counts.
    // (Prompts unlike the first request's: a cached prefix would be reused instead of computed.)
    auto const second
        = executor->enqueueRequests({tle::Request(prompt(20, 500), 2), tle::Request(prompt(10, 700), 2)});
    (void)collect(*executor, second);
    std::this_thread::sleep_for(10ms);
    auto const more = executor->getLatestIterationStats();
    REQUIRE(more.size() == 3);
    auto const& first = more.front();
    CHECK_EQ(first.numNewActiveRequests, 2);
    CHECK(first.newActiveRequestsQueueLatencyMS >= 0.0);
    CHECK_EQ(first.inflightBatchingStats->numContextRequests, 2);
    CHECK_EQ(first.inflightBatchingStats->numCtxTokens, 30);
    CHECK_EQ(first.inflightBatchingStats->numScheduledRequests, 2);
    CHECK_EQ(more[1].numCompletedRequests, 2);
    CHECK_EQ(more.back().numActiveRequests, 0);
    // Request stats are off by default.
    CHECK(executor->getLatestRequestStats().empty());
}

void testRequestStatsWhenEnabled()
{
    EngineSpec spec;
    spec.maxBatchSize = 1;
    tle::ExecutorConfig config;
    config.setRequestStatsMaxIterations(100);
    auto executor = makeExecutor(spec, config);
    auto const ids = executor->enqueueRequests({tle::Request(prompt(8), 3), tle::Request(prompt(8), 2)});
    (void)collect(*executor, ids);
    std::this_thread::sleep_for(10ms);
    auto const stats = executor->getLatestRequestStats();
    // Three iterations, an idle entry (the second request is still queued), two iterations, an idle entry.
    REQUIRE(stats.size() == 7);
    CHECK(stats.back().requestStats.empty());
    REQUIRE(stats[3].requestStats.size() == 1);
    CHECK(stats[3].requestStats[0].stage == tle::RequestStage::kQUEUED);
    auto const find = [](tle::RequestStatsPerIteration const& it, tle::IdType id) -> tle::RequestStats const*
    {
        for (auto const& s : it.requestStats)
        {
            if (s.id == id)
            {
                return &s;
            }
        }
        return nullptr;
    };
    auto const* firstQueued = find(stats[0], ids[1]);
    REQUIRE(firstQueued);
    CHECK(firstQueued->stage == tle::RequestStage::kQUEUED);
    auto const* firstActive = find(stats[0], ids[0]);
    REQUIRE(firstActive);
    CHECK(firstActive->stage == tle::RequestStage::kGENERATION_IN_PROGRESS);
    CHECK(firstActive->scheduled);
    CHECK_EQ(firstActive->contextPrefillPosition, 8);
    auto const* done = find(stats[2], ids[0]);
    REQUIRE(done);
    CHECK(done->stage == tle::RequestStage::kGENERATION_COMPLETE);
    CHECK_EQ(done->numGeneratedTokens, 3);
}

// ---------------------------------------------------------------------------------------------------------------
// Scheduling

std::vector<tle::IdType> finalOrder(tle::Executor& executor, std::vector<tle::IdType> const& ids)
{
    std::vector<tle::IdType> order;
    std::set<tle::IdType> pending(ids.begin(), ids.end());
    auto const deadline = Clock::now() + 5s;
    while (!pending.empty() && Clock::now() < deadline)
    {
        for (auto const& response : executor.awaitResponses(20ms))
        {
            if (isTerminal(response))
            {
                order.push_back(response.getRequestId());
                pending.erase(response.getRequestId());
            }
        }
    }
    return order;
}

void testPriorityOrderWithinTheQueue()
{
    EngineSpec spec;
    spec.maxBatchSize = 1;
    auto executor = makeExecutor(spec);
    tle::Request low(prompt(4), 3);
    low.setPriority(0.2f);
    tle::Request high(prompt(4), 3);
    high.setPriority(0.9f);
    tle::Request normal(prompt(4), 3);
    tle::Request normal2(prompt(5), 3);
    auto const ids = executor->enqueueRequests({low, normal, high, normal2});
    // Higher priority first; equal priorities first come first served.
    CHECK(finalOrder(*executor, ids) == (std::vector<tle::IdType>{ids[2], ids[1], ids[3], ids[0]}));
}

void testBatchSizeAndTokenBudget()
{
    EngineSpec spec;
    spec.maxNumTokens = 32;
    tle::ExecutorConfig config;
    config.setMaxBatchSize(2);
    auto executor = makeExecutor(spec, config);
    // A 100-token prompt in a 32-token budget: chunks of 32, 32, 32, 4 (first token with the last chunk).
    auto const id = executor->enqueueRequest(tle::Request(prompt(100), 2));
    auto const result = finalResult(*executor, id);
    CHECK_EQ(result.outputTokenIds.at(0).size(), std::size_t{102});
    std::this_thread::sleep_for(10ms);
    auto stats = executor->getLatestIterationStats();
    REQUIRE(stats.size() == 6);
    std::vector<int> chunks;
    for (auto const& s : stats)
    {
        chunks.push_back(s.inflightBatchingStats->numCtxTokens);
    }
    // The last entry is the idle one.
    CHECK(chunks == (std::vector<int>{32, 32, 32, 4, 0, 0}));

    // Four requests with at most two active: never more than two scheduled, two waiting in the queue.
    std::vector<tle::Request> four(4, tle::Request(prompt(8), 4));
    auto const ids = executor->enqueueRequests(four);
    (void)collect(*executor, ids);
    std::this_thread::sleep_for(10ms);
    stats = executor->getLatestIterationStats();
    int maxActive = 0;
    int maxQueued = 0;
    for (auto const& s : stats)
    {
        maxActive = std::max(maxActive, s.numActiveRequests);
        maxQueued = std::max(maxQueued, s.numQueuedRequests);
        CHECK(s.inflightBatchingStats->numScheduledRequests <= 2);
        CHECK(s.inflightBatchingStats->numCtxTokens + s.inflightBatchingStats->numGenRequests <= 32);
    }
    CHECK_EQ(maxActive, 2);
    CHECK_EQ(maxQueued, 2);
    CHECK_EQ(stats.front().maxBatchSizeRuntime, 2);
    CHECK_EQ(stats.front().maxNumTokensRuntime, 32);
}

void testContextChunkingPolicies()
{
    EngineSpec spec;
    spec.maxNumTokens = 32;
    for (auto const policy :
        {tle::ContextChunkingPolicy::kFIRST_COME_FIRST_SERVED, tle::ContextChunkingPolicy::kEQUAL_PROGRESS})
    {
        tle::ExecutorConfig config;
        config.setSchedulerConfig(tle::SchedulerConfig(tle::CapacitySchedulerPolicy::kGUARANTEED_NO_EVICT, policy));
        auto executor = makeExecutor(spec, config);
        // Different prompts: the second must not reuse the first one's cached blocks.
        auto const ids
            = executor->enqueueRequests({tle::Request(prompt(64, 1), 1), tle::Request(prompt(64, 101), 1)});
        auto const responses = collect(*executor, ids);
        CHECK_EQ(responses.size(), std::size_t{2});
        std::this_thread::sleep_for(10ms);
        auto const stats = executor->getLatestIterationStats();
        // 128 prompt tokens through a 32-token budget take four iterations either way (then the idle entry)...
        REQUIRE(stats.size() == 5);
        for (std::size_t i = 0; i < 4; ++i)
        {
            CHECK_EQ(stats[i].inflightBatchingStats->numCtxTokens, 32);
        }
        // ...but first-come-first-served finishes one prompt before starting the other, while equal progress
        // advances both together.
        bool const equal = policy == tle::ContextChunkingPolicy::kEQUAL_PROGRESS;
        CHECK_EQ(stats[0].inflightBatchingStats->numContextRequests, equal ? 2 : 1);
    }
}

void testBeamSearchReturnsEveryBeam()
{
    EngineSpec spec;
    spec.maxBeamWidth = 2;
    tle::ExecutorConfig config;
    config.setMaxBeamWidth(2);
    auto executor = makeExecutor(spec, config);
    tle::Request request(prompt(6), 4);
    request.setSamplingConfig(tle::SamplingConfig(2));
    auto const result = finalResult(*executor, executor->enqueueRequest(request));
    REQUIRE(result.outputTokenIds.size() == 2);
    CHECK_EQ(result.outputTokenIds[0].size(), std::size_t{10});
    CHECK_EQ(result.outputTokenIds[1].size(), std::size_t{10});
    CHECK(result.outputTokenIds[0] != result.outputTokenIds[1]);
    CHECK(result.finishReasons
          == (std::vector<tle::FinishReason>{tle::FinishReason::kLENGTH, tle::FinishReason::kLENGTH}));

    // Streaming beam search returns whole beams each time, as TensorRT-LLM forces returnAllGeneratedTokens.
    tle::Request streaming(prompt(6), 3, true);
    streaming.setSamplingConfig(tle::SamplingConfig(2));
    auto const id = executor->enqueueRequest(streaming);
    auto const responses = collect(*executor, {id})[id];
    REQUIRE(responses.size() == 3);
    CHECK_EQ(responses[1].getResult().outputTokenIds.at(1).size(), std::size_t{2});
    CHECK_EQ(responses[2].getResult().outputTokenIds.at(0).size(), std::size_t{3});
}

/// An engine with a KV cache of 8 blocks of 16 tokens.
EngineSpec smallCacheEngine()
{
    EngineSpec spec;
    spec.sim = simulation(1, 128);
    return spec;
}

void testGuaranteedNoEvictReservesWholeRequests()
{
    auto executor = makeExecutor(smallCacheEngine());
    // Each request needs 16 + 48 tokens = 4 blocks: only two fit at a time.
    std::vector<tle::Request> three(3, tle::Request(prompt(16), 48));
    auto const ids = executor->enqueueRequests(three);
    auto const responses = collect(*executor, ids);
    for (auto const id : ids)
    {
        REQUIRE(responses.at(id).size() == 1);
        CHECK_EQ(responses.at(id)[0].getResult().outputTokenIds.at(0).size(), std::size_t{64});
    }
    std::this_thread::sleep_for(10ms);
    int maxScheduled = 0;
    for (auto const& s : executor->getLatestIterationStats())
    {
        maxScheduled = std::max(maxScheduled, s.inflightBatchingStats->numScheduledRequests);
        CHECK(s.kvCacheStats->usedNumBlocks <= 8);
        CHECK_EQ(s.inflightBatchingStats->numPausedRequests, 0);
    }
    CHECK_EQ(maxScheduled, 2);
    // A request that can never fit is rejected instead of waiting forever.
    CHECK(contains(errorOf(*executor, tle::Request(prompt(100), 100)), "KV-cache blocks"));
}

void testMaxUtilizationPausesAndStillCompletes()
{
    tle::ExecutorConfig config;
    config.setSchedulerConfig(tle::SchedulerConfig(tle::CapacitySchedulerPolicy::kMAX_UTILIZATION));
    auto executor = makeExecutor(smallCacheEngine(), config);
    auto reference = makeExecutor(smallCacheEngine());
    tle::VecTokens const expected = generateOnce(*reference, tle::Request(prompt(16), 48));

    std::vector<tle::Request> three(3, tle::Request(prompt(16), 48));
    auto const ids = executor->enqueueRequests(three);
    auto const responses = collect(*executor, ids);
    for (auto const id : ids)
    {
        REQUIRE(responses.at(id).size() == 1);
        auto const& result = responses.at(id)[0].getResult();
        CHECK(result.finishReasons.at(0) == tle::FinishReason::kLENGTH);
        // Pausing recomputes, it does not change the tokens.
        CHECK(tle::VecTokens(result.outputTokenIds.at(0).begin() + 16, result.outputTokenIds.at(0).end()) == expected);
    }
    std::this_thread::sleep_for(10ms);
    int maxScheduled = 0;
    int paused = 0;
    for (auto const& s : executor->getLatestIterationStats())
    {
        maxScheduled = std::max(maxScheduled, s.inflightBatchingStats->numScheduledRequests);
        paused += s.inflightBatchingStats->numPausedRequests;
        CHECK(s.kvCacheStats->usedNumBlocks <= 8);
    }
    CHECK_EQ(maxScheduled, 3); // all three start greedily
    CHECK(paused > 0);         // and some are paused when the blocks run out
}

void testStaticBatchWaitsForTheBatchToFinish()
{
    tle::ExecutorConfig config;
    config.setSchedulerConfig(tle::SchedulerConfig(tle::CapacitySchedulerPolicy::kSTATIC_BATCH));
    auto executor = makeExecutor(EngineSpec{}, config);
    auto const first = executor->enqueueRequest(tle::Request(prompt(4), 15, true));
    REQUIRE(!executor->awaitResponses(first, 2000ms).empty());
    auto const second = executor->enqueueRequest(tle::Request(prompt(4), 2, true));
    // The second request's first token can only come after the first request's final Result.
    std::vector<std::pair<tle::IdType, bool>> events;
    auto const deadline = Clock::now() + 3s;
    bool secondDone = false;
    while (!secondDone && Clock::now() < deadline)
    {
        for (auto const& response : executor->awaitResponses(20ms))
        {
            REQUIRE(!response.hasError());
            events.emplace_back(response.getRequestId(), response.getResult().isFinal);
            secondDone = secondDone || (response.getRequestId() == second && response.getResult().isFinal);
        }
    }
    REQUIRE(secondDone);
    auto const firstFinal = std::find(events.begin(), events.end(), std::make_pair(first, true));
    auto const secondFirst
        = std::find_if(events.begin(), events.end(), [&](auto const& e) { return e.first == second; });
    CHECK(firstFinal != events.end());
    CHECK(firstFinal < secondFirst);
}

// ---------------------------------------------------------------------------------------------------------------
// Fault hooks

void testFaultThrowInMethod()
{
    EngineSpec spec;
    spec.sim = simulation(2, std::nullopt);
    spec.sim.faults.throwIn = tle::sim::FaultMethod::kEnqueueRequest;
    spec.sim.faults.throwAfterCalls = 1;
    auto executor = makeExecutor(spec);
    CHECK_EQ(executor->enqueueRequest(tle::Request(prompt(4), 1)), tle::IdType{1});
    CHECK(throwsWith([&]() { (void)executor->enqueueRequest(tle::Request(prompt(4), 1)); }, "Simulated fault"));
    CHECK(throwsWith([&]() { (void)executor->enqueueRequests({tle::Request(prompt(4), 1)}); }, "Simulated fault"));
    // Other methods are unaffected.
    CHECK_EQ(collect(*executor, {1}).size(), std::size_t{1});

    spec.sim = simulation(2, std::nullopt);
    spec.sim.faults.throwIn = tle::sim::FaultMethod::kGetLatestIterationStats;
    spec.sim.faults.throwNonStd = true;
    auto nonStd = makeExecutor(spec);
    bool caughtInt = false;
    try
    {
        (void)nonStd->getLatestIterationStats();
    }
    catch (std::exception const&)
    {
    }
    catch (int)
    {
        caughtInt = true;
    }
    CHECK(caughtInt);

    spec.sim = tle::sim::SimConfig{};
    spec.sim.faults.throwIn = tle::sim::FaultMethod::kConstructor;
    CHECK(throwsWith([&]() { makeExecutor(spec); }, "Simulated fault in constructor"));

    spec.sim = simulation(2, std::nullopt);
    spec.sim.faults.throwIn = tle::sim::FaultMethod::kShutdown;
    auto failingShutdown = makeExecutor(spec);
    CHECK(throwsWith([&]() { failingShutdown->shutdown(); }, "Simulated fault in shutdown"));
    CHECK(failingShutdown->canEnqueueRequests());
    failingShutdown.reset(); // the destructor still shuts down cleanly

    for (auto const fault : {tle::sim::FaultMethod::kAwaitResponses, tle::sim::FaultMethod::kCancelRequest,
             tle::sim::FaultMethod::kGetLatestRequestStats})
    {
        std::string const method = tle::sim::faultMethodName(fault);
        spec.sim = tle::sim::SimConfig{};
        spec.sim.faults.throwIn = fault;
        auto faulty = makeExecutor(spec);
        std::function<void()> call;
        if (method == "awaitResponses")
        {
            call = [&]() { (void)faulty->awaitResponses(1ms); };
        }
        else if (method == "cancelRequest")
        {
            call = [&]() { faulty->cancelRequest(1); };
        }
        else
        {
            call = [&]() { (void)faulty->getLatestRequestStats(); };
        }
        CHECK(throwsWith(call, std::string("Simulated fault in ") + method));
    }
}

void testFaultFailingRequests()
{
    EngineSpec spec;
    spec.sim = simulation(2, std::nullopt);
    spec.sim.faults.failPromptToken = 13;
    auto executor = makeExecutor(spec);
    auto const ids = executor->enqueueRequests({tle::Request({5, 13, 7}, 4), tle::Request({5, 6, 7}, 4)});
    auto responses = collect(*executor, ids);
    REQUIRE(responses[ids[0]].size() == 1);
    CHECK(responses[ids[0]][0].hasError());
    CHECK(contains(responses[ids[0]][0].getErrorMsg(), "Encountered an error in forwardAsync function"));
    REQUIRE(responses[ids[1]].size() == 1);
    CHECK(!responses[ids[1]][0].hasError());

    spec.sim = simulation(2, std::nullopt);
    spec.sim.faults.failAllFromIteration = 3;
    auto failing = makeExecutor(spec);
    auto const streaming = failing->enqueueRequests({tle::Request(prompt(4), 50, true), tle::Request(prompt(5), 50)});
    auto all = collect(*failing, streaming);
    // Iterations 0, 1 and 2 ran and streamed a token each; iteration 3 failed every active request.
    REQUIRE(all[streaming[0]].size() == 4);
    CHECK(lastOf(all[streaming[0]]).hasError());
    REQUIRE(all[streaming[1]].size() == 1);
    CHECK(all[streaming[1]][0].hasError());
    // A later request fails too.
    auto const later = failing->enqueueRequest(tle::Request(prompt(4), 2));
    auto laterResponses = collect(*failing, {later})[later];
    REQUIRE(laterResponses.size() == 1);
    CHECK(laterResponses[0].hasError());
}

void testFaultStall()
{
    EngineSpec spec;
    spec.sim = simulation(2, std::nullopt);
    spec.sim.faults.stallIteration = 1;
    spec.sim.faults.stallMs = 150;
    auto executor = makeExecutor(spec);
    auto const start = Clock::now();
    auto const id = executor->enqueueRequest(tle::Request(prompt(4), 3, true));
    auto responses = collect(*executor, {id})[id];
    CHECK_EQ(responses.size(), std::size_t{3});
    CHECK(Clock::now() - start >= 150ms);
    std::this_thread::sleep_for(10ms);
    auto const stats = executor->getLatestIterationStats();
    REQUIRE(stats.size() == 4);
    CHECK(stats[1].iterLatencyMS >= 150.0);
    CHECK(stats[0].iterLatencyMS < 100.0);
}

// ---------------------------------------------------------------------------------------------------------------
// Concurrency

void testConcurrentClients()
{
    EngineSpec spec;
    spec.sim = simulation(1, std::nullopt);
    auto executor = makeExecutor(spec);
    constexpr int kThreads = 4;
    constexpr int kPerThread = 12;
    std::vector<std::vector<tle::IdType>> issued(kThreads);
    std::atomic<bool> stop{false};
    std::atomic<int> statsSeen{0};
    std::thread statsThread(
        [&]()
        {
            while (!stop)
            {
                statsSeen += static_cast<int>(executor->getLatestIterationStats().size());
                (void)executor->getLatestRequestStats();
                std::this_thread::sleep_for(3ms);
            }
        });
    std::vector<std::thread> producers;
    for (int t = 0; t < kThreads; ++t)
    {
        producers.emplace_back(
            [&, t]()
            {
                for (int i = 0; i < kPerThread; ++i)
                {
                    auto const id
                        = executor->enqueueRequest(tle::Request(prompt(3 + i % 5, t * 50 + 1), 3, i % 2 == 0));
                    issued[static_cast<std::size_t>(t)].push_back(id);
                    if (i % 5 == 4)
                    {
                        executor->cancelRequest(id);
                    }
                }
            });
    }
    for (auto& producer : producers)
    {
        producer.join();
    }
    std::vector<tle::IdType> all;
    for (auto const& ids : issued)
    {
        CHECK(std::is_sorted(ids.begin(), ids.end()));
        all.insert(all.end(), ids.begin(), ids.end());
    }
    std::set<tle::IdType> const unique(all.begin(), all.end());
    CHECK_EQ(unique.size(), all.size());
    CHECK_EQ(*unique.begin(), tle::IdType{1});
    CHECK_EQ(*unique.rbegin(), tle::IdType{kThreads * kPerThread});
    auto const responses = collect(*executor, all);
    CHECK_EQ(responses.size(), all.size());
    stop = true;
    statsThread.join();
    CHECK(statsSeen.load() > 0);
}

// ---------------------------------------------------------------------------------------------------------------
// KV-cache block reuse, beam accounting and KV-cache events

/// One request's generated tokens and the executor's view of it.
struct Run
{
    tle::VecTokens tokens;
    tle::RequestPerfMetrics perf;
};

Run runOnce(tle::Executor& executor, tle::VecTokens const& input, int maxTokens, int beamWidth = 1)
{
    tle::Request request(input, maxTokens);
    tle::OutputConfig output;
    output.excludeInputFromOutput = true;
    output.returnPerfMetrics = true;
    request.setOutputConfig(output);
    request.setSamplingConfig(tle::SamplingConfig(beamWidth));
    auto const result = finalResult(executor, executor.enqueueRequest(request));
    REQUIRE(result.requestPerfMetrics.has_value());
    return Run{result.outputTokenIds.at(0), *result.requestPerfMetrics};
}

/// The iteration stats since the last drain (once the last iteration's entries are in).
std::deque<tle::IterationStats> drainStats(tle::Executor& executor)
{
    std::this_thread::sleep_for(10ms);
    return executor.getLatestIterationStats();
}

/// Context tokens of every iteration that had context work.
std::vector<int> contextTokensPerIteration(std::deque<tle::IterationStats> const& stats)
{
    std::vector<int> out;
    for (auto const& s : stats)
    {
        if (s.inflightBatchingStats && s.inflightBatchingStats->numContextRequests > 0)
        {
            out.push_back(s.inflightBatchingStats->numCtxTokens);
        }
    }
    return out;
}

std::vector<int> contextTokensPerIteration(tle::Executor& executor)
{
    return contextTokensPerIteration(drainStats(executor));
}

tle::KvCacheStats lastKvStats(std::deque<tle::IterationStats> const& stats)
{
    REQUIRE(!stats.empty() && stats.back().kvCacheStats.has_value());
    return *stats.back().kvCacheStats;
}

tle::KvCacheStats latestKvStats(tle::Executor& executor)
{
    return lastKvStats(drainStats(executor));
}

/// Events read until `count` arrived or two seconds passed.
std::vector<tle::KVCacheEvent> readEvents(tle::KVCacheEventManager& manager, std::size_t count)
{
    std::vector<tle::KVCacheEvent> out;
    auto const deadline = Clock::now() + 2s;
    while (out.size() < count && Clock::now() < deadline)
    {
        for (auto& event : manager.getLatestEvents(20ms))
        {
            out.push_back(std::move(event));
        }
    }
    return out;
}

template <typename Data>
std::vector<Data> eventsOf(std::vector<tle::KVCacheEvent> const& events)
{
    std::vector<Data> out;
    for (auto const& event : events)
    {
        if (auto const* data = std::get_if<Data>(&event.data))
        {
            out.push_back(*data);
        }
    }
    return out;
}

tle::VecTokens tokenIds(tensorrt_llm::runtime::VecUniqueTokens const& tokens)
{
    tle::VecTokens out;
    for (auto const& token : tokens)
    {
        out.push_back(token.tokenId);
    }
    return out;
}

tle::VecTokens concat(tle::VecTokens a, tle::VecTokens const& b)
{
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

tle::ExecutorConfig reuseConfig(bool reuse = true, bool partial = true, std::size_t eventBuffer = 0)
{
    tle::KvCacheConfig kv;
    kv.setEnableBlockReuse(reuse);
    kv.setEnablePartialReuse(partial);
    kv.setEventBufferMaxSize(eventBuffer);
    tle::ExecutorConfig config;
    config.setKvCacheConfig(kv);
    return config;
}

void testRepeatedPromptReusesItsBlocksAndSkipsPrefill()
{
    EngineSpec spec;
    spec.maxNumTokens = 32;
    tle::ExecutorConfig config = reuseConfig();
    config.setRequestStatsMaxIterations(100);
    auto executor = makeExecutor(spec, config);
    // 97 tokens: six full blocks plus the last token, which is always computed (its block gets no key).
    tle::VecTokens const input = prompt(97);
    auto const first = runOnce(*executor, input, 4);
    CHECK(contextTokensPerIteration(*executor) == (std::vector<int>{32, 32, 32, 1}));
    CHECK_EQ(first.perf.kvCacheMetrics.numReusedBlocks, 0);
    CHECK_EQ(first.perf.kvCacheMetrics.numMissedBlocks, 7);
    CHECK_EQ(first.perf.kvCacheMetrics.numTotalAllocatedBlocks, 7);
    CHECK_EQ(first.perf.kvCacheMetrics.numNewAllocatedBlocks, 7);
    CHECK_EQ(first.perf.kvCacheMetrics.kvCacheHitRate, 0.f);
    (void)executor->getLatestRequestStats();

    auto const second = runOnce(*executor, input, 4);
    auto const stats = drainStats(*executor);
    // The six full blocks are reused: one iteration computes the last token instead of four prefilling 97.
    CHECK(contextTokensPerIteration(stats) == (std::vector<int>{1}));
    CHECK(second.tokens == first.tokens);
    auto const& kv = second.perf.kvCacheMetrics;
    CHECK_EQ(kv.numReusedBlocks, 6);
    CHECK_EQ(kv.numMissedBlocks, 1);
    CHECK_EQ(kv.numTotalAllocatedBlocks, 1);
    CHECK_EQ(kv.numNewAllocatedBlocks, 1);
    CHECK(std::abs(kv.kvCacheHitRate - 6.f / 7.f) < 1e-6f);
    REQUIRE(first.perf.firstIter && second.perf.firstIter && first.perf.lastIter);
    // Time to first token in iterations: four, then one.
    CHECK_EQ(*first.perf.firstIter, tle::IterationType{3});
    CHECK_EQ(*second.perf.firstIter, *first.perf.lastIter + 1);

    // The same counters per request (RequestStats) and for the whole cache (KvCacheStats).
    auto const requestStats = executor->getLatestRequestStats();
    REQUIRE(!requestStats.empty() && !requestStats.front().requestStats.empty());
    auto const& perRequest = requestStats.front().requestStats.front();
    CHECK_EQ(perRequest.contextPrefillPosition, 97);
    CHECK_EQ(perRequest.reusedBlocksPerRequest, 6);
    CHECK_EQ(perRequest.missedBlocksPerRequest, 1);
    CHECK_EQ(perRequest.allocTotalBlocksPerRequest, 1);
    CHECK(std::abs(perRequest.kvCacheHitRatePerRequest - 6.f / 7.f) < 1e-6f);
    auto const cache = lastKvStats(stats);
    CHECK_EQ(cache.reusedBlocks, 6);
    CHECK_EQ(cache.missedBlocks, 8);
    CHECK(std::abs(cache.cacheHitRate - 6.f / 14.f) < 1e-6f);
    CHECK_EQ(cache.allocTotalBlocks, 8);
    CHECK_EQ(cache.allocNewBlocks, 8);
}

void testSharedPrefixReusesOnlyTheMatchingBlocks()
{
    auto executor = makeExecutor(EngineSpec{}, reuseConfig());
    (void)runOnce(*executor, prompt(64, 1), 2);
    (void)contextTokensPerIteration(*executor);
    // The same first two blocks, then other tokens.
    auto const run = runOnce(*executor, concat(prompt(32, 1), prompt(32, 500)), 2);
    CHECK_EQ(run.perf.kvCacheMetrics.numReusedBlocks, 2);
    CHECK_EQ(run.perf.kvCacheMetrics.numMissedBlocks, 2);
    CHECK(contextTokensPerIteration(*executor) == (std::vector<int>{32}));
}

void testPartialReuseOnAndOff()
{
    struct Case
    {
        bool partial;
        bool copyOnPartial;
        /// The second prompt: 1..36 then other tokens, or 1..20 then other tokens.
        int sharedTokens;
        int reused;
        int computed;
    };
    // The first request caches blocks [1..16], [17..32] and, when it ends, the partial block [33..40]. Only whole
    // blocks served from cache count as reused; a partly matched block's tokens skip prefill but count as a miss.
    for (Case const c : {Case{true, true, 36, 2, 4}, Case{false, true, 36, 2, 8}, Case{true, true, 20, 1, 20},
             Case{true, false, 20, 1, 24}})
    {
        tle::ExecutorConfig config = reuseConfig(true, c.partial);
        auto kv = config.getKvCacheConfig();
        kv.setCopyOnPartialReuse(c.copyOnPartial);
        config.setKvCacheConfig(kv);
        auto executor = makeExecutor(EngineSpec{}, config);
        (void)runOnce(*executor, prompt(40, 1), 1);
        (void)contextTokensPerIteration(*executor);
        // A leaf nobody uses ([33..40]) is taken over; [17..32] has a child, so it can only be copied.
        auto const run = runOnce(*executor, concat(prompt(c.sharedTokens, 1), prompt(40 - c.sharedTokens, 900)), 1);
        CHECK_EQ(run.perf.kvCacheMetrics.numReusedBlocks, c.reused);
        CHECK(contextTokensPerIteration(*executor) == (std::vector<int>{c.computed}));
    }
}

void testReuseOffReusesNothing()
{
    auto executor = makeExecutor(EngineSpec{}, reuseConfig(false, true, 64));
    auto manager = executor->getKVCacheEventManager();
    REQUIRE(manager.has_value());
    auto const first = runOnce(*executor, prompt(40), 3);
    auto const second = runOnce(*executor, prompt(40), 3);
    auto const stats = drainStats(*executor);
    CHECK(second.tokens == first.tokens);
    CHECK(contextTokensPerIteration(stats) == (std::vector<int>{40, 40}));
    CHECK_EQ(second.perf.kvCacheMetrics.numReusedBlocks, 0);
    CHECK_EQ(second.perf.kvCacheMetrics.numMissedBlocks, 0);
    CHECK_EQ(second.perf.kvCacheMetrics.kvCacheHitRate, 0.f);
    auto const cache = lastKvStats(stats);
    CHECK_EQ(cache.reusedBlocks, 0);
    CHECK_EQ(cache.missedBlocks, 0);
    CHECK_EQ(cache.allocNewBlocks, cache.allocTotalBlocks);
    // Nothing becomes reusable, so only the Created event is recorded.
    auto const events = (*manager)->getLatestEvents(100ms);
    REQUIRE(events.size() == 1);
    CHECK(std::holds_alternative<tle::KVCacheCreatedData>(events.front().data));
}

/// An engine with a KV cache of 8 blocks of 16 tokens.
EngineSpec eightBlockEngine()
{
    EngineSpec spec;
    spec.sim = simulation(1, 128);
    return spec;
}

void testLruEvictsTheLeastRecentlyUsedBlocksAndReportsThem()
{
    auto executor = makeExecutor(eightBlockEngine(), reuseConfig(true, true, 100));
    auto manager = *executor->getKVCacheEventManager();
    // A and B each hold three blocks and leave them cached: [1..16], [17..32] and, when they end, [33].
    (void)runOnce(*executor, prompt(33, 1), 1);
    (void)runOnce(*executor, prompt(33, 101), 1);
    auto events = readEvents(*manager, 5);
    auto const stored = eventsOf<tle::KVCacheStoredData>(events);
    REQUIRE(stored.size() == 4);
    std::vector<tle::IdType> hashesOfA;
    for (std::size_t i = 0; i < 2; ++i)
    {
        for (auto const& block : stored[i].blocks)
        {
            hashesOfA.push_back(block.blockHash);
        }
    }
    REQUIRE(hashesOfA.size() == 3);
    auto cache = latestKvStats(*executor);
    CHECK_EQ(cache.freeNumBlocks, 8); // cached blocks count as free

    // C needs five blocks: the two never used, then A's, least recently released, leaf first.
    (void)runOnce(*executor, prompt(65, 201), 1);
    events = readEvents(*manager, 2);
    auto const removed = eventsOf<tle::KVCacheRemovedData>(events);
    REQUIRE(removed.size() == 1);
    CHECK(removed[0].blockHashes == (std::vector<tle::IdType>{hashesOfA[2], hashesOfA[1], hashesOfA[0]}));

    // B's blocks survived, A's did not.
    CHECK_EQ(runOnce(*executor, prompt(33, 101), 1).perf.kvCacheMetrics.numReusedBlocks, 2);
    auto const againA = runOnce(*executor, prompt(33, 1), 1);
    CHECK_EQ(againA.perf.kvCacheMetrics.numReusedBlocks, 0);
    CHECK_EQ(againA.perf.kvCacheMetrics.numMissedBlocks, 3);
}

void testKvExhaustionWithReusableFreeBlocksStillAdmits()
{
    for (auto const policy :
        {tle::CapacitySchedulerPolicy::kGUARANTEED_NO_EVICT, tle::CapacitySchedulerPolicy::kMAX_UTILIZATION})
    {
        tle::ExecutorConfig config = reuseConfig();
        config.setSchedulerConfig(tle::SchedulerConfig(policy));
        auto executor = makeExecutor(eightBlockEngine(), config);
        // Fill all eight blocks with cached content.
        (void)runOnce(*executor, prompt(64, 1), 1);
        (void)runOnce(*executor, prompt(64, 300), 1);
        auto const cache = latestKvStats(*executor);
        CHECK_EQ(cache.freeNumBlocks, 8);
        CHECK_EQ(cache.usedNumBlocks, 0);
        // Two new requests of four blocks each run side by side, evicting cached blocks.
        auto const ids = executor->enqueueRequests({tle::Request(prompt(16, 600), 48), tle::Request(prompt(16, 700), 48)});
        auto const responses = collect(*executor, ids);
        for (auto const id : ids)
        {
            REQUIRE(responses.at(id).size() == 1);
            CHECK(!responses.at(id)[0].hasError());
        }
        std::this_thread::sleep_for(10ms);
        int maxScheduled = 0;
        for (auto const& s : executor->getLatestIterationStats())
        {
            maxScheduled = std::max(maxScheduled, s.inflightBatchingStats->numScheduledRequests);
            CHECK(s.kvCacheStats->usedNumBlocks <= 8);
            CHECK_EQ(s.inflightBatchingStats->numPausedRequests, 0);
        }
        CHECK_EQ(maxScheduled, 2);
    }
}

/// The process's resident memory in bytes, or nullopt where /proc is unavailable.
std::optional<long long> residentBytes()
{
    std::ifstream statm("/proc/self/statm");
    long long sizePages = 0;
    long long residentPages = 0;
    if (!(statm >> sizePages >> residentPages))
    {
        return std::nullopt;
    }
    return residentPages * static_cast<long long>(::sysconf(_SC_PAGESIZE));
}

void testAHugeKvPoolCostsNothingUntilUsed()
{
    // 4,194,304 blocks of 16 tokens: per-block state allocated up front would take hundreds of megabytes.
    constexpr int kBlocks = 1 << 22;
    EngineSpec spec;
    spec.sim = simulation(1, std::int64_t{kBlocks} * 16);
    spec.sim.clock = tle::sim::ClockMode::kVirtual;
    auto const before = residentBytes();
    auto executor = makeExecutor(spec, reuseConfig());
    auto const loaded = residentBytes();
    // Two requests: blocks are handed out and reused as in any pool.
    auto const first = runOnce(*executor, prompt(40), 8);
    auto const second = runOnce(*executor, prompt(40), 8);
    CHECK(second.tokens == first.tokens);
    // Blocks [1..16], [17..32] and the partial [33..47] were cached by the first request; the partial one is
    // reused but not counted (only whole blocks are).
    CHECK_EQ(second.perf.kvCacheMetrics.numReusedBlocks, 2);
    auto const cache = latestKvStats(*executor);
    CHECK_EQ(cache.maxNumBlocks, kBlocks);
    CHECK_EQ(cache.freeNumBlocks, kBlocks);
    CHECK_EQ(cache.usedNumBlocks, 0);
    CHECK_EQ(cache.allocNewBlocks, 3);
    auto const served = residentBytes();
    if (before && loaded && served)
    {
        constexpr long long kLimit = 32LL << 20;
        CHECK(*loaded - *before < kLimit);
        CHECK(*served - *before < kLimit);
    }
}

void testRequestStatsPausedOnlyInThePausingIteration()
{
    tle::ExecutorConfig config;
    config.setSchedulerConfig(tle::SchedulerConfig(tle::CapacitySchedulerPolicy::kMAX_UTILIZATION));
    config.setRequestStatsMaxIterations(1000);
    auto executor = makeExecutor(smallCacheEngine(), config);
    // Three requests of 4 blocks each in an 8-block cache: they start together, then pause as they grow.
    std::vector<tle::Request> three(3, tle::Request(prompt(16), 48));
    auto const ids = executor->enqueueRequests(three);
    auto const responses = collect(*executor, ids);
    for (auto const id : ids)
    {
        REQUIRE(responses.at(id).size() == 1);
        CHECK(!responses.at(id)[0].hasError());
    }
    std::this_thread::sleep_for(10ms);
    std::map<tle::IterationType, int> numPaused;
    for (auto const& s : executor->getLatestIterationStats())
    {
        numPaused[s.iter] = s.inflightBatchingStats->numPausedRequests;
    }
    std::map<tle::IterationType, std::set<tle::IdType>> pausedIds;
    std::map<tle::IterationType, std::set<tle::IdType>> scheduledIds;
    for (auto const& perIteration : executor->getLatestRequestStats())
    {
        for (auto const& stats : perIteration.requestStats)
        {
            if (stats.paused)
            {
                pausedIds[perIteration.iter].insert(stats.id);
                // Paused requests are not scheduled in that iteration.
                CHECK(!stats.scheduled);
            }
            if (stats.scheduled)
            {
                scheduledIds[perIteration.iter].insert(stats.id);
            }
        }
    }
    int pauses = 0;
    int iterationsWithPauses = 0;
    for (auto const& [iter, count] : numPaused)
    {
        // The flags of an iteration are exactly the requests paused in it.
        CHECK_EQ(static_cast<int>(pausedIds[iter].size()), count);
        pauses += count;
        iterationsWithPauses += count > 0 ? 1 : 0;
        for (auto const id : pausedIds[iter])
        {
            // The next iteration no longer reports it paused unless it is paused again, which needs it to have
            // been scheduled in between: a paused request is not paused twice in a row.
            CHECK(pausedIds[iter + 1].count(id) == 0);
        }
    }
    CHECK(pauses > 0);
    // Pausing is an event, not a state: far fewer iterations report it than the requests spend waiting.
    CHECK(iterationsWithPauses < static_cast<int>(numPaused.size()) / 2);
}

void testPausedFlagDoesNotOutliveItsIteration()
{
    // On the virtual clock with 10 ms iterations, three requests of 16 + 48 tokens fill the 8-block cache in
    // iteration 17 (33 tokens each need a third block): the last started one is paused there. Its allotted time
    // ends it at the start of the next iteration, before any scheduling: it must not be reported paused again.
    tle::ExecutorConfig config;
    config.setSchedulerConfig(tle::SchedulerConfig(tle::CapacitySchedulerPolicy::kMAX_UTILIZATION));
    config.setRequestStatsMaxIterations(1000);
    EngineSpec spec;
    spec.sim = simulation(10, 128);
    spec.sim.clock = tle::sim::ClockMode::kVirtual;
    auto executor = makeExecutor(spec, config);
    std::vector<tle::Request> three(3, tle::Request(prompt(16), 48));
    three[2].setAllottedTimeMs(std::chrono::milliseconds(175));
    auto const ids = executor->enqueueRequests(three);
    auto responses = collect(*executor, ids);
    REQUIRE(responses.at(ids[2]).size() == 1);
    CHECK(responses.at(ids[2])[0].getResult().finishReasons.at(0) == tle::FinishReason::kTIMED_OUT);
    std::this_thread::sleep_for(10ms);

    std::map<tle::IterationType, tle::RequestStats> last;
    for (auto const& perIteration : executor->getLatestRequestStats())
    {
        for (auto const& stats : perIteration.requestStats)
        {
            if (stats.id == ids[2])
            {
                last[perIteration.iter] = stats;
            }
        }
    }
    std::optional<tle::IterationType> pausedIn;
    for (auto const& [iter, stats] : last)
    {
        if (stats.paused)
        {
            CHECK(!pausedIn.has_value()); // paused once
            pausedIn = iter;
        }
    }
    REQUIRE(pausedIn.has_value());
    CHECK_EQ(*pausedIn, tle::IterationType{17});
    auto const next = last.find(*pausedIn + 1);
    REQUIRE(next != last.end());
    CHECK(next->second.stage == tle::RequestStage::kGENERATION_COMPLETE);
    CHECK(!next->second.paused);
    CHECK(!next->second.scheduled);
}

void testBeamsShareContextBlocks()
{
    EngineSpec spec;
    spec.maxBeamWidth = 2;
    for (bool const reuse : {true, false})
    {
        tle::ExecutorConfig config = reuseConfig(reuse);
        config.setMaxBeamWidth(2);
        auto executor = makeExecutor(spec, config);
        // 40 prompt tokens: blocks [1..16] and [17..32] shared by both beams, the third one per beam; 60 tokens in
        // all need a fourth block position, one per beam: six blocks, not eight.
        auto const run = runOnce(*executor, prompt(40), 20, 2);
        CHECK_EQ(run.perf.kvCacheMetrics.numTotalAllocatedBlocks, 4);
        CHECK_EQ(run.perf.kvCacheMetrics.numMissedBlocks, reuse ? 3 : 0);
        std::this_thread::sleep_for(10ms);
        int maxUsed = 0;
        for (auto const& s : executor->getLatestIterationStats())
        {
            maxUsed = std::max(maxUsed, s.kvCacheStats->usedNumBlocks);
        }
        CHECK_EQ(maxUsed, 6);
        // Only the context's full blocks are stored for beam search: a repeat reuses those two.
        auto const again = runOnce(*executor, prompt(40), 20, 2);
        CHECK_EQ(again.perf.kvCacheMetrics.numReusedBlocks, reuse ? 2 : 0);
    }
}

void testKvEventsCreatedStoredAndChained()
{
    EngineSpec spec;
    auto executor = makeExecutor(spec, reuseConfig(true, true, 100));
    auto manager = executor->getKVCacheEventManager();
    REQUIRE(manager.has_value());
    // 49 tokens: three full blocks, stored when the context is done; 16 more tokens fill a fourth, stored at the end.
    tle::VecTokens const input = prompt(49, 10);
    auto const run = runOnce(*executor, input, 16);
    auto const events = readEvents(**manager, 3);
    REQUIRE(events.size() == 3);
    for (std::size_t i = 0; i < events.size(); ++i)
    {
        CHECK_EQ(events[i].eventId, tle::IdType{i});
        CHECK_EQ(events[i].windowSize, spec.maxSeqLen);
        CHECK(!events[i].attentionDpRank.has_value());
    }
    auto const* created = std::get_if<tle::KVCacheCreatedData>(&events[0].data);
    REQUIRE(created);
    CHECK(created->numBlocksPerCacheLevel == (std::vector<tle::SizeType32>{65536 / 16, 0}));

    auto const* context = std::get_if<tle::KVCacheStoredData>(&events[1].data);
    REQUIRE(context && context->blocks.size() == 3);
    CHECK(!context->parentHash.has_value());
    std::set<tle::IdType> hashes;
    for (std::size_t i = 0; i < 3; ++i)
    {
        auto const& block = context->blocks[i];
        CHECK(tokenIds(block.tokens) == tle::VecTokens(input.begin() + 16 * i, input.begin() + 16 * (i + 1)));
        CHECK_EQ(block.cacheLevel, 0);
        CHECK_EQ(block.priority, 35);
        CHECK(!block.loraId.has_value());
        hashes.insert(block.blockHash);
    }
    CHECK_EQ(hashes.size(), std::size_t{3});

    // The last prompt token and the first 15 generated ones, chained to the third block.
    auto const* final = std::get_if<tle::KVCacheStoredData>(&events[2].data);
    REQUIRE(final && final->blocks.size() == 1);
    CHECK(final->parentHash == std::optional<tle::IdType>(context->blocks[2].blockHash));
    tle::VecTokens expected{input.back()};
    expected.insert(expected.end(), run.tokens.begin(), run.tokens.begin() + 15);
    CHECK(tokenIds(final->blocks[0].tokens) == expected);
    CHECK(hashes.count(final->blocks[0].blockHash) == 0);

    // A repeat stores nothing new: every block it could store is cached already.
    (void)runOnce(*executor, input, 16);
    CHECK((*manager)->getLatestEvents(100ms).empty());
}

void testNoKvEventsWithoutABuffer()
{
    auto executor = makeExecutor(EngineSpec{}, reuseConfig(true, true, 0));
    (void)runOnce(*executor, prompt(40), 4);
    (void)runOnce(*executor, prompt(40), 4);
    auto manager = executor->getKVCacheEventManager();
    REQUIRE(manager.has_value());
    auto const start = Clock::now();
    CHECK((*manager)->getLatestEvents(5s).empty());
    CHECK(Clock::now() - start < 2s); // disabled: returns at once rather than waiting
}

void testKvEventBufferIsBounded()
{
    auto executor = makeExecutor(EngineSpec{}, reuseConfig(true, true, 3));
    auto manager = *executor->getKVCacheEventManager();
    // Created, then two Stored events per request (its context, then its generated tokens).
    for (int i = 0; i < 4; ++i)
    {
        (void)runOnce(*executor, prompt(33, 1 + 100 * i), 16);
    }
    std::this_thread::sleep_for(20ms);
    // Ids 0 to 8 were recorded; the buffer kept the last three (the last may still be on its way).
    auto const first = manager->getLatestEvents(100ms);
    REQUIRE(first.size() == 3);
    CHECK(first.front().eventId >= tle::IdType{5});
    std::vector<tle::IdType> ids;
    for (auto const& event : first)
    {
        ids.push_back(event.eventId);
    }
    auto const deadline = Clock::now() + 2s;
    while (ids.back() < 8 && Clock::now() < deadline)
    {
        for (auto const& event : manager->getLatestEvents(20ms))
        {
            ids.push_back(event.eventId);
        }
    }
    CHECK_EQ(ids.back(), tle::IdType{8});
    CHECK(ids.size() <= 4);
    for (std::size_t i = 1; i < ids.size(); ++i)
    {
        CHECK_EQ(ids[i], ids[i - 1] + 1);
    }
}

void testKvEventReadersWaitAndWakeOnShutdown()
{
    auto executor = makeExecutor(EngineSpec{}, reuseConfig(true, true, 16));
    auto manager = *executor->getKVCacheEventManager();
    CHECK_EQ(manager->getLatestEvents(std::nullopt).size(), std::size_t{1}); // Created
    // A reader waiting with no timeout gets the next events as soon as an iteration publishes them.
    std::deque<tle::KVCacheEvent> seen;
    std::thread reader([&]() { seen = manager->getLatestEvents(std::nullopt); });
    std::this_thread::sleep_for(20ms);
    (void)runOnce(*executor, prompt(20), 2);
    reader.join();
    CHECK(!seen.empty());
    // Another waits on an idle executor until shutdown wakes it; then reads return at once.
    (void)manager->getLatestEvents(100ms);
    std::thread waiter([&]() { seen = manager->getLatestEvents(std::nullopt); });
    std::this_thread::sleep_for(20ms);
    executor->shutdown();
    waiter.join(); // returns: shutdown woke it
    auto const again = executor->getKVCacheEventManager();
    REQUIRE(again.has_value());
    CHECK((*again)->getLatestEvents(std::nullopt).empty());
    executor.reset();
    CHECK(manager->getLatestEvents(10s).empty()); // outlives its executor
}

// ---------------------------------------------------------------------------------------------------------------

struct TestCase
{
    char const* name;
    void (*run)();
};

} // namespace

// ---- Guided decoding: the standalone build has no grammar engine ----

void testGuidedRequestsWithoutTheGrammarEngine()
{
    EngineSpec spec;
    spec.vocabSize = 100;
    std::string const prefix = "Encountered an error when fetching new request: ";
    tle::Request guided(prompt(4), 4);
    guided.setGuidedDecodingParams(tle::GuidedDecodingParams(tle::GuidedDecodingParams::GuideType::kJSON));

    // Without a GuidedDecodingConfig a guided request is refused, naming the missing config.
    auto plain = makeExecutor(spec);
    CHECK(contains(errorOf(*plain, guided), prefix + "Guided decoding is not enabled"));

    // With one, this build (no Rust grammar engine linked) refuses guided requests and says why,
    // and keeps serving unguided ones.
    tle::ExecutorConfig config;
    std::vector<std::string> vocab;
    for (int i = 0; i < 100; ++i)
    {
        vocab.push_back("t" + std::to_string(i));
    }
    config.setGuidedDecodingConfig(tle::GuidedDecodingConfig(
        tle::GuidedDecodingConfig::GuidedDecodingBackend::kLLGUIDANCE, vocab, std::nullopt, std::vector<int>{0}));
    auto configured = makeExecutor(spec, config);
    CHECK(contains(errorOf(*configured, guided), "grammar engine"));
    CHECK_EQ(generateOnce(*configured, tle::Request(prompt(4), 3)).size(), std::size_t{3});

    // The config's own checks.
    CHECK(throwsWith([]() { tle::GuidedDecodingConfig(tle::GuidedDecodingConfig::GuidedDecodingBackend::kLLGUIDANCE)
                                 .validate(); },
        "encodedVocab"));
    CHECK(throwsWith(
        []() { tle::GuidedDecodingParams(tle::GuidedDecodingParams::GuideType::kREGEX); }, "guide is required"));
}

int main()
{
    gTempRoot = fs::temp_directory_path() / ("trtllm-sim-test-" + std::to_string(::getpid()));
    fs::create_directories(gTempRoot);

    TestCase const tests[] = {
        {"an engine without simulation settings runs", testAnEngineWithoutSimulationSettingsRuns},
        {"version", testVersion},
        {"request ids start at 1 and increase", testRequestIdsStartAtOneAndIncrease},
        {"await drains, times out and wakes promptly", testAwaitDrainsTimesOutAndWakesPromptly},
        {"non-streaming output is prompt plus generated", testNonStreamingOutputIsPromptPlusGenerated},
        {"streaming delta and cumulative", testStreamingDeltaAndCumulative},
        {"end id stops without the end token", testEndIdStopsWithoutTheEndToken},
        {"stop words include the stop tokens", testStopWordsIncludeTheStopTokens},
        {"bad words are never emitted", testBadWordsAreNeverEmitted},
        {"maxTokens is clamped to max_seq_len", testMaxTokensIsClampedToMaxSeqLen},
        {"cancel ends with zero tokens", testCancelEndsWithZeroTokens},
        {"allotted time ends with timed out", testAllottedTimeEndsWithTimedOut},
        {"invalid requests get error responses", testInvalidRequestsGetErrorResponses},
        {"prompt over max_num_tokens without chunking", testPromptOverMaxNumTokensWithoutChunking},
        {"numReturnSequences", testNumReturnSequences},
        {"log probs", testLogProbs},
        {"perf metrics use steady_clock at dequeue", testPerfMetricsUseSteadyClockAtDequeue},
        {"maxQueueSize throws", testMaxQueueSizeThrows},
        {"shutdown drains and then everything throws", testShutdownDrainsAndThenEverythingThrows},
        {"per-id await and response counts", testPerIdAwaitAndResponseCounts},
        {"terminated ids stay bounded", testTerminatedIdsStayBounded},
        {"iteration stats", testIterationStats},
        {"request stats when enabled", testRequestStatsWhenEnabled},
        {"priority order within the queue", testPriorityOrderWithinTheQueue},
        {"batch size and token budget", testBatchSizeAndTokenBudget},
        {"context chunking policies", testContextChunkingPolicies},
        {"beam search returns every beam", testBeamSearchReturnsEveryBeam},
        {"guaranteed-no-evict reserves whole requests", testGuaranteedNoEvictReservesWholeRequests},
        {"max-utilization pauses and still completes", testMaxUtilizationPausesAndStillCompletes},
        {"static batch waits for the batch to finish", testStaticBatchWaitsForTheBatchToFinish},
        {"fault: throw in a method", testFaultThrowInMethod},
        {"fault: failing requests", testFaultFailingRequests},
        {"fault: stall", testFaultStall},
        {"concurrent clients", testConcurrentClients},
        {"kv: a repeated prompt reuses its blocks and skips prefill", testRepeatedPromptReusesItsBlocksAndSkipsPrefill},
        {"kv: a shared prefix reuses only the matching blocks", testSharedPrefixReusesOnlyTheMatchingBlocks},
        {"kv: partial reuse on and off", testPartialReuseOnAndOff},
        {"kv: reuse off reuses nothing", testReuseOffReusesNothing},
        {"kv: LRU evicts the least recently used blocks and reports them",
            testLruEvictsTheLeastRecentlyUsedBlocksAndReportsThem},
        {"kv: exhaustion with reusable free blocks still admits", testKvExhaustionWithReusableFreeBlocksStillAdmits},
        {"kv: beams share context blocks", testBeamsShareContextBlocks},
        {"kv: a huge pool costs nothing until used", testAHugeKvPoolCostsNothingUntilUsed},
        {"request stats: paused only in the pausing iteration", testRequestStatsPausedOnlyInThePausingIteration},
        {"request stats: the paused flag does not outlive its iteration", testPausedFlagDoesNotOutliveItsIteration},
        {"kv events: created, stored and chained", testKvEventsCreatedStoredAndChained},
        {"kv events: none without a buffer", testNoKvEventsWithoutABuffer},
        {"kv events: the buffer is bounded", testKvEventBufferIsBounded},
        {"kv events: readers wait and wake on shutdown", testKvEventReadersWaitAndWakeOnShutdown},
        {"guided decoding: requests without the grammar engine", testGuidedRequestsWithoutTheGrammarEngine},
    };

    int passed = 0;
    int failed = 0;
    auto const suiteStart = Clock::now();
    for (auto const& test : tests)
    {
        gChecksFailedInTest = 0;
        auto const start = Clock::now();
        bool ok = true;
        try
        {
            test.run();
        }
        catch (TestFailure const&)
        {
            ok = false;
        }
        catch (std::exception const& e)
        {
            std::printf("    unexpected exception: %s\n", e.what());
            ok = false;
        }
        catch (...)
        {
            std::printf("    unexpected non-standard exception\n");
            ok = false;
        }
        ok = ok && gChecksFailedInTest == 0;
        auto const ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
        std::printf("%s %s (%lld ms)\n", ok ? "ok  " : "FAIL", test.name, static_cast<long long>(ms));
        (ok ? passed : failed) += 1;
    }
    auto const totalMs = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - suiteStart).count();
    std::error_code ignored;
    fs::remove_all(gTempRoot, ignored);
    std::printf("%d passed, %d failed (%lld ms)\n", passed, failed, static_cast<long long>(totalMs));
    return failed == 0 ? 0 : 1;
}
