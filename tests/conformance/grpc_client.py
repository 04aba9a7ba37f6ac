"""Drives a running `trtllm serve` through the upstream smg-grpc-proto Python stubs, on any engine.

Usage: grpc_client.py HOST:PORT MAX_INPUT_LEN VOCAB_SIZE PROMPT_IDS
(PROMPT_IDS comma-separated). Prints one line per check; exits non-zero on the first failure.
"""

import hashlib
import io
import sys
import zipfile

import grpc
from smg_grpc_proto.generated import common_pb2
from smg_grpc_proto.generated import trtllm_service_pb2 as pb
from smg_grpc_proto.generated import trtllm_service_pb2_grpc as pb_grpc


def request(request_id, prompt, max_tokens, streaming):
    return pb.GenerateRequest(
        request_id=request_id,
        tokenized=pb.TokenizedInput(input_token_ids=prompt),
        max_tokens=max_tokens,
        streaming=streaming,
        ignore_eos=True,
    )


def check(condition, what):
    if not condition:
        print(f"FAIL {what}")
        sys.exit(1)
    print(f"ok   {what}")


def kinds(responses):
    return [r.WhichOneof("response") for r in responses]


def main():
    addr, max_input_len, vocab_size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    prompt = [int(t) for t in sys.argv[4].split(",")]
    stub = pb_grpc.TrtllmServiceStub(grpc.insecure_channel(addr))

    check(stub.HealthCheck(pb.HealthCheckRequest(), timeout=30).status == "OK", "HealthCheck says OK")
    model = stub.GetModelInfo(pb.GetModelInfoRequest(), timeout=30)
    check(model.max_input_len == max_input_len, f"GetModelInfo max_input_len {model.max_input_len}")
    check(model.vocab_size == vocab_size, f"GetModelInfo vocab_size {model.vocab_size}")

    streamed = list(stub.Generate(request("c-stream", prompt, 8, True), timeout=120))
    chunks = [r.chunk for r in streamed if r.WhichOneof("response") == "chunk"]
    completes = [r.complete for r in streamed if r.WhichOneof("response") == "complete"]
    tokens = [t for c in chunks for t in c.token_ids]
    check(len(completes) == 1 and kinds(streamed)[-1] == "complete", "streaming: exactly one complete, last")
    check(len(tokens) == 8 and list(completes[0].output_token_ids) == tokens, "streaming: 8 tokens, complete repeats them")
    check(completes[0].finish_reason == "length", "finish reason length")

    once = list(stub.Generate(request("c-once", prompt, 8, False), timeout=120))
    check(kinds(once) == ["complete"], "non-streaming: one complete")
    check(list(once[0].complete.output_token_ids) == tokens, "non-streaming gives the same greedy tokens")

    stream = stub.Generate(request("c-abort", prompt, 400, True), timeout=120)
    check(next(stream).WhichOneof("response") == "chunk", "a long request streams")
    check(stub.Abort(pb.AbortRequest(request_id="c-abort"), timeout=30).success, "Abort succeeds")
    rest = list(stream)
    check(rest and rest[-1].complete.finish_reason == "abort", "the aborted stream ends with finish reason abort")

    try:
        list(stub.Generate(request("c-long", [prompt[0]] * (max_input_len + 1), 4, True), timeout=60))
        check(False, "a too-long prompt is refused")
    except grpc.RpcError as e:
        check(e.code() == grpc.StatusCode.INVALID_ARGUMENT, f"a too-long prompt is INVALID_ARGUMENT ({e.code()})")

    data, digests = b"", []
    for chunk in stub.GetTokenizer(common_pb2.GetTokenizerRequest(), timeout=60):
        data += chunk.data
        digests.append(chunk.sha256)
    check(digests and digests[-1] == hashlib.sha256(data).hexdigest(), "GetTokenizer sha256 matches")
    check("tokenizer.json" in zipfile.ZipFile(io.BytesIO(data)).namelist(), "the tokenizer zip holds tokenizer.json")


if __name__ == "__main__":
    main()
