// The simulated SamplingConfig: holds what it is given and rejects out-of-range values by throwing, as
// TensorRT-LLM's does.
#include "tensorrt_llm/executor/executor.h"

#include "value_checks.h"

namespace tensorrt_llm::executor
{

namespace
{

using sim::check;
using sim::checkAtLeast;
using sim::kMaxBeamWidthSupported;

SizeType32 checkBeamWidth(SizeType32 beamWidth)
{
    check(beamWidth > 0 && beamWidth <= kMaxBeamWidthSupported, "beamWidth > 0 && beamWidth <= kMaxBeamWidth (1024)");
    return beamWidth;
}

std::optional<FloatType> const& checkUnitInterval(
    std::optional<FloatType> const& value, bool allowZero, char const* what)
{
    check(!value || ((allowZero ? *value >= 0.f : *value > 0.f) && *value <= 1.f), what);
    return value;
}

std::optional<SizeType32> const& checkNumReturnSequences(
    std::optional<SizeType32> const& numReturnSequences, SizeType32 beamWidth)
{
    check(!numReturnSequences || *numReturnSequences > 0, "numReturnSequences > 0");
    check(!numReturnSequences || beamWidth == 1 || *numReturnSequences <= beamWidth,
        "beamWidth == 1 || numReturnSequences <= beamWidth");
    return numReturnSequences;
}

} // namespace

SamplingConfig::SamplingConfig(SizeType32 beamWidth, std::optional<SizeType32> const& topK,
    std::optional<FloatType> const& topP, std::optional<FloatType> const& topPMin,
    std::optional<TokenIdType> const& topPResetIds, std::optional<FloatType> const& topPDecay,
    std::optional<RandomSeedType> const& seed, std::optional<FloatType> const& temperature,
    std::optional<SizeType32> const& minTokens)
    : mBeamWidth(checkBeamWidth(beamWidth))
    , mTopK(checkAtLeast(topK, 0, "topK >= 0"))
    , mTopP(checkUnitInterval(topP, false, "topP > 0 && topP <= 1"))
    , mTopPMin(checkUnitInterval(topPMin, true, "topPMin >= 0 && topPMin <= 1"))
    , mTopPResetIds(checkAtLeast(topPResetIds, 0, "topPResetIds >= 0"))
    , mTopPDecay(checkUnitInterval(topPDecay, false, "topPDecay > 0 && topPDecay <= 1"))
    , mSeed(seed)
    , mTemperature(checkAtLeast(temperature, 0.f, "temperature >= 0"))
    , mMinTokens(checkAtLeast(minTokens, 0, "minTokens >= 0"))
{
}

SizeType32 SamplingConfig::getBeamWidth() const
{
    return mBeamWidth;
}

SizeType32 SamplingConfig::getNumReturnBeams() const
{
    return (mNumReturnSequences && mBeamWidth > 1) ? std::min(*mNumReturnSequences, mBeamWidth) : mBeamWidth;
}

std::optional<SizeType32> SamplingConfig::getTopK() const
{
    return mTopK;
}

std::optional<FloatType> SamplingConfig::getTopP() const
{
    return mTopP;
}

std::optional<RandomSeedType> SamplingConfig::getSeed() const
{
    return mSeed;
}

std::optional<FloatType> SamplingConfig::getTemperature() const
{
    return mTemperature;
}

std::optional<SizeType32> SamplingConfig::getMinTokens() const
{
    return mMinTokens;
}

std::optional<SizeType32> SamplingConfig::getNumReturnSequences() const
{
    return mNumReturnSequences;
}

void SamplingConfig::setBeamWidth(SizeType32 beamWidth)
{
    mBeamWidth = checkBeamWidth(beamWidth);
}

void SamplingConfig::setTopK(std::optional<SizeType32> const& topK)
{
    mTopK = checkAtLeast(topK, 0, "topK >= 0");
}

void SamplingConfig::setTopP(std::optional<FloatType> const& topP)
{
    mTopP = checkUnitInterval(topP, false, "topP > 0 && topP <= 1");
}

void SamplingConfig::setTopPMin(std::optional<FloatType> const& topPMin)
{
    mTopPMin = checkUnitInterval(topPMin, true, "topPMin >= 0 && topPMin <= 1");
}

void SamplingConfig::setTopPResetIds(std::optional<TokenIdType> const& topPResetIds)
{
    mTopPResetIds = checkAtLeast(topPResetIds, 0, "topPResetIds >= 0");
}

void SamplingConfig::setTopPDecay(std::optional<FloatType> const& topPDecay)
{
    mTopPDecay = checkUnitInterval(topPDecay, false, "topPDecay > 0 && topPDecay <= 1");
}

void SamplingConfig::setSeed(std::optional<RandomSeedType> const& seed)
{
    mSeed = seed;
}

void SamplingConfig::setTemperature(std::optional<FloatType> const& temperature)
{
    mTemperature = checkAtLeast(temperature, 0.f, "temperature >= 0");
}

void SamplingConfig::setMinTokens(std::optional<SizeType32> const& minTokens)
{
    mMinTokens = checkAtLeast(minTokens, 0, "minTokens >= 0");
}

void SamplingConfig::setBeamSearchDiversityRate(std::optional<FloatType> const& beamSearchDiversityRate)
{
    mBeamSearchDiversityRate = checkAtLeast(beamSearchDiversityRate, 0.f, "beamSearchDiversityRate >= 0");
}

void SamplingConfig::setRepetitionPenalty(std::optional<FloatType> const& repetitionPenalty)
{
    check(!repetitionPenalty || *repetitionPenalty > 0.f, "repetitionPenalty > 0");
    mRepetitionPenalty = repetitionPenalty;
}

void SamplingConfig::setPresencePenalty(std::optional<FloatType> const& presencePenalty)
{
    mPresencePenalty = presencePenalty;
}

void SamplingConfig::setFrequencyPenalty(std::optional<FloatType> const& frequencyPenalty)
{
    mFrequencyPenalty = frequencyPenalty;
}

void SamplingConfig::setLengthPenalty(std::optional<FloatType> const& lengthPenalty)
{
    mLengthPenalty = lengthPenalty;
}

void SamplingConfig::setEarlyStopping(std::optional<SizeType32> const& earlyStopping)
{
    mEarlyStopping = earlyStopping;
}

void SamplingConfig::setNoRepeatNgramSize(std::optional<SizeType32> const& noRepeatNgramSize)
{
    mNoRepeatNgramSize = checkAtLeast(noRepeatNgramSize, 0, "noRepeatNgramSize >= 0");
}

void SamplingConfig::setNumReturnSequences(std::optional<SizeType32> const& numReturnSequences)
{
    mNumReturnSequences = checkNumReturnSequences(numReturnSequences, mBeamWidth);
}

void SamplingConfig::setMinP(std::optional<FloatType> const& minP)
{
    mMinP = checkUnitInterval(minP, true, "minP >= 0 && minP <= 1");
}

} // namespace tensorrt_llm::executor
