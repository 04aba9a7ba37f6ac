"""Streams one generation from a running `trtllm serve` with the smg-grpc-proto stubs.

    pip install smg-grpc-proto grpcio
    python examples/python_client.py 127.0.0.1:50051
"""

import sys

import grpc
from smg_grpc_proto.generated import trtllm_service_pb2 as pb
from smg_grpc_proto.generated import trtllm_service_pb2_grpc as pb_grpc

target = sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1:50051"
stub = pb_grpc.TrtllmServiceStub(grpc.insecure_channel(target))
print(stub.HealthCheck(pb.HealthCheckRequest()).status)
request = pb.GenerateRequest(
    request_id="py-example",
    tokenized=pb.TokenizedInput(input_token_ids=[1, 2, 3, 4]),
    max_tokens=16,
    streaming=True,
)
for response in stub.Generate(request):
    if response.WhichOneof("response") == "chunk":
        print("chunk", list(response.chunk.token_ids))
    else:
        print("complete", response.complete.finish_reason, response.complete.completion_tokens, "tokens")
