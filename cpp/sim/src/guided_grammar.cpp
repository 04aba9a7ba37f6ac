// The grammar engine behind guided decoding (see guided_grammar.h): llguidance through the sim-only Rust bridge,
// or a fallback that refuses guided requests when the simulator is built without Rust.
#include "guided_grammar.h"

#include <stdexcept>
#include <string>
#include <utility>

#ifdef TRTLLM_SIM_RUST_GRAMMAR
#include "rust/cxx.h"
#include "trtllm/src/sim/guided/bridge.rs.h"
#endif

namespace tensorrt_llm::executor::sim
{

namespace
{

#ifdef TRTLLM_SIM_RUST_GRAMMAR

namespace bridge = ::trtllm::sim::guided;

/// Runs a bridge call: a Rust error arrives as rust::Error, the execution loop expects std::runtime_error.
template <typename F>
auto call(F&& f) -> decltype(f())
{
    try
    {
        return f();
    }
    catch (::rust::Error const& e)
    {
        throw std::runtime_error(std::string("guided decoding: ") + e.what());
    }
}

class RustGrammarState final : public GrammarState
{
public:
    explicit RustGrammarState(::rust::Box<bridge::SimGrammarMatcher> matcher)
        : mMatcher(std::move(matcher))
    {
    }

    TokenIdType chooseToken(std::uint64_t seed) override
    {
        return call([&] { return bridge::choose_token(*mMatcher, seed); });
    }

    void consume(TokenIdType token) override
    {
        call([&] {
            bridge::consume(*mMatcher, token);
            return 0;
        });
        mFinished = bridge::is_finished(*mMatcher);
    }

    [[nodiscard]] bool isFinished() const override
    {
        return mFinished;
    }

private:
    ::rust::Box<bridge::SimGrammarMatcher> mMatcher;
    bool mFinished{false};
};

class RustGrammarBackend final : public GrammarBackend
{
public:
    explicit RustGrammarBackend(::rust::Box<bridge::SimGrammarFactory> factory)
        : mFactory(std::move(factory))
    {
    }

    std::unique_ptr<GrammarState> compile(GuidedDecodingParams const& params) const override
    {
        auto const guide = params.getGuide();
        try
        {
            auto matcher = bridge::new_matcher(*mFactory, static_cast<std::int32_t>(params.getGuideType()),
                guide.value_or(std::string()), guide.has_value());
            return std::make_unique<RustGrammarState>(std::move(matcher));
        }
        catch (::rust::Error const& e)
        {
            throw std::runtime_error(std::string("guided decoding: ") + e.what());
        }
    }

private:
    ::rust::Box<bridge::SimGrammarFactory> mFactory;
};

std::unique_ptr<GrammarBackend> makeBackend(GuidedDecodingConfig const& config)
{
    ::rust::Vec<::rust::String> vocab;
    auto const encoded = config.getEncodedVocab().value_or(std::vector<std::string>{});
    vocab.reserve(encoded.size());
    for (auto const& token : encoded)
    {
        // rust::String requires UTF-8; tokenizer.json vocabularies are JSON strings, so they are.
        vocab.push_back(::rust::String::lossy(token));
    }
    auto const tokenizer = config.getTokenizerStr();
    auto const stops = config.getStopTokenIds().value_or(std::vector<TokenIdType>{});
    try
    {
        auto factory = bridge::new_factory(vocab, tokenizer.value_or(std::string()), tokenizer.has_value(),
            ::rust::Slice<std::int32_t const>(stops.data(), stops.size()));
        return std::make_unique<RustGrammarBackend>(std::move(factory));
    }
    catch (::rust::Error const& e)
    {
        throw std::runtime_error(std::string("GuidedDecodingConfig: ") + e.what());
    }
}

#else

class UnavailableGrammarBackend final : public GrammarBackend
{
public:
    std::unique_ptr<GrammarState> compile(GuidedDecodingParams const& /*params*/) const override
    {
        throw std::runtime_error(
            "guided decoding needs the simulator's grammar engine (llguidance), which is only linked into the "
            "trtllm crate's simulated build; this build of the simulator has none");
    }
};

std::unique_ptr<GrammarBackend> makeBackend(GuidedDecodingConfig const& /*config*/)
{
    return std::make_unique<UnavailableGrammarBackend>();
}

#endif

} // namespace

std::unique_ptr<GrammarBackend> makeGrammarBackend(GuidedDecodingConfig const& config)
{
    config.validate();
    return makeBackend(config);
}

} // namespace tensorrt_llm::executor::sim
