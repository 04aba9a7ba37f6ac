// Tests of the simulated GPU: presets, the iteration timing model, KV capacity from memory, and the real and
// virtual clocks, through the model's own interface and through the public Executor.
//
// Build: c++ -std=c++17 -O1 -pthread -I cpp/sim/include cpp/sim/src/*.cpp cpp/sim/tests/timing_test.cpp
#include "tensorrt_llm/executor/executor.h"

#include "../src/engine_config.h"
#include "../src/gpu_spec.h"
#include "../src/sim_config.h"
#include "../src/timing_model.h"
#include "test_harness.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
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
constexpr ModelShape kLlama8b{128256, 4096, 32, 32, 8, 128, 14336};
constexpr ModelShape kLlama70b{128256, 8192, 80, 64, 8, 128, 28672};
constexpr ModelShape kTiny{1000, 256, 2, 4, 2, 64, 512};

struct EngineSpec
{
    ModelShape model = kQwen7b;
    int tp = 1;
    /// JSON values (null or a quoted string).
    std::string quantAlgo = "null";
    std::string kvCacheQuantAlgo = "null";
    int maxInputLen = 8192;
    int maxSeqLen = 8704;
    int maxBatchSize = 256;
    int maxBeamWidth = 1;
    int maxNumTokens = 8192;
    int tokensPerBlock = 32;
    std::string simulation = R"({"gpu": "rtx-a6000", "clock": "virtual"})";
};

std::string configJson(EngineSpec const& spec)
{
    auto const& m = spec.model;
    std::ostringstream out;
    out << R"({"version": "1.2.0", "pretrained_config": {"architecture": "LlamaForCausalLM", "dtype": "bfloat16",)"
        << R"("vocab_size": )" << m.vocab << R"(, "hidden_size": )" << m.hidden << R"(, "num_hidden_layers": )"
        << m.layers << R"(, "num_attention_heads": )" << m.heads << R"(, "num_key_value_heads": )" << m.kvHeads
        << R"(, "head_size": )" << m.headSize << R"(, "intermediate_size": )" << m.intermediate
        << R"(, "max_position_embeddings": 131072, "mapping": {"world_size": )" << spec.tp << R"(, "tp_size": )"
        << spec.tp << R"(, "pp_size": 1}, "quantization": {"quant_algo": )" << spec.quantAlgo
        << R"(, "kv_cache_quant_algo": )" << spec.kvCacheQuantAlgo << R"(}}, "build_config": {"max_input_len": )"
        << spec.maxInputLen << R"(, "max_seq_len": )" << spec.maxSeqLen << R"(, "max_batch_size": )"
        << spec.maxBatchSize << R"(, "max_beam_width": )" << spec.maxBeamWidth << R"(, "max_num_tokens": )"
        << spec.maxNumTokens << R"(, "plugin_config": {"tokens_per_block": )" << spec.tokensPerBlock
        << R"(, "paged_kv_cache": true, "use_paged_context_fmha": true}}})";
    return out.str();
}

fs::path gTempRoot;

fs::path makeEngineDir(EngineSpec const& spec)
{
    static int counter = 0;
    fs::path const dir = gTempRoot / ("engine-" + std::to_string(counter++));
    fs::create_directories(dir);
    std::ofstream(dir / "config.json") << configJson(spec);
    std::ofstream(dir / "simulation.json") << spec.simulation;
    return dir;
}

std::unique_ptr<tle::Executor> makeExecutor(EngineSpec const& spec, tle::ExecutorConfig config = tle::ExecutorConfig())
{
    return std::make_unique<tle::Executor>(makeEngineDir(spec), tle::ModelType::kDECODER_ONLY, config);
}

sim::EngineConfig engineConfig(EngineSpec const& spec)
{
    return sim::EngineConfig::parse(configJson(spec), "config.json");
}

sim::TimingModel timingModel(EngineSpec const& spec, std::string const& gpu)
{
    return sim::TimingModel(engineConfig(spec), sim::GpuSpec::preset(gpu));
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

/// Single-stream decode rate from a request's perf metrics: tokens after the first over their time span.
double decodeTokensPerSecond(tle::Result const& result, int maxTokens)
{
    auto const& t = result.requestPerfMetrics->timingMetrics;
    return (maxTokens - 1) / (milliseconds(t.lastTokenTime - t.firstTokenTime) / 1000.0);
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

// ---------------------------------------------------------------------------------------------------------------
// Presets

void testGpuPresetsCarryTheirFigures()
{
    std::set<std::string> ids;
    for (auto const& gpu : sim::GpuSpec::presets())
    {
        ids.insert(gpu.id);
        CHECK(gpu.memoryGib > 0 && gpu.bandwidthGbS > 0 && gpu.bf16Tflops > 0 && gpu.interconnectGbS > 0);
        CHECK(gpu.bandwidthEfficiency > 0 && gpu.bandwidthEfficiency <= 1);
        CHECK(gpu.mfu > 0 && gpu.mfu <= 1);
        // FP8 tensor cores exist from Ada (sm89) on.
        CHECK(gpu.hasFp8() == (gpu.architecture != "Ampere"));
    }
    CHECK(ids == (std::set<std::string>{"rtx-a6000", "l40s", "a100-sxm-80gb", "h100-sxm", "h200"}));
    auto const h100 = sim::GpuSpec::preset("h100-sxm");
    CHECK_NEAR(h100.bandwidthGbS, 3350, 0);
    CHECK_NEAR(*h100.fp8Tflops, 1979, 0);
    CHECK(test::throwsWith([]() { sim::GpuSpec::preset("h100"); }, "known: rtx-a6000, l40s"));
}

void testSimulationJsonSelectsAndOverridesTheGpu()
{
    auto const config = sim::SimConfig::parse(
        R"({"gpu": "h200", "gpu_overrides": {"bandwidth_gb_s": 4000, "mfu": 0.5}, "clock": "virtual"})",
        "simulation.json");
    auto const gpu = config.resolveGpu();
    CHECK(gpu.id == "h200");
    CHECK_NEAR(gpu.bandwidthGbS, 4000, 0);
    CHECK_NEAR(gpu.mfu, 0.5, 0);
    CHECK_NEAR(gpu.bf16Tflops, 989, 0);
    CHECK(config.clock == sim::ClockMode::kVirtual);

    CHECK(test::throwsWith([]() { sim::SimConfig::parse(R"({"gpu": "b200"})", "simulation.json"); },
        "simulation.json: gpu unknown GPU preset \"b200\""));
    CHECK(test::throwsWith(
        []() { sim::SimConfig::parse(R"({"gpu_overrides": {"bandwith_gb_s": 1}})", "simulation.json"); },
        "gpu_overrides.bandwith_gb_s is not a known setting"));
    CHECK(test::throwsWith([]() { sim::SimConfig::parse(R"({"gpu_overrides": {"mfu": 1.5}})", "simulation.json"); },
        "gpu_overrides.mfu must be a fraction in (0, 1]"));
    CHECK(test::throwsWith([]() { sim::SimConfig::parse(R"({"clock": "fast"})", "simulation.json"); },
        "clock must be \"real\" or \"virtual\""));

    // An override reaches the timing: half the bandwidth, about twice the (memory-bound) decode step.
    EngineSpec spec;
    auto const normal = timingModel(spec, "h200");
    sim::GpuSpec slow = sim::GpuSpec::preset("h200");
    slow.applyOverrides({{"bandwidth_gb_s", 2400}});
    sim::TimingModel const halved(engineConfig(spec), slow);
    sim::BatchWork decode;
    decode.addGeneration(1000, 1);
    CHECK_NEAR(halved.iteration(decode).memoryMs, 2 * normal.iteration(decode).memoryMs, 1e-9);
}

// ---------------------------------------------------------------------------------------------------------------
// The timing model

void testDecodeTimeGrowsWithBatchKvAndContext()
{
    auto const model = timingModel(EngineSpec{}, "rtx-a6000");
    auto const decode = [&](int batch, int context)
    {
        sim::BatchWork work;
        for (int i = 0; i < batch; ++i)
        {
            work.addGeneration(context, 1);
        }
        return model.iteration(work);
    };
    auto const single = decode(1, 100);
    // One short sequence streams the weights once: memory-bound, close to weights / achieved bandwidth.
    CHECK(single.memoryMs > single.computeMs);
    double const weightsMs = model.streamedWeightBytesPerGpu() / (768e9 * 0.83) * 1e3;
    CHECK_NEAR(single.memoryMs, weightsMs, 0.01 * weightsMs);
    // A longer context reads more KV cache, so does a larger batch; neither re-reads the weights.
    CHECK(decode(1, 30000).totalMs > single.totalMs);
    CHECK(decode(32, 2000).totalMs > decode(32, 1000).totalMs);
    CHECK(decode(32, 1000).totalMs > decode(8, 1000).totalMs);
    double const kvMs = 32 * 1000 * model.kvBytesPerTokenPerGpu() / (768e9 * 0.83) * 1e3;
    CHECK_NEAR(decode(32, 1000).memoryMs - decode(1, 1000).memoryMs, kvMs * 31.0 / 32.0, 0.05);
    // Far fewer than 32x: batching amortises the weights.
    CHECK(decode(32, 1000).totalMs < 2 * single.totalMs);
    // A large batch becomes compute-bound (the A6000's ridge is at ~150 rows).
    auto const large = decode(256, 100);
    CHECK(large.computeMs > large.memoryMs);
}

void testPrefillIsComputeBoundAndScalesWithTokens()
{
    auto const model = timingModel(EngineSpec{}, "rtx-a6000");
    auto const prefill = [&](int tokens)
    {
        sim::BatchWork work;
        work.addContext(tokens, 0, true);
        return model.iteration(work);
    };
    auto const p2k = prefill(2048);
    auto const p4k = prefill(4096);
    CHECK(p2k.computeMs > 3 * p2k.memoryMs);
    CHECK(p2k.totalMs == p2k.overheadMs + p2k.computeMs);
    // Linear in tokens plus an attention term that grows faster: slightly more than twice.
    double const ratio = (p4k.totalMs - p4k.overheadMs) / (p2k.totalMs - p2k.overheadMs);
    CHECK(ratio > 2.0 && ratio < 2.2);
    // 2 FLOPs per parameter per token at the preset's MFU, give or take attention and the output head.
    double const linearMs = 2.0 * 6.525e9 * 2048 / (154.8e12 * 0.6) * 1e3;
    CHECK(p2k.computeMs > linearMs && p2k.computeMs < 1.15 * linearMs);
    // A chunk after cached context costs more than the same chunk alone (it attends to the cache).
    sim::BatchWork chunk;
    chunk.addContext(2048, 6144, true);
    CHECK(model.iteration(chunk).computeMs > p2k.computeMs);
}

void testFp8WeightsCutDecodeTime()
{
    EngineSpec bf16;
    bf16.model = kLlama70b;
    bf16.tp = 4;
    EngineSpec fp8 = bf16;
    fp8.quantAlgo = R"("FP8")";
    fp8.kvCacheQuantAlgo = R"("FP8")";
    auto const slow = timingModel(bf16, "h100-sxm");
    auto const fast = timingModel(fp8, "h100-sxm");
    sim::BatchWork work;
    work.addGeneration(4000, 1);
    // One byte per linear weight instead of two (the output head stays 16-bit): a little over half the bytes.
    double const ratio = fast.iteration(work).memoryMs / slow.iteration(work).memoryMs;
    CHECK(ratio > 0.5 && ratio < 0.53);
    CHECK(fast.iteration(work).totalMs < 0.6 * slow.iteration(work).totalMs);
    CHECK_NEAR(fast.kvBytesPerTokenPerGpu(), slow.kvBytesPerTokenPerGpu() / 2, 0);
    // Prefill runs at the FP8 tensor rate.
    sim::BatchWork prefill;
    prefill.addContext(8192, 0, true);
    CHECK(fast.iteration(prefill).computeMs < 0.6 * slow.iteration(prefill).computeMs);
}

void testTensorParallelSplitsWeightsKvAndCompute()
{
    EngineSpec one;
    one.model = kLlama8b;
    EngineSpec two = one;
    two.tp = 2;
    auto const single = timingModel(one, "h100-sxm");
    auto const split = timingModel(two, "h100-sxm");
    CHECK_NEAR(split.streamedWeightBytesPerGpu(), single.streamedWeightBytesPerGpu() / 2, 1e6);
    CHECK_NEAR(split.kvBytesPerTokenPerGpu(), single.kvBytesPerTokenPerGpu() / 2, 0);
    sim::BatchWork decode;
    decode.addGeneration(1000, 1);
    CHECK_NEAR(split.iteration(decode).memoryMs, single.iteration(decode).memoryMs / 2, 0.01);
    CHECK(single.iteration(decode).allreduceMs == 0.0);
    // Two all-reduces per layer, each at least the link latency.
    CHECK(split.iteration(decode).allreduceMs >= 2 * 32 * 8e-3);
    sim::BatchWork prefill;
    prefill.addContext(4096, 0, true);
    CHECK_NEAR(split.iteration(prefill).computeMs, single.iteration(prefill).computeMs / 2, 0.01);

    // More ranks than KV heads: each rank keeps one head's worth.
    EngineSpec sixteen = one;
    sixteen.model = kLlama70b;
    sixteen.tp = 16;
    EngineSpec eight = sixteen;
    eight.tp = 8;
    CHECK_NEAR(timingModel(sixteen, "h100-sxm").kvBytesPerTokenPerGpu(),
        timingModel(eight, "h100-sxm").kvBytesPerTokenPerGpu(), 0);
}

void testFp8NeedsAdaOrHopper()
{
    EngineSpec fp8;
    fp8.quantAlgo = R"("FP8")";
    CHECK(test::throwsWith([&]() { timingModel(fp8, "rtx-a6000"); }, "FP8 tensor cores are needed"));
    CHECK(test::throwsWith([&]() { timingModel(fp8, "a100-sxm-80gb"); }, "Ampere"));
    (void) timingModel(fp8, "l40s");
    EngineSpec fp8Kv;
    fp8Kv.kvCacheQuantAlgo = R"("FP8")";
    CHECK(test::throwsWith([&]() { timingModel(fp8Kv, "a100-sxm-80gb"); }, "FP8 KV cache"));
    EngineSpec unknown;
    unknown.quantAlgo = R"("NVFP4")";
    CHECK(test::throwsWith([&]() { timingModel(unknown, "h100-sxm"); }, "quant_algo \"NVFP4\" is not modelled"));
    // The executor refuses such an engine at construction.
    fp8.simulation = R"({"gpu": "rtx-a6000"})";
    CHECK(test::throwsWith([&]() { makeExecutor(fp8); }, "FP8 tensor cores are needed"));
}

// ---------------------------------------------------------------------------------------------------------------
// KV capacity and memory

void testKvCapacityFromMemoryTimesFractionAndMaxTokens()
{
    EngineSpec spec;
    spec.simulation = R"({"gpu": "rtx-a6000", "clock": "virtual"})";
    auto const model = timingModel(spec, "rtx-a6000");
    double const reserve = model.runtimeReserveBytes(spec.maxNumTokens, spec.maxBatchSize, spec.maxBeamWidth);
    auto const blocksAt = [&](double fraction)
    {
        double const free = 48.0 * (1 << 30) - model.weightBytesPerGpu() - reserve;
        return static_cast<int>(std::floor(free * fraction / model.kvBytesPerTokenPerGpu()) / 32);
    };
    auto const maxBlocks = [&](tle::ExecutorConfig config)
    {
        config.setIterStatsMaxIterations(10);
        auto executor = makeExecutor(spec, config);
        (void) runRequest(*executor, 8, 2);
        auto const stats = busyIterations(*executor);
        REQUIRE(!stats.empty() && stats[0].kvCacheStats);
        return std::make_pair(stats[0].kvCacheStats->maxNumBlocks, stats[0].gpuMemUsage);
    };

    // The default fraction is 0.9; Qwen2.5-7B in BF16 leaves roughly half a million tokens on a 48 GiB GPU.
    auto const [defaultBlocks, memUsage] = maxBlocks(tle::ExecutorConfig());
    CHECK(defaultBlocks == blocksAt(0.9f));
    CHECK(defaultBlocks * 32 > 400000 && defaultBlocks * 32 < 700000);
    // gpuMemUsage: weights + the KV pool + the reserve, under the GPU's memory.
    double const expectedUsage = model.weightBytesPerGpu() + reserve
                                 + static_cast<double>(defaultBlocks) * 32 * model.kvBytesPerTokenPerGpu();
    CHECK_NEAR(static_cast<double>(memUsage), expectedUsage, 1.0);
    CHECK(static_cast<double>(memUsage) < 48.0 * (1 << 30));

    tle::ExecutorConfig half;
    tle::KvCacheConfig halfCache;
    halfCache.setFreeGpuMemoryFraction(0.45f);
    half.setKvCacheConfig(halfCache);
    CHECK(maxBlocks(half).first == blocksAt(0.45f));

    // KvCacheConfig::maxTokens wins when smaller; the larger of the two never applies.
    tle::ExecutorConfig capped;
    capped.setKvCacheConfig(tle::KvCacheConfig(true, 1000));
    CHECK(maxBlocks(capped).first == 1000 / 32);
    tle::ExecutorConfig generous;
    generous.setKvCacheConfig(tle::KvCacheConfig(true, 100000000));
    CHECK(maxBlocks(generous).first == defaultBlocks);

    // simulation.json's kv_cache_max_tokens replaces the memory-derived figure.
    spec.simulation = R"({"gpu": "rtx-a6000", "kv_cache_max_tokens": 4096})";
    CHECK(maxBlocks(tle::ExecutorConfig()).first == 4096 / 32);
}

void testWeightsThatDoNotFitThrow()
{
    EngineSpec spec;
    spec.model = kLlama70b;
    spec.simulation = R"({"gpu": "h100-sxm"})";
    CHECK(test::throwsWith([&]() { makeExecutor(spec); }, "does not fit the simulated GPU"));
    // Four-way tensor parallelism fits, as does FP8 on two H100s.
    spec.tp = 4;
    (void) makeExecutor(spec);
    spec.tp = 2;
    spec.quantAlgo = R"("FP8")";
    (void) makeExecutor(spec);
}

// ---------------------------------------------------------------------------------------------------------------
// Clocks and calibration

void testA6000CalibrationReproducesQwenDecodeRate()
{
    // The reference: Qwen2.5-7B-Instruct in BF16 on one RTX A6000 decodes about 44 tokens/s with short and long
    // prompts (256 output tokens). "About 44" spans 43.5 to 44.5.
    auto executor = makeExecutor(EngineSpec{});
    for (int const promptLength : {360, 2200})
    {
        double const rate = decodeTokensPerSecond(runRequest(*executor, promptLength, 256), 256);
        std::printf("    prompt %d: %.2f tokens/s\n", promptLength, rate);
        CHECK(rate >= 43.5 && rate <= 44.5);
    }
}

void testVirtualClockDoesNotSleepAndReportsModeledLatencies()
{
    EngineSpec spec;
    auto executor = makeExecutor(spec, withIterationStats());
    auto const model = timingModel(spec, "rtx-a6000");
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
    // About 1.6 simulated seconds; the run itself took a small fraction of that.
    CHECK(modeledTotal > 1000);
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
    spec.simulation = R"({"gpu": "rtx-a6000", "iteration_ms": 3, "clock": "virtual"})";
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
    spec.simulation = R"({"gpu": "rtx-a6000", "time_scale": 0})";
    auto executor = makeExecutor(spec, withIterationStats());
    auto const wallStart = Clock::now();
    (void) runRequest(*executor, 8, 20);
    double const wallMs = milliseconds(Clock::now() - wallStart);
    auto const stats = busyIterations(*executor);
    REQUIRE(stats.size() == 20);
    double modeled = 0;
    for (auto const& s : stats)
    {
        CHECK(s.iterLatencyMS > 22.0 && s.iterLatencyMS < 23.5);
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
        {"GPU presets carry their figures", testGpuPresetsCarryTheirFigures},
        {"simulation.json selects and overrides the GPU", testSimulationJsonSelectsAndOverridesTheGpu},
        {"decode time grows with batch KV and context", testDecodeTimeGrowsWithBatchKvAndContext},
        {"prefill is compute-bound and scales with tokens", testPrefillIsComputeBoundAndScalesWithTokens},
        {"FP8 weights cut decode time", testFp8WeightsCutDecodeTime},
        {"tensor parallelism splits weights, KV and compute", testTensorParallelSplitsWeightsKvAndCompute},
        {"FP8 needs Ada or Hopper", testFp8NeedsAdaOrHopper},
        {"KV capacity from memory x fraction, and maxTokens", testKvCapacityFromMemoryTimesFractionAndMaxTokens},
        {"weights that do not fit throw", testWeightsThatDoNotFitThrow},
        {"A6000 calibration reproduces Qwen2.5-7B decode rate", testA6000CalibrationReproducesQwenDecodeRate},
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
