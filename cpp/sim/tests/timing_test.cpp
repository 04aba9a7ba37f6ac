// Tests of the simulated executor's real and virtual clocks through the public Executor. The timing model itself
// is Rust's (tested in src/sim and tests/sim); these C++ programs link its stand-in (timing_bridge.cpp without
// the bridge), whose iteration times the expectations read back through the same TimingModel interface.
//
// Build: c++ -std=c++17 -O1 -pthread -I cpp/sim/include cpp/sim/src/*.cpp cpp/sim/tests/timing_test.cpp
#include "tensorrt_llm/executor/executor.h"

#include "../src/engine_config.h"
#include "../src/sim_config.h"
#include "../src/timing_model.h"
#include "test_harness.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <numeric>
#include <set>
#include <sstream>
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

// ---------------------------------------------------------------------------------------------------------------
// Engines

/// A model's shape, as in its public config.json.
struct ModelShape
{
    int vocab;
    int hidden;
    int layers;
    int heads;
    int kvHeads;
    int headSize;
    int intermediate;
};

constexpr ModelShape kQwen7b{152064, 3584, 28, 28, 4, 128, 18944};
constexpr ModelShape kTiny{1000, 256, 2, 4, 2, 64, 512};

/// A virtual-clock simulation.json (the timing model decides each iteration's time).
sim::SimConfig virtualClock()
{
    sim::SimConfig config;
    config.clock = sim::ClockMode::kVirtual;
    return config;
}

struct EngineSpec
{
    ModelShape model = kQwen7b;
    int maxInputLen = 8192;
    int maxSeqLen = 8704;
    int maxBatchSize = 256;
    int maxBeamWidth = 1;
    int maxNumTokens = 8192;
    int tokensPerBlock = 32;
    sim::SimConfig sim = virtualClock();
};

fs::path gTempRoot;

/// Describes `spec` to the stand-in loader under a fresh path (the Rust side reads real engine directories).
fs::path makeEngineDir(EngineSpec const& spec)
{
    static int counter = 0;
    fs::path const dir = gTempRoot / ("engine-" + std::to_string(counter++));
    auto const& m = spec.model;
    sim::EngineConfig engine;
    engine.vocabSizePadded = m.vocab;
    engine.hiddenSize = m.hidden;
    engine.numLayers = m.layers;
    engine.numAttentionHeads = m.heads;
    engine.numKvHeads = m.kvHeads;
    engine.headSize = m.headSize;
    engine.intermediateSize = m.intermediate;
    engine.maxInputLen = spec.maxInputLen;
    engine.maxSeqLen = spec.maxSeqLen;
    engine.maxBatchSize = spec.maxBatchSize;
    engine.maxBeamWidth = spec.maxBeamWidth;
    engine.maxNumTokens = spec.maxNumTokens;
    engine.tokensPerBlock = spec.tokensPerBlock;
    sim::describeStandInEngine(dir, engine, spec.sim);
    return dir;
}

std::unique_ptr<tle::Executor> makeExecutor(EngineSpec const& spec, tle::ExecutorConfig config = tle::ExecutorConfig())
{
    return std::make_unique<tle::Executor>(makeEngineDir(spec), tle::ModelType::kDECODER_ONLY, config);
}

sim::TimingModel timingModel(EngineSpec const& spec)
{
    return sim::loadEngine(makeEngineDir(spec)).timing;
}

tle::ExecutorConfig withIterationStats()
{
    tle::ExecutorConfig config;
    config.setIterStatsMaxIterations(100000);
    return config;
}

/// Runs one request to its end and returns its final Result (with perf metrics).
tle::Result runRequest(tle::Executor& executor, int promptLength, int maxTokens, int beamWidth = 1)
{
    tle::VecTokens tokens(static_cast<std::size_t>(promptLength));
    std::iota(tokens.begin(), tokens.end(), 1);
    tle::Request request(tokens, maxTokens);
    tle::OutputConfig output;
    output.returnPerfMetrics = true;
    request.setOutputConfig(output);
    request.setSamplingConfig(tle::SamplingConfig(beamWidth));
    auto const id = executor.enqueueRequest(request);
    auto const deadline = Clock::now() + 30s;
    while (Clock::now() < deadline)
    {
        for (auto const& response : executor.awaitResponses(id, 100ms))
        {
            REQUIRE(!response.hasError());
            if (response.getResult().isFinal)
            {
                return response.getResult();
            }
        }
    }
    throw test::Failure("request did not finish");
}

double milliseconds(Clock::duration duration)
{
    return std::chrono::duration<double, std::milli>(duration).count();
}

/// The iteration stats of everything that ran so far (idle entries dropped).
std::vector<tle::IterationStats> busyIterations(tle::Executor& executor)
{
    std::this_thread::sleep_for(20ms);
    std::vector<tle::IterationStats> out;
    for (auto const& stats : executor.getLatestIterationStats())
    {
        if (stats.inflightBatchingStats && stats.inflightBatchingStats->numScheduledRequests > 0)
        {
            out.push_back(stats);
        }
    }
    return out;
}

void testVirtualClockDoesNotSleepAndReportsModeledLatencies()
{
    EngineSpec spec;
    auto executor = makeExecutor(spec, withIterationStats());
    auto const model = timingModel(spec);
    int const promptLength = 1000;
    int const maxTokens = 64;
    auto const wallStart = Clock::now();
    auto const result = runRequest(*executor, promptLength, maxTokens);
    double const wallMs = milliseconds(Clock::now() - wallStart);

    auto const stats = busyIterations(*executor);
    REQUIRE(stats.size() == static_cast<std::size_t>(maxTokens));
    double modeledTotal = 0;
    for (std::size_t i = 0; i < stats.size(); ++i)
    {
        sim::BatchWork work;
        if (i == 0)
        {
            work.addContext(promptLength, 0, true);
        }
        else
        {
            work.addGeneration(promptLength + static_cast<double>(i) - 1, 1);
        }
        double const expected = model.iteration(work).totalMs;
        CHECK_NEAR(stats[i].iterLatencyMS, expected, 1e-9);
        modeledTotal += expected;
    }
    // The run itself took a small fraction of the simulated time.
    CHECK(wallMs < modeledTotal / 2);

    // The perf metrics are steady_clock points on the simulated clock: TTFT is the prefill iteration, the
    // decode span the sum of the rest (to the clock's nanosecond resolution).
    auto const& t = result.requestPerfMetrics->timingMetrics;
    CHECK_NEAR(milliseconds(t.firstTokenTime - t.arrivalTime), stats[0].iterLatencyMS, 1e-5);
    CHECK_NEAR(milliseconds(t.lastTokenTime - t.arrivalTime), modeledTotal, 1e-3);
    CHECK(t.firstScheduledTime == t.arrivalTime);
}

void testVirtualClockFollowsTheWallClockWhenIdle()
{
    auto executor = makeExecutor(EngineSpec{});
    (void) runRequest(*executor, 100, 10); // about a quarter of a simulated second ahead of the wall clock
    auto const first = runRequest(*executor, 100, 2);
    // Back to back: the next arrival is on the simulated clock, ahead of the wall clock.
    CHECK(first.requestPerfMetrics->timingMetrics.arrivalTime > Clock::now());
    // After idling past the simulated time, an arrival is stamped no earlier than the wall clock at enqueue.
    auto const ahead = first.requestPerfMetrics->timingMetrics.lastTokenTime - Clock::now();
    if (ahead > Clock::duration::zero())
    {
        std::this_thread::sleep_for(ahead);
    }
    std::this_thread::sleep_for(20ms);
    auto const beforeEnqueue = Clock::now();
    auto const later = runRequest(*executor, 100, 2);
    CHECK(later.requestPerfMetrics->timingMetrics.arrivalTime >= beforeEnqueue);
}

void testFixedIterationMsOverridesTheModel()
{
    EngineSpec spec;
    spec.sim.iterationMs = 3.0;
    auto executor = makeExecutor(spec, withIterationStats());
    auto const result = runRequest(*executor, 4000, 10);
    for (auto const& stats : busyIterations(*executor))
    {
        CHECK(stats.iterLatencyMS == 3.0);
    }
    auto const& t = result.requestPerfMetrics->timingMetrics;
    CHECK_NEAR(milliseconds(t.firstTokenTime - t.arrivalTime), 3.0, 1e-6);
    CHECK_NEAR(milliseconds(t.lastTokenTime - t.firstTokenTime), 27.0, 1e-6);
}

void testRealClockReportsModeledLatencies()
{
    // time_scale 0 runs without sleeping; iterLatencyMS still reports the simulated time.
    EngineSpec spec;
    spec.sim = sim::SimConfig{};
    spec.sim.timeScale = 0.0;
    auto executor = makeExecutor(spec, withIterationStats());
    auto const wallStart = Clock::now();
    (void) runRequest(*executor, 8, 20);
    double const wallMs = milliseconds(Clock::now() - wallStart);
    auto const stats = busyIterations(*executor);
    REQUIRE(stats.size() == 20);
    double modeled = 0;
    for (auto const& s : stats)
    {
        CHECK(s.iterLatencyMS > 0.0);
        modeled += s.iterLatencyMS;
    }
    // Sleeping through the modelled time would take at least `modeled`; a loaded host may stretch
    // the run itself, so the bound is the modelled time and not a fraction of it.
    CHECK(wallMs < modeled);
}

// ---------------------------------------------------------------------------------------------------------------
// Beam search cost

void testGenerationChargesOneTokenPerBeam()
{
    EngineSpec spec;
    spec.model = kTiny;
    spec.maxBeamWidth = 4;
    spec.maxNumTokens = 8;
    spec.maxInputLen = 64;
    spec.maxSeqLen = 128;
    tle::ExecutorConfig config = withIterationStats();
    config.setMaxBeamWidth(4);
    auto executor = makeExecutor(spec, config);
    tle::Request request(tle::VecTokens{1, 2, 3}, 6);
    request.setSamplingConfig(tle::SamplingConfig(4));
    auto const ids = executor->enqueueRequests({request, request, request});
    std::set<tle::IdType> pending(ids.begin(), ids.end());
    auto const deadline = Clock::now() + 10s;
    while (!pending.empty() && Clock::now() < deadline)
    {
        for (auto const& response : executor->awaitResponses(50ms))
        {
            REQUIRE(!response.hasError());
            if (response.getResult().isFinal)
            {
                pending.erase(response.getRequestId());
            }
        }
    }
    REQUIRE(pending.empty());
    int most = 0;
    for (auto const& stats : busyIterations(*executor))
    {
        auto const& batch = *stats.inflightBatchingStats;
        // Four beams cost four tokens of the 8-token budget: at most two generation requests per iteration.
        CHECK(batch.numGenRequests * 4 + batch.numCtxTokens <= 8);
        most = std::max(most, batch.numGenRequests);
    }
    CHECK(most == 2);
}

} // namespace

int main()
{
    char pattern[] = "/tmp/sim-timing-test-XXXXXX";
    char* const dir = mkdtemp(pattern);
    if (dir == nullptr)
    {
        std::printf("cannot create a temporary directory\n");
        return 1;
    }
    gTempRoot = dir;
    int const status = test::runAll({
        {"virtual clock does not sleep and reports modeled latencies",
            testVirtualClockDoesNotSleepAndReportsModeledLatencies},
        {"virtual clock follows the wall clock when idle", testVirtualClockFollowsTheWallClockWhenIdle},
        {"fixed iteration_ms overrides the model", testFixedIterationMsOverridesTheModel},
        {"real clock reports modeled latencies", testRealClockReportsModeledLatencies},
        {"generation charges one token per beam", testGenerationChargesOneTokenPerBeam},
    });
    std::error_code ignored;
    fs::remove_all(gTempRoot, ignored);
    return status;
}
