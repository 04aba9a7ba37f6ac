// A small JSON document model and strict parser (RFC 8259) for the simulator's configuration files.
// It exists so the simulated executor has no third-party dependency; it is not a general-purpose library.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tensorrt_llm::executor::sim
{

/// One JSON value. Objects keep their members in document order; a repeated key resolves to its last
/// occurrence (as Python's json module does, which writes TensorRT-LLM's config.json files).
class Json
{
public:
    enum class Type
    {
        kNull,
        kBool,
        kNumber,
        kString,
        kArray,
        kObject,
    };

    using Array = std::vector<Json>;
    using Object = std::vector<std::pair<std::string, Json>>;

    Json() = default;
    static Json makeBool(bool value);
    static Json makeNumber(double value, std::optional<std::int64_t> integer);
    static Json makeString(std::string value);
    static Json makeArray(Array items);
    static Json makeObject(Object members);

    [[nodiscard]] Type type() const { return mType; }
    [[nodiscard]] bool isNull() const { return mType == Type::kNull; }
    [[nodiscard]] bool isBool() const { return mType == Type::kBool; }
    [[nodiscard]] bool isNumber() const { return mType == Type::kNumber; }
    [[nodiscard]] bool isString() const { return mType == Type::kString; }
    [[nodiscard]] bool isArray() const { return mType == Type::kArray; }
    [[nodiscard]] bool isObject() const { return mType == Type::kObject; }

    /// True for a number written without fraction or exponent that fits in 64 signed bits.
    [[nodiscard]] bool isInteger() const { return mType == Type::kNumber && mInteger.has_value(); }

    // The accessors below throw std::runtime_error when the value has another type.
    [[nodiscard]] bool asBool() const;
    [[nodiscard]] double asDouble() const;
    [[nodiscard]] std::int64_t asInteger() const;
    [[nodiscard]] std::string const& asString() const;
    [[nodiscard]] Array const& asArray() const;
    [[nodiscard]] Object const& asObject() const;

    /// The member named `key` of an object (its last occurrence), or nullptr when absent or not an object.
    [[nodiscard]] Json const* find(std::string_view key) const;

    /// Parses one complete document; throws std::runtime_error naming the byte offset of the first error.
    static Json parse(std::string_view text);

private:
    Type mType{Type::kNull};
    bool mBool{false};
    double mNumber{0.0};
    std::optional<std::int64_t> mInteger;
    std::string mString;
    Array mArray;
    Object mObject;
};

/// The name of a JSON type as used in error messages ("an object", "a string", ...).
char const* describeType(Json::Type type);

/// Typed access to the members of one JSON object of a configuration file. Every error names the file
/// and the member's dotted path, e.g. "config.json: build_config.max_batch_size must be an integer".
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

private:
    /// The member, or nullptr when absent or null (null means "use the default" throughout).
    [[nodiscard]] Json const* member(std::string_view key) const;

    Json const* mValue;
    std::string mFile;
    std::string mPath;
};

} // namespace tensorrt_llm::executor::sim
