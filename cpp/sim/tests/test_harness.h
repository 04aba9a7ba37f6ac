// A minimal test harness for the simulator's C++ test programs (no framework): CHECK macros that record
// failures, REQUIRE that aborts a test, and a runner that prints "N passed, N failed".
#pragma once

#include <chrono>
#include <cstdio>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace test
{

struct Failure : std::runtime_error
{
    using std::runtime_error::runtime_error;
};

inline int& checksFailed()
{
    static int count = 0;
    return count;
}

inline void reportFailure(char const* file, int line, std::string const& what)
{
    ++checksFailed();
    std::printf("    FAILED %s:%d: %s\n", file, line, what.c_str());
}

/// Runs `body` and checks that it throws a std::exception whose what() contains `needle`.
inline bool throwsWith(std::function<void()> const& body, std::string const& needle)
{
    try
    {
        body();
    }
    catch (std::exception const& e)
    {
        if (std::string(e.what()).find(needle) != std::string::npos)
        {
            return true;
        }
        std::printf("    (exception text was: %s)\n", e.what());
        return false;
    }
    std::printf("    (nothing was thrown)\n");
    return false;
}

struct Case
{
    char const* name;
    void (*body)();
};

/// Runs every case; returns the process exit code.
inline int runAll(std::vector<Case> const& cases)
{
    int passed = 0;
    int failed = 0;
    auto const start = std::chrono::steady_clock::now();
    for (auto const& testCase : cases)
    {
        checksFailed() = 0;
        auto const caseStart = std::chrono::steady_clock::now();
        try
        {
            testCase.body();
        }
        catch (Failure const&)
        {
        }
        catch (std::exception const& e)
        {
            reportFailure(__FILE__, __LINE__, std::string("unexpected exception: ") + e.what());
        }
        auto const ms = std::chrono::duration_cast<std::chrono::milliseconds>(
            std::chrono::steady_clock::now() - caseStart)
                            .count();
        bool const ok = checksFailed() == 0;
        std::printf("%s %s (%lld ms)\n", ok ? "ok  " : "FAIL", testCase.name, static_cast<long long>(ms));
        (ok ? passed : failed) += 1;
    }
    auto const ms
        = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
    std::printf("%d passed, %d failed (%lld ms)\n", passed, failed, static_cast<long long>(ms));
    return failed == 0 ? 0 : 1;
}

} // namespace test

#define CHECK(condition)                                                                                               \
    do                                                                                                                 \
    {                                                                                                                  \
        if (!(condition))                                                                                              \
        {                                                                                                              \
            test::reportFailure(__FILE__, __LINE__, #condition);                                                       \
        }                                                                                                              \
    } while (false)

/// Checks that |actual - expected| <= tolerance, printing both values otherwise.
#define CHECK_NEAR(actual, expected, tolerance)                                                                        \
    do                                                                                                                 \
    {                                                                                                                  \
        double const actualValue_ = (actual);                                                                          \
        double const expectedValue_ = (expected);                                                                      \
        if (!(actualValue_ - expectedValue_ <= (tolerance) && expectedValue_ - actualValue_ <= (tolerance)))           \
        {                                                                                                              \
            std::ostringstream message_;                                                                               \
            message_ << #actual << " ~ " << #expected << " (got " << actualValue_ << ", want " << expectedValue_        \
                     << " +- " << (tolerance) << ")";                                                                  \
            test::reportFailure(__FILE__, __LINE__, message_.str());                                                   \
        }                                                                                                              \
    } while (false)

#define REQUIRE(condition)                                                                                             \
    do                                                                                                                 \
    {                                                                                                                  \
        if (!(condition))                                                                                              \
        {                                                                                                              \
            test::reportFailure(__FILE__, __LINE__, #condition);                                                       \
            throw test::Failure("requirement failed");                                                                 \
        }                                                                                                              \
    } while (false)
