// The simulated cache transceiver's serialized state (cache_transceiver.h): what ContextPhaseParams carry across a
// process boundary, in a versioned little-endian layout the receiver checks as it reads.
#include "cache_transceiver.h"

#include <algorithm>
#include <cstring>
#include <iterator>

namespace tensorrt_llm::executor::sim
{

namespace
{

/// "SKVS" and the layout's version.
constexpr char kMagic[4] = {'S', 'K', 'V', 'S'};
constexpr std::uint8_t kVersion = 1;

template <typename T>
void put(std::vector<char>& out, T value)
{
    char bytes[sizeof(T)];
    std::memcpy(bytes, &value, sizeof(T));
    out.insert(out.end(), bytes, bytes + sizeof(T));
}

/// Reads the state front to back; every read checks what is left first.
class Reader
{
public:
    explicit Reader(std::vector<char> const& bytes)
        : mBytes(bytes)
    {
    }

    template <typename T>
    bool get(T& value)
    {
        if (mBytes.size() - mOffset < sizeof(T))
        {
            return false;
        }
        std::memcpy(&value, mBytes.data() + mOffset, sizeof(T));
        mOffset += sizeof(T);
        return true;
    }

    bool get(std::string& text, std::size_t length)
    {
        if (mBytes.size() - mOffset < length)
        {
            return false;
        }
        text.assign(mBytes.data() + mOffset, length);
        mOffset += length;
        return true;
    }

    [[nodiscard]] bool done() const { return mOffset == mBytes.size(); }

private:
    std::vector<char> const& mBytes;
    std::size_t mOffset{0};
};

} // namespace

// ---------------------------------------------------------------------------------------------------------------
// The serialized state

std::vector<char> serializeState(TransferState const& state)
{
    std::vector<char> out(std::begin(kMagic), std::end(kMagic));
    put(out, kVersion);
    put(out, state.processId);
    put(out, state.instanceId);
    put(out, static_cast<std::uint64_t>(state.contextRequestId));
    put(out, state.promptLength);
    put(out, state.expiresAtUnixMs);
    put(out, static_cast<std::uint32_t>(state.fingerprint.size()));
    out.insert(out.end(), state.fingerprint.begin(), state.fingerprint.end());
    return out;
}

std::optional<TransferState> parseState(std::vector<char> const& bytes, std::string& why)
{
    if (bytes.size() < sizeof(kMagic) || !std::equal(std::begin(kMagic), std::end(kMagic), bytes.begin()))
    {
        why = "not a simulated executor's transfer state";
        return std::nullopt;
    }
    std::vector<char> const body(bytes.begin() + sizeof(kMagic), bytes.end());
    Reader reader(body);
    std::uint8_t version = 0;
    TransferState state;
    std::uint64_t requestId = 0;
    std::uint32_t fingerprintLength = 0;
    if (!reader.get(version) || version != kVersion)
    {
        why = "unknown state version";
        return std::nullopt;
    }
    if (!reader.get(state.processId) || !reader.get(state.instanceId) || !reader.get(requestId)
        || !reader.get(state.promptLength) || !reader.get(state.expiresAtUnixMs) || !reader.get(fingerprintLength)
        || !reader.get(state.fingerprint, fingerprintLength) || !reader.done())
    {
        why = "truncated or malformed state";
        return std::nullopt;
    }
    state.contextRequestId = requestId;
    return state;
}

} // namespace tensorrt_llm::executor::sim
