// Reading the simulator's configuration files (config.json, simulation.json, the GPU presets): documents are
// parsed by nlohmann/json; JsonFields gives typed access whose every error names the file and the member.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tensorrt_llm::executor::sim
{

/// A parsed JSON document. A repeated key resolves to its last occurrence (as Python's json module does, which
/// writes TensorRT-LLM's config.json files).
using Json = nlohmann::json;

/// Parses one complete document; throws std::runtime_error "<file>: JSON parse error at byte N ..." naming the
/// zero-based byte offset where the input stopped making sense.
Json parseJson(std::string_view text, std::string const& file);

/// The name of a JSON value's type as used in error messages ("an object", "a string", ...).
char const* describeType(Json const& value);

/// Typed access to the members of one JSON object of a configuration file. Every error names the file and the
/// member's dotted path, e.g. "config.json: build_config.max_batch_size must be an integer". A member that is
/// absent or null means "use the default" throughout.
class JsonFields
{
public:
    /// Throws when `value` is not an object. `path` is the object's own dotted path ("" for the root).
    JsonFields(Json const& value, std::string file, std::string path);

    [[nodiscard]] bool has(std::string_view key) const;
    [[nodiscard]] std::optional<std::int64_t> integer(
        std::string_view key, std::int64_t min, std::int64_t max = std::numeric_limits<std::int64_t>::max()) const;
    [[nodiscard]] std::optional<double> number(std::string_view key, double min) const;
    [[nodiscard]] std::optional<bool> boolean(std::string_view key) const;
    [[nodiscard]] std::optional<std::string> string(std::string_view key) const;
    /// A nested object, or nullopt when the member is absent or null.
    [[nodiscard]] std::optional<JsonFields> object(std::string_view key) const;

    /// Throws if the object has a member not listed in `known` (catches misspelt settings).
    void rejectUnknown(std::vector<std::string_view> const& known) const;

    [[nodiscard]] std::string pathOf(std::string_view key) const;
    [[noreturn]] void fail(std::string_view key, std::string const& what) const;

    /// The object itself.
    [[nodiscard]] Json const& value() const { return *mValue; }

private:
    /// The member, or nullptr when absent or null.
    [[nodiscard]] Json const* member(std::string_view key) const;

    Json const* mValue;
    std::string mFile;
    std::string mPath;
};

} // namespace tensorrt_llm::executor::sim
