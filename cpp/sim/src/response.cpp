// The simulated Response: a request's result or its error message.
#include "tensorrt_llm/executor/executor.h"

#include "value_checks.h"

#include <stdexcept>
#include <utility>

namespace tensorrt_llm::executor
{

namespace
{

using sim::check;

} // namespace

Response::Response(IdType requestId, std::string errorMsg, std::optional<IdType> clientId)
    : mRequestId(requestId)
    , mClientId(clientId)
    , mErrorMsg(std::move(errorMsg))
{
    check(!mErrorMsg->empty(), "Error message should not be empty");
}

Response::Response(IdType requestId, Result Result, std::optional<IdType> clientId)
    : mRequestId(requestId)
    , mClientId(clientId)
    , mResult(std::move(Result))
{
}

IdType Response::getRequestId() const
{
    return mRequestId;
}

std::optional<IdType> Response::getClientId() const
{
    return mClientId;
}

bool Response::hasError() const
{
    return mErrorMsg.has_value();
}

std::string const& Response::getErrorMsg() const
{
    if (!mErrorMsg)
    {
        throw std::runtime_error("Cannot get the error message for a response without error");
    }
    return *mErrorMsg;
}

Result const& Response::getResult() const
{
    if (!mResult)
    {
        throw std::runtime_error("Cannot get the result for a response with an error: " + *mErrorMsg);
    }
    return *mResult;
}

} // namespace tensorrt_llm::executor
