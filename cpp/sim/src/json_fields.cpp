// Typed, error-naming access to configuration documents parsed by nlohmann/json (see json_fields.h).
#include "json_fields.h"

#include <locale>
#include <sstream>
#include <stdexcept>

namespace tensorrt_llm::executor::sim
{

namespace
{

/// nlohmann's message without its "[json.exception...] parse error at line L, column C: " prefix.
std::string plainMessage(std::string const& what)
{
    auto const column = what.find(", column ");
    auto const colon = column == std::string::npos ? what.find("] ") : what.find(": ", column);
    if (colon == std::string::npos)
    {
        return what;
    }
    return what.substr(colon + 2);
}

} // namespace

Json parseJson(std::string_view text, std::string const& file)
{
    try
    {
        return Json::parse(text.begin(), text.end());
    }
    catch (Json::parse_error const& e)
    {
        // nlohmann counts the byte it stopped at from one; report a zero-based offset.
        std::size_t const offset = e.byte > 0 ? e.byte - 1 : 0;
        throw std::runtime_error(
            file + ": JSON parse error at byte " + std::to_string(offset) + ": " + plainMessage(e.what()));
    }
    catch (Json::exception const& e)
    {
        // Not a syntax error: a number out of range, invalid UTF-8 in a string, ...
        throw std::runtime_error(file + ": JSON parse error: " + plainMessage(e.what()));
    }
}

char const* describeType(Json const& value)
{
    switch (value.type())
    {
    case Json::value_t::null: return "null";
    case Json::value_t::boolean: return "a boolean";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
    case Json::value_t::number_float: return "a number";
    case Json::value_t::string: return "a string";
    case Json::value_t::array: return "an array";
    case Json::value_t::object: return "an object";
    case Json::value_t::binary:
    case Json::value_t::discarded: break;
    }
    return "an unknown value";
}

JsonFields::JsonFields(Json const& value, std::string file, std::string path)
    : mValue(&value)
    , mFile(std::move(file))
    , mPath(std::move(path))
{
    if (!value.is_object())
    {
        throw std::runtime_error(mFile + ": " + (mPath.empty() ? std::string("the document") : mPath)
                                 + " must be an object, got " + describeType(value));
    }
}

std::string JsonFields::pathOf(std::string_view key) const
{
    return mPath.empty() ? std::string(key) : mPath + "." + std::string(key);
}

void JsonFields::fail(std::string_view key, std::string const& what) const
{
    throw std::runtime_error(mFile + ": " + pathOf(key) + " " + what);
}

Json const* JsonFields::member(std::string_view key) const
{
    auto const found = mValue->find(std::string(key));
    return (found == mValue->end() || found->is_null()) ? nullptr : &*found;
}

bool JsonFields::has(std::string_view key) const
{
    return member(key) != nullptr;
}

std::optional<std::int64_t> JsonFields::integer(std::string_view key, std::int64_t min, std::int64_t max) const
{
    Json const* value = member(key);
    if (value == nullptr)
    {
        return std::nullopt;
    }
    if (value->is_number_unsigned()
        && value->get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
    {
        fail(key, "must be in [" + std::to_string(min) + ", " + std::to_string(max) + "], got "
                + std::to_string(value->get<std::uint64_t>()));
    }
    if (!value->is_number_integer())
    {
        fail(key,
            std::string("must be an integer, got ") + (value->is_number() ? "a non-integral number" : describeType(*value)));
    }
    std::int64_t const result = value->get<std::int64_t>();
    if (result < min || result > max)
    {
        fail(key,
            "must be in [" + std::to_string(min) + ", " + std::to_string(max) + "], got " + std::to_string(result));
    }
    return result;
}

std::optional<double> JsonFields::number(std::string_view key, double min) const
{
    Json const* value = member(key);
    if (value == nullptr)
    {
        return std::nullopt;
    }
    if (!value->is_number())
    {
        fail(key, std::string("must be a number, got ") + describeType(*value));
    }
    double const result = value->get<double>();
    if (result < min)
    {
        std::ostringstream message;
        message.imbue(std::locale::classic());
        message << "must be at least " << min << ", got " << result;
        fail(key, message.str());
    }
    return result;
}

std::optional<bool> JsonFields::boolean(std::string_view key) const
{
    Json const* value = member(key);
    if (value == nullptr)
    {
        return std::nullopt;
    }
    if (!value->is_boolean())
    {
        fail(key, std::string("must be a boolean, got ") + describeType(*value));
    }
    return value->get<bool>();
}

std::optional<std::string> JsonFields::string(std::string_view key) const
{
    Json const* value = member(key);
    if (value == nullptr)
    {
        return std::nullopt;
    }
    if (!value->is_string())
    {
        fail(key, std::string("must be a string, got ") + describeType(*value));
    }
    return value->get<std::string>();
}

std::optional<JsonFields> JsonFields::object(std::string_view key) const
{
    Json const* value = member(key);
    if (value == nullptr)
    {
        return std::nullopt;
    }
    return JsonFields(*value, mFile, pathOf(key));
}

void JsonFields::rejectUnknown(std::vector<std::string_view> const& known) const
{
    for (auto const& item : mValue->items())
    {
        bool found = false;
        for (auto const& name : known)
        {
            found = found || name == item.key();
        }
        if (!found)
        {
            std::string list;
            for (auto const& name : known)
            {
                list += (list.empty() ? "" : ", ") + std::string(name);
            }
            fail(item.key(), "is not a known setting (known: " + list + ")");
        }
    }
}

} // namespace tensorrt_llm::executor::sim
