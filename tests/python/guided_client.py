"""Sends guided requests to a running trtllm server through the upstream smg-grpc-proto stubs.

Usage: guided_client.py HOST:PORT CASES.json
CASES.json is a list of {"name", "guide_type", "guide"} (guide_type: the protocol's enum name).
Prints one JSON line per output ({"case", "seed", "index", "tokens", "finish"}), then "ok ..." lines
for the error checks, and exits non-zero on the first failure.
"""

import json
import sys
from concurrent.futures import ThreadPoolExecutor

import grpc
from smg_grpc_proto.generated import trtllm_service_pb2 as pb
from smg_grpc_proto.generated import trtllm_service_pb2_grpc as pb_grpc

SEEDS = 6


def guided(request_id, guide_type, guide, seed, streaming, n=1):
    return pb.GenerateRequest(
        request_id=request_id,
        tokenized=pb.TokenizedInput(input_token_ids=[5, 6, 7]),
        max_tokens=200,
        streaming=streaming,
        sampling_config=pb.SamplingConfig(seed=seed, num_return_sequences=n),
        guided_decoding=pb.GuidedDecodingParams(
            guide_type=pb.GuidedDecodingParams.GuideType.Value(guide_type), guide=guide
        ),
    )


def check(condition, what):
    if not condition:
        print(f"FAIL {what}")
        sys.exit(1)
    print(f"ok   {what}")


def outputs(stub, request):
    completes = [r.complete for r in stub.Generate(request, timeout=60) if r.WhichOneof("response") == "complete"]
    return completes


def main():
    channel = grpc.insecure_channel(sys.argv[1])
    stub = pb_grpc.TrtllmServiceStub(channel)
    with open(sys.argv[2]) as f:
        cases = json.load(f)

    for case in cases:
        for seed in range(SEEDS):
            streaming = seed % 2 == 0
            n = 2 if seed % 3 == 0 else 1
            completes = outputs(stub, guided(f"{case['name']}-{seed}", case["guide_type"], case["guide"], seed, streaming, n))
            check(len(completes) == n, f"{case['name']} seed {seed}: {n} complete(s)")
            for c in completes:
                line = {"case": case["name"], "seed": seed, "index": c.sequence_index,
                        "tokens": list(c.output_token_ids), "finish": c.finish_reason}
                print(json.dumps(line))

    # Malformed guides fail with INVALID_ARGUMENT while an unguided request runs alongside.
    bad = [
        ("GUIDE_TYPE_JSON_SCHEMA", "{not json", "json_schema"),
        ("GUIDE_TYPE_REGEX", "", "regex"),
        ("GUIDE_TYPE_UNSPECIFIED", "x", "guide_type"),
    ]
    plain = pb.GenerateRequest(request_id="plain", tokenized=pb.TokenizedInput(input_token_ids=[5, 6, 7]),
                               max_tokens=20, streaming=True, ignore_eos=True)
    with ThreadPoolExecutor(max_workers=2) as pool:
        running = pool.submit(lambda: list(stub.Generate(plain, timeout=60)))
        for guide_type, guide, field in bad:
            try:
                list(stub.Generate(guided(f"bad-{field}", guide_type, guide, 1, False), timeout=30))
                check(False, f"malformed {field} is refused")
            except grpc.RpcError as e:
                check(e.code() == grpc.StatusCode.INVALID_ARGUMENT and field in e.details(),
                      f"malformed {field}: INVALID_ARGUMENT naming it ({e.details()})")
        responses = running.result()
        tokens = [t for r in responses if r.WhichOneof("response") == "chunk" for t in r.chunk.token_ids]
        check(len(tokens) == 20, "the unguided request alongside completes untouched")


if __name__ == "__main__":
    main()
