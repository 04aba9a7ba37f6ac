"""Drives a running trtllm server through the upstream smg-grpc-proto Python stubs.

Usage: interop_client.py HOST:PORT
Prints one line per check and exits non-zero on the first failure.
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
        output_config=pb.OutputConfig(return_perf_metrics=True),
    )


def check(condition, what):
    if not condition:
        print(f"FAIL {what}")
        sys.exit(1)
    print(f"ok   {what}")


def main():
    channel = grpc.insecure_channel(sys.argv[1])
    stub = pb_grpc.TrtllmServiceStub(channel)

    health = stub.HealthCheck(pb.HealthCheckRequest(), timeout=10)
    check(health.status == "OK", "HealthCheck says OK")

    model = stub.GetModelInfo(pb.GetModelInfoRequest(), timeout=10)
    check(model.max_input_len > 0 and model.vocab_size > 0 and model.model_id, "GetModelInfo has the engine limits")

    info = stub.GetServerInfo(pb.GetServerInfoRequest(), timeout=10)
    check(info.backend == "tensorrt" and info.world_size == 1, "GetServerInfo names the backend and sizes")

    responses = list(stub.Generate(request("py-stream", [5, 6, 7], 10, True), timeout=30))
    chunks = [r.chunk for r in responses if r.WhichOneof("response") == "chunk"]
    completes = [r.complete for r in responses if r.WhichOneof("response") == "complete"]
    tokens = [t for c in chunks for t in c.token_ids]
    check(len(tokens) == 10 and len(completes) == 1, "streaming Generate: 10 tokens in chunks, one complete")
    check(list(completes[0].output_token_ids) == tokens, "complete carries the streamed tokens")
    check(completes[0].finish_reason == "length" and completes[0].HasField("perf_metrics"), "finish reason and perf")
    check(all(r.request_id == "py-stream" for r in responses), "request_id echoed in every response")

    responses = list(stub.Generate(request("py-once", [5, 6, 7], 10, False), timeout=30))
    check(len(responses) == 1 and responses[0].WhichOneof("response") == "complete", "non-streaming Generate")
    check(list(responses[0].complete.output_token_ids) == tokens, "non-streaming gives the same tokens")

    stream = stub.Generate(request("py-abort", [1, 2], 2000, True), timeout=60)
    first = next(stream)
    check(first.WhichOneof("response") == "chunk", "long request streams")
    aborted = stub.Abort(pb.AbortRequest(request_id="py-abort"), timeout=10)
    check(aborted.success, "Abort succeeds for a live request")
    rest = list(stream)
    check(rest and rest[-1].complete.finish_reason == "abort", "aborted stream ends with finish reason abort")
    unknown = stub.Abort(pb.AbortRequest(request_id="py-nope"), timeout=10)
    check(not unknown.success, "Abort of an unknown id reports failure")

    data = b""
    digests = []
    for chunk in stub.GetTokenizer(common_pb2.GetTokenizerRequest(), timeout=30):
        data += chunk.data
        digests.append(chunk.sha256)
    check(digests[-1] == hashlib.sha256(data).hexdigest(), "GetTokenizer sha256 matches the zip")
    names = zipfile.ZipFile(io.BytesIO(data)).namelist()
    check("tokenizer.json" in names, "GetTokenizer zip opens and holds tokenizer.json")

    kv = stub.SubscribeKvEvents(
        common_pb2.SubscribeKvEventsRequest(load_records_before_first_batch=True), timeout=60
    )
    first = next(kv)
    check(first.load.load_only and not first.events, "SubscribeKvEvents starts with a load-only batch")
    prompt = list(range(1, 200))
    list(stub.Generate(request("py-kv", prompt, 1, False), timeout=30))
    stored = None
    while stored is None:
        batch = next(kv)
        check(batch.HasField("load"), "every KvEventBatch carries an EngineLoad")
        for event in batch.events:
            if event.WhichOneof("data") == "stored":
                stored = (batch, event.stored)
                break
    batch, blocks = stored
    check(batch.sequence_number >= 1 and not batch.load.load_only, "an event batch is numbered and not load-only")
    size = blocks.blocks[0].block_size
    check(size > 0 and list(blocks.blocks[0].token_ids) == prompt[:size], "stored block holds the prompt's tokens")
    check(not blocks.HasField("parent_block_hash"), "the first stored block has no parent")
    kv.cancel()

    try:
        list(stub.Generate(request("py-bad", [], 4, True), timeout=10))
        check(False, "empty prompt rejected")
    except grpc.RpcError as e:
        check(e.code() == grpc.StatusCode.INVALID_ARGUMENT, "empty prompt gives INVALID_ARGUMENT")


if __name__ == "__main__":
    main()
