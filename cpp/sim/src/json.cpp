// Strict recursive-descent JSON parser producing the Json document model (see json.h).
#include "json.h"

#include <cmath>
#include <limits>
#include <locale>
#include <sstream>
#include <stdexcept>

namespace tensorrt_llm::executor::sim
{

char const* describeType(Json::Type type)
{
    switch (type)
    {
    case Json::Type::kNull: return "null";
    case Json::Type::kBool: return "a boolean";
    case Json::Type::kNumber: return "a number";
    case Json::Type::kString: return "a string";
    case Json::Type::kArray: return "an array";
    case Json::Type::kObject: return "an object";
    }
    return "an unknown value";
}

namespace
{

void typeError(char const* wanted, Json::Type got)
{
    throw std::runtime_error(std::string("JSON value is ") + describeType(got) + ", expected " + wanted);
}

/// Nesting limit, so that hostile input cannot exhaust the stack.
constexpr int kMaxDepth = 256;

class Parser
{
public:
    explicit Parser(std::string_view text)
        : mText(text)
    {
    }

    Json parseDocument()
    {
        // A UTF-8 byte order mark is tolerated at the very start (some editors write one).
        if (mText.substr(0, 3) == "\xEF\xBB\xBF")
        {
            mPos = 3;
        }
        skipWhitespace();
        Json value = parseValue(0);
        skipWhitespace();
        if (mPos != mText.size())
        {
            fail("unexpected content after the JSON value");
        }
        return value;
    }

private:
    [[noreturn]] void fail(std::string const& what) const { failAt(mPos, what); }

    [[noreturn]] void failAt(std::size_t offset, std::string const& what) const
    {
        throw std::runtime_error("JSON parse error at byte " + std::to_string(offset) + ": " + what);
    }

    [[nodiscard]] bool atEnd() const { return mPos >= mText.size(); }

    [[nodiscard]] char peek() const { return atEnd() ? '\0' : mText[mPos]; }

    void skipWhitespace()
    {
        while (!atEnd())
        {
            char const c = mText[mPos];
            if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
            {
                return;
            }
            ++mPos;
        }
    }

    void expectLiteral(std::string_view literal)
    {
        if (mText.substr(mPos, literal.size()) != literal)
        {
            fail("invalid literal (expected '" + std::string(literal) + "')");
        }
        mPos += literal.size();
    }

    Json parseValue(int depth)
    {
        if (depth > kMaxDepth)
        {
            fail("nesting deeper than " + std::to_string(kMaxDepth) + " levels");
        }
        if (atEnd())
        {
            fail("unexpected end of input, expected a value");
        }
        switch (peek())
        {
        case '{': return parseObject(depth);
        case '[': return parseArray(depth);
        case '"': return Json::makeString(parseString());
        case 't': expectLiteral("true"); return Json::makeBool(true);
        case 'f': expectLiteral("false"); return Json::makeBool(false);
        case 'n': expectLiteral("null"); return Json();
        default: break;
        }
        if (peek() == '-' || (peek() >= '0' && peek() <= '9'))
        {
            return parseNumber();
        }
        fail(std::string("unexpected character '") + peek() + "', expected a value");
    }

    Json parseObject(int depth)
    {
        ++mPos; // '{'
        Json::Object members;
        skipWhitespace();
        if (peek() == '}')
        {
            ++mPos;
            return Json::makeObject(std::move(members));
        }
        while (true)
        {
            skipWhitespace();
            if (peek() != '"')
            {
                fail(atEnd() ? "unexpected end of input in object" : "expected a string key in object");
            }
            std::string key = parseString();
            skipWhitespace();
            if (peek() != ':')
            {
                fail("expected ':' after object key \"" + key + "\"");
            }
            ++mPos;
            skipWhitespace();
            Json value = parseValue(depth + 1);
            members.emplace_back(std::move(key), std::move(value));
            skipWhitespace();
            if (peek() == ',')
            {
                ++mPos;
                continue;
            }
            if (peek() == '}')
            {
                ++mPos;
                return Json::makeObject(std::move(members));
            }
            fail(atEnd() ? "unexpected end of input in object" : "expected ',' or '}' in object");
        }
    }

    Json parseArray(int depth)
    {
        ++mPos; // '['
        Json::Array items;
        skipWhitespace();
        if (peek() == ']')
        {
            ++mPos;
            return Json::makeArray(std::move(items));
        }
        while (true)
        {
            skipWhitespace();
            items.push_back(parseValue(depth + 1));
            skipWhitespace();
            if (peek() == ',')
            {
                ++mPos;
                continue;
            }
            if (peek() == ']')
            {
                ++mPos;
                return Json::makeArray(std::move(items));
            }
            fail(atEnd() ? "unexpected end of input in array" : "expected ',' or ']' in array");
        }
    }

    unsigned parseHex4()
    {
        if (mPos + 4 > mText.size())
        {
            fail("truncated \\u escape");
        }
        unsigned value = 0;
        for (int i = 0; i < 4; ++i)
        {
            char const c = mText[mPos++];
            value <<= 4U;
            if (c >= '0' && c <= '9')
            {
                value |= static_cast<unsigned>(c - '0');
            }
            else if (c >= 'a' && c <= 'f')
            {
                value |= static_cast<unsigned>(c - 'a' + 10);
            }
            else if (c >= 'A' && c <= 'F')
            {
                value |= static_cast<unsigned>(c - 'A' + 10);
            }
            else
            {
                failAt(mPos - 1, "invalid hex digit in \\u escape");
            }
        }
        return value;
    }

    static void appendUtf8(std::string& out, unsigned codePoint)
    {
        if (codePoint < 0x80)
        {
            out.push_back(static_cast<char>(codePoint));
        }
        else if (codePoint < 0x800)
        {
            out.push_back(static_cast<char>(0xC0 | (codePoint >> 6)));
            out.push_back(static_cast<char>(0x80 | (codePoint & 0x3F)));
        }
        else if (codePoint < 0x10000)
        {
            out.push_back(static_cast<char>(0xE0 | (codePoint >> 12)));
            out.push_back(static_cast<char>(0x80 | ((codePoint >> 6) & 0x3F)));
            out.push_back(static_cast<char>(0x80 | (codePoint & 0x3F)));
        }
        else
        {
            out.push_back(static_cast<char>(0xF0 | (codePoint >> 18)));
            out.push_back(static_cast<char>(0x80 | ((codePoint >> 12) & 0x3F)));
            out.push_back(static_cast<char>(0x80 | ((codePoint >> 6) & 0x3F)));
            out.push_back(static_cast<char>(0x80 | (codePoint & 0x3F)));
        }
    }

    std::string parseString()
    {
        std::size_t const start = mPos;
        ++mPos; // opening quote
        std::string out;
        while (true)
        {
            if (atEnd())
            {
                failAt(start, "unterminated string");
            }
            char const c = mText[mPos];
            if (c == '"')
            {
                ++mPos;
                return out;
            }
            if (static_cast<unsigned char>(c) < 0x20)
            {
                fail("unescaped control character in string");
            }
            if (c != '\\')
            {
                out.push_back(c);
                ++mPos;
                continue;
            }
            ++mPos; // backslash
            if (atEnd())
            {
                failAt(start, "unterminated string");
            }
            char const escape = mText[mPos++];
            switch (escape)
            {
            case '"': out.push_back('"'); break;
            case '\\': out.push_back('\\'); break;
            case '/': out.push_back('/'); break;
            case 'b': out.push_back('\b'); break;
            case 'f': out.push_back('\f'); break;
            case 'n': out.push_back('\n'); break;
            case 'r': out.push_back('\r'); break;
            case 't': out.push_back('\t'); break;
            case 'u': out += parseUnicodeEscape(); break;
            default: failAt(mPos - 1, std::string("invalid escape '\\") + escape + "' in string");
            }
        }
    }

    /// Decodes the code point of a \u escape (the "\u" already consumed), joining surrogate pairs.
    std::string parseUnicodeEscape()
    {
        std::size_t const escapeStart = mPos - 2;
        unsigned codePoint = parseHex4();
        if (codePoint >= 0xDC00 && codePoint <= 0xDFFF)
        {
            failAt(escapeStart, "unpaired low surrogate in \\u escape");
        }
        if (codePoint >= 0xD800 && codePoint <= 0xDBFF)
        {
            if (mText.substr(mPos, 2) != "\\u")
            {
                failAt(escapeStart, "high surrogate in \\u escape is not followed by a low surrogate");
            }
            mPos += 2;
            unsigned const low = parseHex4();
            if (low < 0xDC00 || low > 0xDFFF)
            {
                failAt(escapeStart, "high surrogate in \\u escape is not followed by a low surrogate");
            }
            codePoint = 0x10000 + ((codePoint - 0xD800) << 10) + (low - 0xDC00);
        }
        std::string out;
        appendUtf8(out, codePoint);
        return out;
    }

    Json parseNumber()
    {
        std::size_t const start = mPos;
        auto isDigit = [this]() { return !atEnd() && peek() >= '0' && peek() <= '9'; };
        if (peek() == '-')
        {
            ++mPos;
        }
        if (!isDigit())
        {
            fail("expected a digit in number");
        }
        if (peek() == '0')
        {
            ++mPos;
            if (isDigit())
            {
                fail("leading zeros are not allowed in numbers");
            }
        }
        while (isDigit())
        {
            ++mPos;
        }
        bool integral = true;
        if (peek() == '.')
        {
            integral = false;
            ++mPos;
            if (!isDigit())
            {
                fail("expected a digit after the decimal point");
            }
            while (isDigit())
            {
                ++mPos;
            }
        }
        if (peek() == 'e' || peek() == 'E')
        {
            integral = false;
            ++mPos;
            if (peek() == '+' || peek() == '-')
            {
                ++mPos;
            }
            if (!isDigit())
            {
                fail("expected a digit in the exponent");
            }
            while (isDigit())
            {
                ++mPos;
            }
        }
        std::string const literal(mText.substr(start, mPos - start));
        // The classic locale keeps '.' as the decimal point whatever the host program set.
        std::istringstream stream(literal);
        stream.imbue(std::locale::classic());
        double value = 0.0;
        stream >> value;
        if (stream.fail() || !std::isfinite(value))
        {
            failAt(start, "number '" + literal + "' is out of range");
        }
        std::optional<std::int64_t> integer;
        if (integral)
        {
            std::istringstream intStream(literal);
            intStream.imbue(std::locale::classic());
            std::int64_t exact = 0;
            intStream >> exact;
            if (!intStream.fail())
            {
                integer = exact;
            }
        }
        return Json::makeNumber(value, integer);
    }

    std::string_view mText;
    std::size_t mPos{0};
};

} // namespace

Json Json::makeBool(bool value)
{
    Json json;
    json.mType = Type::kBool;
    json.mBool = value;
    return json;
}

Json Json::makeNumber(double value, std::optional<std::int64_t> integer)
{
    Json json;
    json.mType = Type::kNumber;
    json.mNumber = value;
    json.mInteger = integer;
    return json;
}

Json Json::makeString(std::string value)
{
    Json json;
    json.mType = Type::kString;
    json.mString = std::move(value);
    return json;
}

Json Json::makeArray(Array items)
{
    Json json;
    json.mType = Type::kArray;
    json.mArray = std::move(items);
    return json;
}

Json Json::makeObject(Object members)
{
    Json json;
    json.mType = Type::kObject;
    json.mObject = std::move(members);
    return json;
}

bool Json::asBool() const
{
    if (!isBool())
    {
        typeError("a boolean", mType);
    }
    return mBool;
}

double Json::asDouble() const
{
    if (!isNumber())
    {
        typeError("a number", mType);
    }
    return mNumber;
}

std::int64_t Json::asInteger() const
{
    if (!isInteger())
    {
        typeError("an integer", mType);
    }
    return *mInteger;
}

std::string const& Json::asString() const
{
    if (!isString())
    {
        typeError("a string", mType);
    }
    return mString;
}

Json::Array const& Json::asArray() const
{
    if (!isArray())
    {
        typeError("an array", mType);
    }
    return mArray;
}

Json::Object const& Json::asObject() const
{
    if (!isObject())
    {
        typeError("an object", mType);
    }
    return mObject;
}

Json const* Json::find(std::string_view key) const
{
    if (!isObject())
    {
        return nullptr;
    }
    for (auto it = mObject.rbegin(); it != mObject.rend(); ++it)
    {
        if (it->first == key)
        {
            return &it->second;
        }
    }
    return nullptr;
}

Json Json::parse(std::string_view text)
{
    return Parser(text).parseDocument();
}

JsonFields::JsonFields(Json const& value, std::string file, std::string path)
    : mValue(&value)
    , mFile(std::move(file))
    , mPath(std::move(path))
{
    if (!value.isObject())
    {
        throw std::runtime_error(mFile + ": " + (mPath.empty() ? std::string("the document") : mPath)
                                 + " must be an object, got " + describeType(value.type()));
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
    Json const* value = mValue->find(key);
    return (value == nullptr || value->isNull()) ? nullptr : value;
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
    if (!value->isInteger())
    {
        fail(key, std::string("must be an integer, got ")
                      + (value->isNumber() ? "a non-integral number" : describeType(value->type())));
    }
    std::int64_t const result = value->asInteger();
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
    if (!value->isNumber())
    {
        fail(key, std::string("must be a number, got ") + describeType(value->type()));
    }
    double const result = value->asDouble();
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
    if (!value->isBool())
    {
        fail(key, std::string("must be a boolean, got ") + describeType(value->type()));
    }
    return value->asBool();
}

std::optional<std::string> JsonFields::string(std::string_view key) const
{
    Json const* value = member(key);
    if (value == nullptr)
    {
        return std::nullopt;
    }
    if (!value->isString())
    {
        fail(key, std::string("must be a string, got ") + describeType(value->type()));
    }
    return value->asString();
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
    for (auto const& [key, value] : mValue->asObject())
    {
        bool found = false;
        for (auto const& name : known)
        {
            found = found || name == key;
        }
        if (!found)
        {
            std::string list;
            for (auto const& name : known)
            {
                list += (list.empty() ? "" : ", ") + std::string(name);
            }
            fail(key, "is not a known setting (known: " + list + ")");
        }
    }
}

} // namespace tensorrt_llm::executor::sim
