"""Sends speculative requests to a running trtllm server through the upstream smg-grpc-proto stubs.

Usage: speculative_client.py HOST:PORT MODE   (MODE: lookahead or medusa, the engine's mode)
Checks that GenerateComplete's spec_accepted_tokens / spec_draft_tokens agree with the token
stream (one chunk per decoding step: its accepted drafts + 1 token), streaming and not.
Prints "ok ..." per check and exits non-zero on the first failure.
"""

import sys

import grpc
from smg_grpc_proto.generated import trtllm_service_pb2 as pb
from smg_grpc_proto.generated import trtllm_service_pb2_grpc as pb_grpc

MAX_TOKENS = 40


def check(condition, what):
    if not condition:
        print(f"FAIL {what}")
        sys.exit(1)
    print(f"ok   {what}")


def request(request_id, mode, streaming, prompt):
    req = pb.GenerateRequest(
        request_id=request_id,
        tokenized=pb.TokenizedInput(input_token_ids=prompt),
        max_tokens=MAX_TOKENS,
        streaming=streaming,
    )
    if mode == "lookahead":
        req.lookahead_config.CopyFrom(
            pb.LookaheadConfig(max_window_size=4, max_ngram_size=3, max_verification_set_size=4)
        )
    return req


def run(stub, req):
    chunks, completes = [], []
    for response in stub.Generate(req, timeout=60):
        kind = response.WhichOneof("response")
        check(response.request_id == req.request_id, f"{req.request_id}: the response echoes the request id")
        (chunks if kind == "chunk" else completes).append(getattr(response, kind))
    return chunks, completes


def main():
    addr, mode = sys.argv[1], sys.argv[2]
    stub = pb_grpc.TrtllmServiceStub(grpc.insecure_channel(addr))
    for prompt in ([5, 6, 7], [11, 12, 13, 14]):
        name = f"{mode}-{prompt[0]}"
        chunks, completes = run(stub, request(f"{name}-s", mode, True, prompt))
        check(len(completes) == 1, f"{name}: one complete")
        done = completes[0]
        streamed = [t for c in chunks for t in c.token_ids]
        check(streamed == list(done.output_token_ids), f"{name}: the complete carries the streamed tokens")
        check(done.completion_tokens == len(streamed) == MAX_TOKENS, f"{name}: {MAX_TOKENS} tokens")
        check(done.finish_reason == "length", f"{name}: finish reason length ({done.finish_reason!r})")
        check(0 < done.spec_accepted_tokens <= done.spec_draft_tokens,
              f"{name}: {done.spec_accepted_tokens} of {done.spec_draft_tokens} drafts accepted")
        check(len(chunks) + done.spec_accepted_tokens == done.completion_tokens,
              f"{name}: {len(chunks)} steps + {done.spec_accepted_tokens} accepted = {done.completion_tokens} tokens")
        check(any(len(c.token_ids) > 1 for c in chunks), f"{name}: multi-token chunks")
        running = 0
        for c in chunks:
            running += len(c.token_ids)
            check(c.completion_tokens == running, f"{name}: chunk running count {running}")

        _, completes = run(stub, request(f"{name}-n", mode, False, prompt))
        check(len(completes) == 1, f"{name} non-streaming: one complete")
        whole = completes[0]
        check(list(whole.output_token_ids) == streamed, f"{name} non-streaming: the same tokens")
        check((whole.spec_accepted_tokens, whole.spec_draft_tokens) == (done.spec_accepted_tokens, done.spec_draft_tokens),
              f"{name} non-streaming: the same acceptance counts")
    print("done")


if __name__ == "__main__":
    main()
